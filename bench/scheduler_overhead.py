"""Scheduler overhead: throughput against raw Dask, submit-to-start latency, preemption latency.

Run ``python bench/scheduler_overhead.py`` (``--quick`` for a short run). Prints a table and
writes ``bench/results/scheduler_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from executors import connect
from executors.runner import run_attempt

RESULTS = Path(__file__).parent / "results" / "scheduler_overhead.json"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _raw(client: Any, n: int, scratch: str) -> float:
    dask = client.dask
    start = time.perf_counter()
    futures = [
        dask.submit(
            run_attempt, i, 1, f"raw-{i}", {"kind": "noop"}, "executors.bodies:noop_body", scratch, pure=False
        )
        for i in range(n)
    ]
    dask.gather(futures)
    return time.perf_counter() - start


def _scheduled(client: Any, n: int, batch: bool) -> float:
    start = time.perf_counter()
    spec = {"kind": "noop"}
    handles = client.submit_many([spec] * n) if batch else [client.submit(spec) for _ in range(n)]
    states = client.wait(handles)
    elapsed = time.perf_counter() - start
    assert all(s == "succeeded" for s in states.values()), states
    return elapsed


def throughput(client: Any, n: int, scratch: str, repeats: int) -> dict[str, Any]:
    """Seconds for n no-op jobs through the scheduler, and the same body as raw Dask tasks.

    The three variants take turns, ``repeats`` times; the best time of each is compared, since
    on a shared machine the noise only ever adds time.
    """
    runs: dict[str, list[float]] = {
        "raw_dask_s": [],
        "scheduler_submit_many_s": [],
        "scheduler_submit_each_s": [],
    }
    for _ in range(repeats):
        runs["raw_dask_s"].append(_raw(client, n, scratch))
        runs["scheduler_submit_many_s"].append(_scheduled(client, n, batch=True))
        runs["scheduler_submit_each_s"].append(_scheduled(client, n, batch=False))
    best = {name: min(times) for name, times in runs.items()}
    return {
        "jobs": n,
        "repeats": repeats,
        **best,
        "ratio_submit_many": best["scheduler_submit_many_s"] / best["raw_dask_s"],
        "ratio_submit_each": best["scheduler_submit_each_s"] / best["raw_dask_s"],
        "all_runs_s": runs,
    }


def submit_to_start(client: Any, samples: int) -> dict[str, float]:
    """Milliseconds from the submit call to the body starting, with a free slot, one job at a time."""
    latencies = []
    for _ in range(samples):
        t0 = time.time()
        handle = client.submit({"kind": "noop"})
        handle.wait(timeout=60)
        started = [e for e in client._call("events", job_id=handle.id, type="start")["events"]]
        latencies.append((started[0]["ts"] - t0) * 1e3)
    return {
        "samples": samples,
        "median_ms": statistics.median(latencies),
        "p95_ms": _percentile(latencies, 0.95),
    }


def preemption(client: Any, workers: int, step_seconds: float, repeats: int) -> dict[str, float]:
    """Signal-to-yield of a running low-priority job when a high-priority one needs its slot.

    Every worker offers one ``SLOT``; one low-priority stepping job per worker holds them all.
    """
    ms, steps = [], []
    spec = {
        "kind": "steps",
        "priority": 0,
        "resources": {"SLOT": 1},
        "params": {"steps": 10**6, "step_seconds": step_seconds},
    }
    for _ in range(repeats):
        lows = [client.submit(spec) for _ in range(workers)]
        while not all(low.metrics() for low in lows):
            time.sleep(0.02)
        high = client.submit({"kind": "noop", "priority": 10, "resources": {"SLOT": 1}})
        high.wait(timeout=60)
        for low in lows:
            low.cancel()
        client.wait(lows, timeout=60)
        signals = {low.id: client._call("events", job_id=low.id, type="signal")["events"] for low in lows}
        [low] = [low for low in lows if signals[low.id][0]["payload"]["signal"] == "preempt"]
        info = low.info()
        signal = signals[low.id][0]
        yielded = next(t for t in info["transitions"] if t["to_state"] == "preempted")
        after = [m for m in low.metrics() if m["ts"] > signal["ts"] and m["attempt"] == signal["attempt"]]
        ms.append((yielded["ts"] - signal["ts"]) * 1e3)
        steps.append(len(after))
    return {
        "repeats": repeats,
        "step_ms": step_seconds * 1e3,
        "median_ms": statistics.median(ms),
        "max_ms": max(ms),
        "max_steps_after_signal": max(steps),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200 jobs and fewer samples")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=None, help="throughput runs per variant (best counts)")
    args = parser.parse_args()
    n = args.jobs or (200 if args.quick else 1000)
    samples = 20 if args.quick else 100
    with (
        tempfile.TemporaryDirectory() as state,
        connect(
            n_workers=args.workers, threads_per_worker=args.threads, state_dir=state, resources={"SLOT": 1}
        ) as client,
    ):
        client.submit({"kind": "noop"}).wait(timeout=60)  # warm up workers and imports
        results = {
            "cluster": f"LocalCluster {args.workers} workers x {args.threads} threads",
            "machine": platform.platform(),
            "throughput": throughput(client, n, state, args.repeats or (1 if args.quick else 3)),
            "submit_to_start": submit_to_start(client, samples),
            "preemption": preemption(client, args.workers, 0.02, 3 if args.quick else 10),
        }
    t, s, p = results["throughput"], results["submit_to_start"], results["preemption"]
    rows = [
        (f"{n} no-op jobs, raw Dask submit (best of {t['repeats']})", f"{t['raw_dask_s']:.2f} s", ""),
        (
            f"{n} jobs, scheduler, submit_many",
            f"{t['scheduler_submit_many_s']:.2f} s",
            f"{t['ratio_submit_many']:.2f}x raw",
        ),
        (
            f"{n} jobs, scheduler, submit each",
            f"{t['scheduler_submit_each_s']:.2f} s",
            f"{t['ratio_submit_each']:.2f}x raw",
        ),
        ("submit-to-start, free slot", f"{s['median_ms']:.1f} ms median", f"{s['p95_ms']:.1f} ms p95"),
        (
            f"preemption, {p['step_ms']:.0f} ms steps",
            f"{p['median_ms']:.1f} ms median (max {p['max_ms']:.1f})",
            f"<= {p['max_steps_after_signal']} step(s) after signal",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(results["cluster"])
    for name, value, extra in rows:
        print(f"{name:<{width}}  {value:<28}  {extra}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
