"""Connect to an existing Dask cluster that runs the gym-tinker scheduler, and submit jobs to it.

Any Dask cluster works once its scheduler loads the gym-tinker plugin and its workers declare
the resources jobs ask for. By hand, on one machine or several::

    dask scheduler --preload executors.plugin --gym-tinker-state-dir /shared/gym-tinker
    dask worker tcp://SCHEDULER:8786 --nthreads 1 --resources GPU=1     # one per GPU or job slot
    python examples/existing_cluster.py --address tcp://SCHEDULER:8786  # or GYM_TINKER_ADDRESS=...

``--start-local`` starts that scheduler and one worker as subprocesses of this script (what the
fast mode and the test do), connects, runs a job, and stops them. Every other example takes
``--address`` too (``grpo_math.py --address ...``), as does ``gym-tinker train``.

SLURM, with dask-jobqueue (not tested here: no SLURM in our CI)::

    from dask_jobqueue import SLURMCluster
    cluster = SLURMCluster(
        queue="gpu", cores=8, memory="64GB", processes=1, walltime="04:00:00",
        job_extra_directives=["--gres=gpu:1"],
        worker_extra_args=["--resources", "GPU=1", "--nthreads", "1"],
        scheduler_options={"preload": ["executors.plugin"]},  # the scheduler runs the gym-tinker plugin
    )
    cluster.scale(jobs=4)                                      # four SLURM jobs, one GPU worker each
    client = executors.connect(cluster.scheduler_address)

Kubernetes, with dask-kubernetes (not tested here either): with the Dask operator, set the
scheduler container's args to ``dask scheduler --preload executors.plugin`` and the worker
group's to ``dask worker --resources GPU=1 --nthreads 1`` (with ``nvidia.com/gpu: 1`` in its
resource limits) in the ``DaskCluster`` manifest, using an image with gym-tinker installed;
``KubeCluster(custom_cluster_spec=...)`` takes the same spec from Python. Then
``executors.connect("tcp://<scheduler-service>:8786")``. Give the scheduler a persistent volume
for ``--gym-tinker-state-dir`` so the journal survives a scheduler restart.

Run::

    python examples/existing_cluster.py --start-local           # start, use and stop a local cluster
    python examples/existing_cluster.py --address tcp://host:8786
    python examples/existing_cluster.py --quick                 # = --start-local (what the test runs)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import executors


def dask_command() -> str:
    """The ``dask`` CLI of this Python environment."""
    here = Path(sys.executable).parent / "dask"
    found = str(here) if here.exists() else shutil.which("dask")
    if found is None:
        raise SystemExit("the `dask` command is not installed: pip install 'distributed'")
    return found


@contextmanager
def local_cluster(folder: Path) -> Iterator[str]:
    """``dask scheduler --preload executors.plugin`` and one ``dask worker --resources GPU=1``; yields the address."""
    dask = dask_command()
    scheduler_file = folder / "scheduler.json"
    logs = folder / "scheduler.log", folder / "worker.log"  # their Dask logging goes here
    scheduler = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
         "--scheduler-file", str(scheduler_file), "--preload", "executors.plugin",
         "--gym-tinker-state-dir", str(folder / "state")],
        stderr=logs[0].open("w"),
    )  # fmt: skip
    worker = None
    try:
        deadline = time.monotonic() + 120
        while not scheduler_file.exists():
            if scheduler.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the dask scheduler did not start:\n{logs[0].read_text()[-2000:]}")
            time.sleep(0.1)
        time.sleep(0.1)  # the file is written in one go, but let it land
        address = json.loads(scheduler_file.read_text())["address"]
        worker = subprocess.Popen(
            [dask, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--resources", "GPU=1",
             "--no-dashboard", "--local-directory", str(folder / "worker")],
            stderr=logs[1].open("w"),
        )  # fmt: skip
        print(f"started a dask scheduler (pid {scheduler.pid}) at {address} and a worker (pid {worker.pid})")
        yield address
    finally:
        for process in (worker, scheduler):
            if process is not None:
                process.terminate()
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        print("stopped the local scheduler and worker")


def use_cluster(address: str) -> dict[str, object]:
    """Connect, wait for a worker, show the workers' resources, run a job that needs a GPU slot."""
    with executors.connect(address) as client:
        deadline = time.monotonic() + 120
        while not client.dask.scheduler_info()["workers"]:
            if time.monotonic() > deadline:
                raise SystemExit(f"no worker joined the scheduler at {address} within 120 s")
            time.sleep(0.2)
        for worker in client.dask.scheduler_info()["workers"].values():
            print(
                f"worker {worker['id']}: {worker['nthreads']} thread(s), resources {worker.get('resources')}"
            )
        job = client.submit(
            {"kind": "steps", "resources": {"GPU": 1}, "params": {"steps": 5, "step_seconds": 0.05}}
        )
        result = job.result(timeout=300)
        print(f"job {job.id} {job.status()} on {client.address}: sum {result['accumulator']} over 5 steps")
        print(f"jobs on this cluster: {[(j['id'], j['user'], j['state']) for j in client.jobs()]}")
    return result


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--address", default=os.environ.get("GYM_TINKER_ADDRESS"), help="Dask scheduler address"
    )
    parser.add_argument(
        "--start-local", action="store_true", help="start a scheduler and a worker here first"
    )
    parser.add_argument("--quick", action="store_true", help="same as --start-local (for the test)")
    args = parser.parse_args(argv)
    if args.start_local or args.quick:
        with (
            tempfile.TemporaryDirectory(prefix="dask-cluster-") as folder,
            local_cluster(Path(folder)) as address,
        ):
            return use_cluster(address)
    if not args.address:
        parser.error("give --address tcp://HOST:PORT (or set GYM_TINKER_ADDRESS), or --start-local")
    return use_cluster(args.address)


if __name__ == "__main__":
    main()
