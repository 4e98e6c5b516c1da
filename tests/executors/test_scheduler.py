"""The scheduler on a real LocalCluster: ordering, head-of-line, cancel, failures, bad input."""

from __future__ import annotations

import pytest

from executors import JobFailedError, JobNotFoundError, SpecError


def start_times(client, handles):
    return {h.id: h.info()["started"] for h in handles}


def test_priority_order_and_fifo_under_contention(make_client, steps, wait_until):
    client = make_client()
    blocker = client.submit(steps(15, 0.03, preemptible=False))
    wait_until(lambda: blocker.metrics())
    priorities = [0, 5, 1, 5, 3, 0, 5]
    handles = client.submit_many([steps(1, 0.0, priority=p, name=f"p{p}") for p in priorities])
    assert set(client.wait([blocker, *handles], timeout=60).values()) == {"succeeded"}
    started = start_times(client, handles)
    order = sorted(handles, key=lambda h: started[h.id])
    expected = sorted(handles, key=lambda h: (-priorities[handles.index(h)], h.id))
    assert [h.id for h in order] == [h.id for h in expected]
    assert started[order[0].id] >= blocker.info()["finished"] - 0.05


def test_fifo_within_a_priority_with_separate_submits(make_client, steps, wait_until):
    client = make_client()
    blocker = client.submit(steps(20, 0.03, preemptible=False))
    wait_until(lambda: blocker.metrics())
    handles = [client.submit({"kind": "noop", "params": {"value": i}}) for i in range(8)]
    client.wait(handles, timeout=60)
    started = start_times(client, handles)
    assert sorted(started, key=started.get) == [h.id for h in handles]
    assert [h.result()["value"] for h in handles] == list(range(8))


def test_no_head_of_line_blocking(make_client, steps, wait_until):
    client = make_client(threads_per_worker=2, resources={"GPU": 1})
    gpu_job = client.submit(steps(1000, 0.02, resources={"GPU": 1}, priority=5, preemptible=False))
    wait_until(lambda: gpu_job.metrics())
    big = client.submit(steps(1, 0.0, resources={"GPU": 1}, priority=5))
    small = client.submit(steps(1, 0.0, priority=0))
    assert small.wait(timeout=30) == "succeeded"
    assert gpu_job.status() == "running" and big.status() == "queued"
    gpu_job.cancel()
    assert big.wait(timeout=30) == "succeeded"
    assert big.info()["started"] >= gpu_job.info()["finished"]


def test_job_that_never_fits_waits_with_a_reason_and_does_not_block(make_client, steps, wait_until):
    client = make_client()
    huge = client.submit(steps(1, resources={"GPU": 2}))
    other = client.submit({"kind": "noop"})
    assert other.wait(timeout=30) == "succeeded"
    info = wait_until(lambda: (i := huge.info()).get("waiting_reason") and i)
    assert info["state"] == "queued" and "no worker offers" in info["waiting_reason"]
    assert huge.cancel() == "cancelled"


def test_cancel_queued_and_running(make_client, steps, wait_until):
    client = make_client()
    running = client.submit(steps(500, 0.02))
    queued = client.submit(steps(3))
    wait_until(lambda: len(running.metrics()) >= 2)
    assert queued.cancel() == "cancelled"
    assert running.cancel() == "cancelling"
    assert running.wait(timeout=30) == "cancelled"
    assert queued.info()["attempts"] == 0 and queued.info()["started"] is None
    reasons = [t["reason"] for t in running.info()["transitions"]]
    assert reasons[-1] == "cancelled by user while running"
    with pytest.raises(JobFailedError, match="cancelled"):
        running.result()
    assert running.cancel() == "cancelled"  # final jobs stay as they are
    after = client.submit({"kind": "noop"})
    assert after.wait(timeout=30) == "succeeded"


def test_body_exception_fails_job_with_traceback(make_client, steps):
    client = make_client()
    handle = client.submit(steps(5, 0.0, params={"fail_at_step": 2}))
    assert handle.wait(timeout=30) == "failed"
    info = handle.info()
    assert "RuntimeError" in info["error"] and "fail_at_step=2" in info["error"]
    assert "Traceback (most recent call last)" in info["traceback"] and "steps_body" in info["traceback"]
    assert info["transitions"][-1]["reason"] == info["error"]
    with pytest.raises(JobFailedError, match="fail_at_step"):
        handle.result()


def test_a_job_whose_body_raises_fails_cleanly_with_the_reason(make_client):
    client = make_client()
    handle = client.submit({"kind": "sft", "model": "tiny", "dataset": "d"})
    assert handle.wait(timeout=60) == "failed"
    assert "Unknown model reference 'tiny'" in handle.info()["error"]


def test_invalid_specs_queue_nothing(make_client, tmp_path):
    client = make_client()
    with pytest.raises(SpecError, match="priority"):
        client.submit({"kind": "steps", "priority": "high"})
    with pytest.raises(SpecError, match="unknown job kind 'grop'"):
        client.submit({"kind": "grop"})
    with pytest.raises(SpecError, match=r"unknown job kind 'grop' \(job 2 of 2\)"):
        client.submit_many([{"kind": "noop"}, {"kind": "grop"}])
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: steps\nresources: {GPU: zero}\n")
    with pytest.raises(SpecError, match=r"resources\.GPU"):
        client.submit(bad)
    assert client.jobs() == []
    with pytest.raises(JobNotFoundError, match="no job with id 42"):
        client.job(42)


def test_logs_metrics_follow_and_listing(make_client, steps):
    client = make_client()
    handle = client.submit(steps(4, 0.01, name="follow-me", user="ann"))
    events = list(client.follow(handle.id, poll=0.2))
    assert [e["step"] for e in events if e["type"] == "metric"] == [1, 2, 3, 4]
    assert [m["accumulator"] for m in handle.metrics()] == [1, 3, 6, 10]
    assert handle.result() == {"steps": 4, "accumulator": 10, "trace": [[1, i] for i in range(4)]}
    other = client.submit({"kind": "noop", "user": "bob"})
    other.wait(timeout=30)
    assert [j["name"] for j in client.jobs(user="ann")] == ["follow-me"]
    assert {j["id"] for j in client.jobs(state="succeeded")} == {handle.id, other.id}
    with pytest.raises(SpecError, match="state must be one of"):
        client.jobs(state="done")


def test_cluster_wide_kind_registration(make_client):
    client = make_client()
    client.register_kind("stepper", "executors.bodies:steps_body")
    handle = client.submit({"kind": "stepper", "params": {"steps": 2, "step_seconds": 0}})
    assert handle.result(timeout=30)["accumulator"] == 3
    with pytest.raises(SpecError, match="cannot import"):
        client.register_kind("broken", "executors.bodies:nothing_here")


def test_jobs_without_resources_respect_worker_threads(make_client, steps):
    client = make_client(threads_per_worker=2)
    handles = client.submit_many([steps(10, 0.03) for _ in range(5)])
    assert set(client.wait(handles, timeout=60).values()) == {"succeeded"}
    spans = [(h.info()["started"], h.info()["finished"]) for h in handles]
    most = max(sum(1 for s, f in spans if s <= t < f) for t, _ in spans)
    assert most == 2
