"""A cluster of separate processes (``dask scheduler --preload executors.plugin`` and ``dask worker``),
driven through the Python client and the ``gym-tinker`` CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from executors import connect
from executors.cli import app

DASK = str(Path(sys.executable).parent / "dask")


@pytest.fixture(scope="module")
def external_cluster(tmp_path_factory):
    """``dask scheduler`` with the plugin and one ``dask worker --resources GPU=1`` (2 threads)."""
    tmp = tmp_path_factory.mktemp("external")
    scheduler_file = tmp / "scheduler.json"
    scheduler = subprocess.Popen(
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
         "--scheduler-file", str(scheduler_file), "--preload", "executors.plugin",
         "--gym-tinker-journal", str(tmp / "journal.sqlite"), "--gym-tinker-state-dir", str(tmp / "state")]
    )  # fmt: skip
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert scheduler.poll() is None and time.monotonic() < deadline, "dask scheduler did not start"
            time.sleep(0.05)
        time.sleep(0.05)
        address = json.loads(scheduler_file.read_text())["address"]
        worker = subprocess.Popen(
            [DASK, "worker", address, "--host", "127.0.0.1", "--nthreads", "2", "--resources", "GPU=1",
             "--no-dashboard", "--local-directory", str(tmp)]
        )  # fmt: skip
        with connect(address) as client:
            deadline = time.monotonic() + 60
            while not client.dask.scheduler_info()["workers"]:
                assert time.monotonic() < deadline, "dask worker did not register"
                time.sleep(0.1)
        yield address, tmp
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def test_gpu_jobs_are_placed_through_worker_resources(external_cluster):
    address, _ = external_cluster
    spec = {"kind": "steps", "params": {"steps": 10, "step_seconds": 0.03}}
    with connect(address) as client:
        whole = [client.submit({**spec, "resources": {"GPU": 1}}) for _ in range(2)]
        halves = [client.submit({**spec, "resources": {"GPU": 0.5}}) for _ in range(2)]
        assert set(client.wait(whole + halves, timeout=60).values()) == {"succeeded"}
        spans = [(h.info()["started"], h.info()["finished"]) for h in whole]
        assert (
            spans[0][1] <= spans[1][0] + 0.01 or spans[1][1] <= spans[0][0] + 0.01
        )  # one GPU, one at a time
        a, b = (h.info() for h in halves)
        assert a["started"] < b["finished"] and b["started"] < a["finished"]  # half GPUs share it


def test_cli_against_the_cluster(external_cluster, monkeypatch):
    address, tmp = external_cluster
    monkeypatch.setenv("GYM_TINKER_ADDRESS", address)
    runner = CliRunner()
    job = tmp / "job.yaml"
    job.write_text("kind: steps\nname: cli-job\nparams: {steps: 3, step_seconds: 0.01}\n")
    result = runner.invoke(app, ["submit", str(job), "--priority", "4", "--wait"])
    assert result.exit_code == 0, result.output
    job_id = int(result.output.split()[0])
    assert result.output.split()[1] == "succeeded"

    result = runner.invoke(app, ["status", str(job_id)])
    assert result.exit_code == 0 and "succeeded" in result.output and "priority 4" in result.output
    result = runner.invoke(app, ["jobs", "--state", "succeeded"])
    assert result.exit_code == 0 and "cli-job" in result.output
    result = runner.invoke(app, ["logs", str(job_id), "-f"])
    assert result.exit_code == 0 and "step 3: accumulator=6" in result.output

    failing = tmp / "fail.yaml"
    failing.write_text("kind: steps\nparams: {steps: 3, step_seconds: 0, fail_at_step: 1}\n")
    result = runner.invoke(app, ["submit", str(failing), "--wait"])
    assert result.exit_code == 1 and "failed" in result.output
    failed_id = int(result.output.split()[0])
    result = runner.invoke(app, ["status", str(failed_id)])
    assert "fail_at_step=1" in result.output and "Traceback" in result.output

    long = tmp / "long.yaml"
    long.write_text("kind: steps\nparams: {steps: 1000, step_seconds: 0.02}\n")
    result = runner.invoke(app, ["submit", str(long)])
    long_id = int(result.output.split()[0])
    result = runner.invoke(app, ["cancel", str(long_id)])
    assert result.exit_code == 0 and f"job {long_id}:" in result.output
    result = runner.invoke(app, ["logs", str(long_id), "--follow"])
    assert result.exit_code == 1 and "cancelled" in result.output

    bad = tmp / "bad.yaml"
    bad.write_text("kind: steps\npriority: urgent\n")
    result = runner.invoke(app, ["submit", str(bad)])
    assert result.exit_code == 2 and "priority" in result.output
    result = runner.invoke(app, ["status", "9999"])
    assert result.exit_code == 4 and "no job with id 9999" in result.output
    result = runner.invoke(app, ["cancel", "9999"])
    assert result.exit_code == 4


def test_cli_exit_codes_without_a_cluster(tmp_path, monkeypatch):
    monkeypatch.delenv("GYM_TINKER_ADDRESS", raising=False)
    runner = CliRunner()
    result = runner.invoke(app, ["jobs"])
    assert result.exit_code == 3 and "GYM_TINKER_ADDRESS" in result.output
    # A failed Dask connection can leave threads behind: make it in its own process.
    proc = subprocess.run(
        [sys.executable, "-m", "executors.cli", "jobs", "--address", "tcp://127.0.0.1:9"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3 and "cannot connect" in proc.stderr
    missing = tmp_path / "none.yaml"
    result = runner.invoke(app, ["submit", str(missing), "--address", "tcp://127.0.0.1:9"])
    assert result.exit_code == 2 and "cannot read job spec" in result.output


def test_cli_lists_envs_and_games():
    runner = CliRunner()
    result = runner.invoke(app, ["envs"])
    assert result.exit_code == 0 and "tinker/Math-v0" in result.output
    result = runner.invoke(app, ["games"])
    try:
        import multiagent

        expected = multiagent.list_games()[0][0]
    except (ImportError, AttributeError):
        assert result.exit_code == 2 and "not available" in result.output
    else:
        assert result.exit_code == 0 and expected in result.output


def test_connect_refuses_a_scheduler_without_the_plugin():
    from distributed import LocalCluster

    from executors import ConnectError

    with LocalCluster(n_workers=0, dashboard_address=":0", processes=False) as cluster:
        with pytest.raises(ConnectError, match="does not run the gym-tinker scheduler"):
            connect(cluster.scheduler_address)
