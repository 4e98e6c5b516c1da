"""Preemption on a real cluster: the low-priority job yields at a step boundary and resumes exactly."""

from __future__ import annotations


def test_preempted_job_resumes_exactly_where_it_stopped(make_client, steps, wait_until):
    client = make_client()
    low = client.submit(steps(30, 0.02, priority=0, name="low"))
    wait_until(lambda: len(low.metrics()) >= 5)
    high = client.submit(steps(3, 0.01, priority=10, name="high"))
    assert high.wait(timeout=60) == "succeeded"
    result = low.result(timeout=60)

    # Nothing repeated or lost: every step exactly once, in order, and the sum is exact.
    assert [step for _, step in result["trace"]] == list(range(30))
    assert result["accumulator"] == 30 * 31 // 2
    attempts = [attempt for attempt, _ in result["trace"]]
    assert attempts == sorted(attempts) and set(attempts) == {1, 2}
    resumed_at = attempts.index(2)
    assert 5 <= resumed_at < 30
    assert f"resuming at step {resumed_at} (attempt 2)" in low.logs()

    info = low.info()
    assert info["preemptions"] == 1 and info["attempts"] == 2 and info["crashes"] == 0
    states = [t["to_state"] for t in info["transitions"]]
    assert states == ["queued", "running", "preempted", "queued", "running", "succeeded"]
    preempted_at = next(t["ts"] for t in info["transitions"] if t["to_state"] == "preempted")
    high_info = high.info()
    assert high_info["started"] >= preempted_at - 0.05
    assert (
        high_info["finished"]
        <= next(t["ts"] for t in info["transitions"][4:] if t["to_state"] == "running") + 0.05
    )
    # The signal is journaled; how fast the body yields is measured in bench/scheduler_overhead.py.
    [signal] = client._call("events", job_id=low.id, type="signal")["events"]
    assert signal["payload"] == {"signal": "preempt"} and signal["attempt"] == 1
    assert signal["ts"] <= preempted_at


def test_non_preemptible_and_equal_priority_jobs_are_not_preempted(make_client, steps, wait_until):
    client = make_client()
    pinned = client.submit(steps(10, 0.02, priority=0, preemptible=False))
    wait_until(lambda: pinned.metrics())
    high = client.submit(steps(1, 0.0, priority=10))
    assert pinned.wait(timeout=60) == "succeeded" and high.wait(timeout=60) == "succeeded"
    assert pinned.info()["preemptions"] == 0
    assert high.info()["started"] >= pinned.info()["finished"] - 0.05

    peer = client.submit(steps(10, 0.02, priority=3))
    wait_until(lambda: peer.metrics())
    same = client.submit(steps(1, 0.0, priority=3))
    assert client.wait([peer, same], timeout=60) == {peer.id: "succeeded", same.id: "succeeded"}
    assert peer.info()["preemptions"] == 0


def test_preemption_frees_only_what_is_needed(make_client, steps, wait_until):
    client = make_client(threads_per_worker=2, resources={"GPU": 1})
    lows = [client.submit(steps(200, 0.02, priority=p, resources={"GPU": 0.5})) for p in (1, 0)]
    wait_until(lambda: all(h.metrics() for h in lows))
    urgent = client.submit(steps(2, 0.01, priority=9, resources={"GPU": 0.5}))
    assert urgent.wait(timeout=60) == "succeeded"
    # Only the lowest-priority job yielded; the other kept its half of the GPU.
    assert [h.info()["preemptions"] for h in lows] == [0, 1]
    for h in lows:
        h.cancel()
    assert set(client.wait(lows, timeout=60).values()) == {"cancelled"}
