"""Start a gym-tinker cluster as separate processes: ``dask scheduler`` with the plugin, plus workers."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ClusterProcesses", "TLSFiles"]


@dataclass(frozen=True)
class TLSFiles:
    """PEM files for Dask TLS: the CA that signed every certificate, and this node's cert and key."""

    ca_file: str
    cert: str
    key: str

    def args(self) -> list[str]:
        return ["--tls-ca-file", self.ca_file, "--tls-cert", self.cert, "--tls-key", self.key]


@dataclass
class ClusterProcesses:
    """A Dask scheduler running the gym-tinker plugin and ``workers`` worker processes.

    Equivalent to running by hand::

        dask scheduler --host 127.0.0.1 --preload executors.plugin --gym-tinker-journal J
        dask worker tcp://127.0.0.1:8786 --nthreads 1 --resources GPU=1

    Use as a context manager; ``address`` is known once it is entered.
    """

    host: str = "127.0.0.1"
    port: int = 0
    workers: int = 1
    threads: int = 1
    resources: str | None = None
    journal: str | None = None
    state_dir: str | None = None
    tls: TLSFiles | None = None
    max_bypass: int | None = None
    aging: float | None = None
    dashboard_address: str = ":0"
    address: str | None = None
    scheduler: subprocess.Popen[bytes] | None = None
    worker_procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, timeout: float = 60.0) -> str:
        """Start the scheduler, wait for its address, start the workers and wait for them."""
        self._dir = tempfile.mkdtemp(prefix="gym-tinker-cluster-")
        scheduler_file = os.path.join(self._dir, "scheduler.json")
        cmd = [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        cmd += ["--scheduler-file", scheduler_file, "--dashboard-address", self.dashboard_address]
        if self.tls is not None:
            cmd += ["--protocol", "tls", *self.tls.args()]
        cmd += ["--preload", "executors.plugin"]
        if self.journal:
            cmd += ["--gym-tinker-journal", self.journal]
        if self.state_dir:
            cmd += ["--gym-tinker-state-dir", self.state_dir]
        if self.max_bypass is not None:
            cmd += ["--gym-tinker-max-bypass", str(self.max_bypass)]
        if self.aging is not None:
            cmd += ["--gym-tinker-aging", str(self.aging)]
        self.scheduler = subprocess.Popen(cmd)
        deadline = time.monotonic() + timeout
        while not os.path.exists(scheduler_file):
            if self.scheduler.poll() is not None:
                raise RuntimeError(
                    f"dask scheduler exited with code {self.scheduler.returncode}: {' '.join(cmd)}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"dask scheduler did not start within {timeout} s")
            time.sleep(0.05)
        time.sleep(0.05)  # the file is written in one go, but let the writer finish
        self.address = json.loads(Path(scheduler_file).read_text())["address"]
        for i in range(self.workers):
            wcmd = [sys.executable, "-m", "distributed.cli.dask_worker", self.address, "--host", self.host]
            wcmd += ["--nthreads", str(self.threads), "--name", f"gym-tinker-worker-{i}", "--no-dashboard"]
            wcmd += ["--local-directory", self._dir]
            if self.resources:
                wcmd += ["--resources", self.resources]
            if self.tls is not None:
                wcmd += self.tls.args()
            self.worker_procs.append(subprocess.Popen(wcmd))
        return self.address

    def stop(self, timeout: float = 20.0) -> None:
        """Stop workers, then the scheduler: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        for proc in [*self.worker_procs, *([self.scheduler] if self.scheduler else [])]:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.worker_procs.clear()
        self.scheduler = None
        with contextlib.suppress(OSError):
            import shutil

            shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> ClusterProcesses:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
