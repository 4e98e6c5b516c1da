"""Failures on real clusters: a worker SIGKILLed mid-job, a job that kills workers, a scheduler restart."""

from __future__ import annotations

import os
import signal

from executors import connect
from executors.cluster import ClusterProcesses


def start_event(client, handle, attempt):
    events = client._call("events", job_id=handle.id, type="start")["events"]
    return next((e for e in events if e["attempt"] == attempt), None)


def test_worker_sigkill_mid_job_resumes_from_checkpoint(make_client, steps, wait_until):
    client = make_client()
    job = client.submit(steps(60, 0.025, max_attempts=3))
    wait_until(lambda: len(job.metrics()) >= 8)
    # The start event names the worker process; the nanny restarts it after the kill.
    pid = wait_until(lambda: start_event(client, job, 1))["payload"]["pid"]
    assert pid != os.getpid()
    os.kill(pid, signal.SIGKILL)
    result = job.result(timeout=120)
    assert [step for _, step in result["trace"]] == list(range(60))
    assert result["accumulator"] == 60 * 61 // 2
    info = job.info()
    assert info["crashes"] == 1 and info["attempts"] == 2 and info["state"] == "succeeded"
    lost = [t for t in info["transitions"] if t["from_state"] == "running" and t["to_state"] == "queued"]
    assert len(lost) == 1 and "resuming from last checkpoint" in lost[0]["reason"]
    first_of_attempt_2 = next(i for i, (a, _) in enumerate(result["trace"]) if a == 2)
    assert first_of_attempt_2 >= 8


def test_job_that_keeps_killing_workers_fails_after_max_attempts(make_client, steps):
    client = make_client()
    job = client.submit(steps(5, 0.0, max_attempts=2, params={"kill_worker_at_step": 1}))
    assert job.wait(timeout=120) == "failed"
    info = job.info()
    assert info["crashes"] == 2 and info["attempts"] == 2
    assert "worker died during 2 attempts (max_attempts=2)" in info["error"]
    after = client.submit({"kind": "noop"})
    assert after.wait(timeout=60) == "succeeded"


def test_scheduler_restart_restores_every_job_from_the_journal(tmp_path, steps, wait_until):
    journal = str(tmp_path / "journal.sqlite")
    state = str(tmp_path / "state")
    with ClusterProcesses(workers=1, threads=1, journal=journal, state_dir=state) as first:
        with connect(first.address) as client:
            running = client.submit(steps(400, 0.02, name="long"))
            queued = client.submit_many([steps(2, 0.0, name=f"q{i}") for i in range(3)])
            wait_until(lambda: len(running.metrics()) >= 5)
            done_steps = len(running.metrics())
        # A crash, not a shutdown: the plugin gets no chance to tidy up.
        os.kill(first.scheduler.pid, signal.SIGKILL)
        first.scheduler.wait()
    with ClusterProcesses(workers=1, threads=1, journal=journal, state_dir=state) as second:
        with connect(second.address) as client:
            assert sorted(j["id"] for j in client.jobs()) == [running.id] + [h.id for h in queued]
            running = client.job(running.id)
            wait_until(lambda: client.job(running.id).info()["attempts"] == 2, timeout=60)
            running.cancel()
            states = client.wait([running.id] + [h.id for h in queued], timeout=120)
            assert states == {running.id: "cancelled", **{h.id: "succeeded" for h in queued}}
            info = running.info()
            reasons = [t["reason"] for t in info["transitions"]]
            assert "scheduler restarted while running; resuming from last checkpoint" in reasons
            assert info["crashes"] == 0
            resumed = [line for line in running.logs() if line.startswith("resuming at step")]
            assert resumed and int(resumed[0].split()[3]) >= done_steps - 1
            assert len(client.jobs()) == 4
