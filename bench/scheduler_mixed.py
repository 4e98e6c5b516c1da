"""Mixed workload on a 2-"GPU" cluster: makespan, high-priority queueing delay, GPU-slot use vs FIFO.

Run ``python bench/scheduler_mixed.py`` (``--quick``: shorter steps). Prints a table and writes
``bench/results/scheduler_mixed.json``.

Cluster: an embedded ``LocalCluster`` of 2 workers x 2 threads, each worker offering
``resources={"GPU": 1}``, so two GPU jobs run at a time and CPU-only jobs run beside them.

Workload: 20 jobs from 3 users (alice, bob, carol), built-in kinds only, submitted in three
waves (at 0 s, 0.25 and 0.75 of the GPU work's ideal makespan), the urgent jobs arriving while
long GPU jobs hold both slots:

=========  =====  ====  ===========================  ========  ==========
class      jobs   kind  resources                    steps     priority
=========  =====  ====  ===========================  ========  ==========
train      4      steps ``GPU: 1``                   20        0
long       2      steps ``GPU: 1``                   40        0
eval       4      steps ``GPU: 1``                   6         5
urgent     4      steps ``GPU: 1``                   4         10
cpu-steps  3      steps none                         10        1
cpu-noop   3      noop  none                         -         0
=========  =====  ====  ===========================  ========  ==========

Each step sleeps ``--step-seconds`` (0.05; quick 0.02). Variants, run one after the other on the
same cluster:

* ``ours``: the gym-tinker scheduler, priorities as above (lower-priority GPU jobs are preempted
  at a step boundary and resume from their checkpoint).
* ``ours FIFO``: the same jobs, every priority 0.
* ``raw Dask FIFO``: ``client.submit(work, resources=..., pure=False)`` in submission order, the
  body a plain sleep loop of the same length.
* ``raw Dask priority=``: the same with Dask's ``priority=`` (orders queued tasks; never preempts).

Measured: makespan (first submit to last finish), the urgent jobs' queueing delay (submit to the
body's first start: median and max), the eval jobs' too, median turnaround of all jobs, and
GPU-slot utilisation (seconds a GPU job's body was running, summed, over 2 x makespan).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _report import machine, write_report

RESULTS = Path(__file__).parent / "results" / "scheduler_mixed.json"
GPUS = 2
USERS = ("alice", "bob", "carol")


@dataclass(frozen=True)
class Job:
    cls: str
    user: str
    kind: str
    gpu: bool
    steps: int
    priority: int
    wave: int


def workload() -> list[Job]:
    """The 20 jobs in submission order (three waves)."""
    classes = [
        # class, count, kind, gpu, steps, priority, wave
        ("train", 4, "steps", True, 20, 0, 0),
        ("long", 2, "steps", True, 40, 0, 0),
        ("cpu-noop", 2, "noop", False, 0, 0, 0),
        ("cpu-steps", 2, "steps", False, 10, 1, 0),
        ("eval", 2, "steps", True, 6, 5, 1),
        ("urgent", 2, "steps", True, 4, 10, 1),
        ("eval", 2, "steps", True, 6, 5, 2),
        ("urgent", 2, "steps", True, 4, 10, 2),
        ("cpu-steps", 1, "steps", False, 10, 1, 2),
        ("cpu-noop", 1, "noop", False, 0, 0, 2),
    ]
    jobs = []
    for cls, count, kind, gpu, steps, priority, wave in classes:
        for _ in range(count):
            jobs.append(Job(cls, USERS[len(jobs) % len(USERS)], kind, gpu, steps, priority, wave))
    return jobs


def wave_times(jobs: list[Job], step_seconds: float) -> list[float]:
    """Submission offsets of the waves: 0, 1/4 and 3/4 of the GPU work's ideal makespan."""
    ideal = sum(job.steps for job in jobs if job.gpu) * step_seconds / GPUS
    return [0.0, 0.25 * ideal, 0.75 * ideal]


def sleep_steps(steps: int, step_seconds: float) -> tuple[float, float]:
    """Raw Dask body: ``steps`` sleeps; returns its own (start, end) wall-clock times."""
    start = time.time()
    for _ in range(steps):
        time.sleep(step_seconds)
    return start, time.time()


# --- running a variant ------------------------------------------------------------------------


def submit_in_waves(jobs: list[Job], offsets: list[float], submit: Any) -> list[tuple[Any, float]]:
    """Calls ``submit(job)`` for each job at its wave's offset; returns (handle, submit time) pairs."""
    began = time.perf_counter()
    out = []
    for wave, offset in enumerate(offsets):
        delay = began + offset - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        for job in jobs:
            if job.wave == wave:
                submitted = time.time()
                out.append((submit(job), submitted))
    return out


def run_ours(client: Any, jobs: list[Job], step_seconds: float, fifo: bool) -> list[dict[str, Any]]:
    def submit(job: Job) -> Any:
        spec: dict[str, Any] = {
            "kind": job.kind,
            "name": job.cls,
            "user": job.user,
            "priority": 0 if fifo else job.priority,
            "resources": {"GPU": 1} if job.gpu else {},
        }
        if job.kind == "steps":
            spec["params"] = {"steps": job.steps, "step_seconds": step_seconds}
        return client.submit(spec)

    handles = submit_in_waves(jobs, wave_times(jobs, step_seconds), submit)
    states = client.wait([h for h, _ in handles], timeout=600)
    bad = {job_id: state for job_id, state in states.items() if state != "succeeded"}
    if bad:
        raise RuntimeError(f"jobs did not succeed: {bad}")
    records = []
    for job, (handle, submitted) in zip(jobs_in_order(jobs), handles, strict=True):
        info = handle.info()
        starts = sorted(e["ts"] for e in client._call("events", job_id=handle.id, type="start")["events"])
        exits = sorted(t["ts"] for t in info["transitions"] if t["from_state"] == "running")
        busy = []
        for start in starts:
            end = next(ts for ts in exits if ts >= start)
            busy.append((start, end))
        records.append(record(job, submitted, busy, info["finished"], info["preemptions"]))
    return records


def run_raw(client: Any, jobs: list[Job], step_seconds: float, priorities: bool) -> list[dict[str, Any]]:
    dask = client.dask

    def submit(job: Job) -> Any:
        return dask.submit(
            sleep_steps,
            job.steps,
            step_seconds,
            resources={"GPU": 1} if job.gpu else None,
            priority=job.priority if priorities else 0,
            pure=False,
        )

    futures = submit_in_waves(jobs, wave_times(jobs, step_seconds), submit)
    results = dask.gather([f for f, _ in futures])
    return [
        record(job, submitted, [(start, end)], end, 0)
        for job, (_, submitted), (start, end) in zip(jobs_in_order(jobs), futures, results, strict=True)
    ]


def jobs_in_order(jobs: list[Job]) -> list[Job]:
    """The jobs in the order ``submit_in_waves`` submits them."""
    return [job for wave in sorted({j.wave for j in jobs}) for job in jobs if job.wave == wave]


def record(
    job: Job, submitted: float, busy: list[tuple[float, float]], finished: float, preemptions: int
) -> dict[str, Any]:
    return {
        "class": job.cls,
        "user": job.user,
        "gpu": job.gpu,
        "priority": job.priority,
        "submitted": submitted,
        "first_start": busy[0][0],
        "finished": finished,
        "busy_seconds": sum(end - start for start, end in busy),
        "attempts": len(busy),
        "preemptions": preemptions,
    }


def metrics(records: list[dict[str, Any]], jobs: list[Job], step_seconds: float) -> dict[str, Any]:
    t0 = min(r["submitted"] for r in records)
    makespan = max(r["finished"] for r in records) - t0

    def delays(cls: str) -> list[float]:
        return [r["first_start"] - r["submitted"] for r in records if r["class"] == cls]

    gpu_busy = sum(r["busy_seconds"] for r in records if r["gpu"])
    gpu_work = sum(job.steps for job in jobs if job.gpu) * step_seconds
    return {
        "makespan_s": makespan,
        "ideal_gpu_makespan_s": gpu_work / GPUS,
        "urgent_delay_median_s": statistics.median(delays("urgent")),
        "urgent_delay_max_s": max(delays("urgent")),
        "eval_delay_median_s": statistics.median(delays("eval")),
        "turnaround_median_s": statistics.median(r["finished"] - r["submitted"] for r in records),
        "gpu_slot_utilisation": gpu_busy / (GPUS * makespan),
        "gpu_useful_utilisation": gpu_work / (GPUS * makespan),
        "preemptions": sum(r["preemptions"] for r in records),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="0.02 s steps")
    parser.add_argument("--step-seconds", type=float, default=None, help="seconds per step (default 0.05)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    step_seconds = args.step_seconds or (0.02 if args.quick else 0.05)
    if step_seconds <= 0:
        parser.error(f"--step-seconds must be > 0, got {step_seconds}")
    from executors import connect

    jobs = workload()
    load_before = os.getloadavg()[0]
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory() as state,
        connect(n_workers=GPUS, threads_per_worker=2, state_dir=state, resources={"GPU": 1}) as client,
    ):
        client.submit({"kind": "noop"}).wait(timeout=60)  # warm up workers and imports
        client.dask.gather(client.dask.submit(sleep_steps, 1, 0.0, pure=False))
        variants = {
            "ours": lambda: run_ours(client, jobs, step_seconds, fifo=False),
            "ours FIFO": lambda: run_ours(client, jobs, step_seconds, fifo=True),
            "raw Dask FIFO": lambda: run_raw(client, jobs, step_seconds, priorities=False),
            "raw Dask priority=": lambda: run_raw(client, jobs, step_seconds, priorities=True),
        }
        records = {}
        for name, run in variants.items():
            records[name] = run()
            results[name] = metrics(records[name], jobs, step_seconds)

    columns = [
        ("makespan", "makespan_s", "{:.2f} s"),
        ("urgent delay med", "urgent_delay_median_s", "{:.3f} s"),
        ("urgent delay max", "urgent_delay_max_s", "{:.3f} s"),
        ("eval delay med", "eval_delay_median_s", "{:.3f} s"),
        ("turnaround med", "turnaround_median_s", "{:.2f} s"),
        ("GPU busy", "gpu_slot_utilisation", "{:.0%}"),
        ("GPU useful", "gpu_useful_utilisation", "{:.0%}"),
        ("preemptions", "preemptions", "{}"),
    ]
    print(
        f"{len(jobs)} jobs, {len(USERS)} users, {GPUS} GPU slots, {step_seconds * 1e3:.0f} ms steps; "
        f"ideal GPU makespan {next(iter(results.values()))['ideal_gpu_makespan_s']:.2f} s"
    )
    print(f"{'variant':<20}" + "".join(f"{title:>18}" for title, _, _ in columns))
    for name, m in results.items():
        print(f"{name:<20}" + "".join(f"{fmt.format(m[key]):>18}" for _, key, fmt in columns))
    fifo = results["ours FIFO"]
    ours = results["ours"]
    print(
        f"urgent jobs wait {ours['urgent_delay_median_s'] * 1e3:.0f} ms (median) with priorities and "
        f"preemption vs {fifo['urgent_delay_median_s'] * 1e3:.0f} ms FIFO; makespan "
        f"{ours['makespan_s'] / fifo['makespan_s']:.2f}x FIFO's"
    )
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) before/after: {load_before:.2f}/{load_after:.2f} on {os.cpu_count()} CPUs")
    report = {
        "benchmark": "scheduler_mixed",
        "command": "python bench/scheduler_mixed.py" + (" --quick" if args.quick else ""),
        "cluster": f"LocalCluster {GPUS} workers x 2 threads, GPU=1 each",
        "step_seconds": step_seconds,
        "jobs": [job.__dict__ for job in jobs],
        "machine": machine(load_before, load_after),
        "results": results,
        "records": records,
    }
    write_report(args.out, report)
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
