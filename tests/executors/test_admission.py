"""The admission policy on plain data: ordering, no head-of-line blocking, anti-starvation, preemption."""

from __future__ import annotations

from executors.admission import SLOTS, Placed, Waiting, admission_order, plan_admission


def w(job_id, priority=0, gpu=0.0, bypassed=0, waited=0.0):
    demand = {SLOTS: 1.0, **({"GPU": gpu} if gpu else {})}
    return Waiting(job_id, priority, job_id, demand, bypassed, waited)


def p(job_id, worker="w1", priority=0, gpu=0.0, preemptible=True, started=0.0, stopping=False):
    demand = {SLOTS: 1.0, **({"GPU": gpu} if gpu else {})}
    return Placed(job_id, worker, priority, demand, preemptible, started, stopping)


def test_priority_then_fifo():
    order = admission_order([w(1, 0), w(2, 5), w(3, 0), w(4, 5), w(5, 1)])
    assert [x.job_id for x in order] == [2, 4, 5, 1, 3]
    plan = plan_admission(order, {"w1": {SLOTS: 3}}, [])
    assert plan.release == [(2, "w1"), (4, "w1"), (5, "w1")]


def test_aging_lifts_old_jobs():
    order = admission_order([w(1, 3, waited=0), w(2, 0, waited=50)], aging_interval=10)
    assert [x.job_id for x in order] == [2, 1]


def test_small_job_passes_a_big_one_that_does_not_fit():
    cap = {"w1": {SLOTS: 2, "GPU": 1}}
    running = [p(9, gpu=1, priority=5)]  # equal priority: no preemption
    plan = plan_admission(admission_order([w(1, 5, gpu=1), w(2, 0)]), cap, running)
    assert plan.release == [(2, "w1")] and plan.bypassed == [1] and plan.preempt == []


def test_starving_job_reserves_its_room():
    cap = {"w1": {SLOTS: 4, "GPU": 1}}
    running = [p(9, gpu=1, priority=5)]
    # Bypassed often enough: the GPU it waits for is reserved, slot-only jobs still pass.
    plan = plan_admission(
        admission_order([w(1, 0, gpu=1, bypassed=3), w(2, 0, gpu=1), w(3, 0)]), cap, running, max_bypass=3
    )
    assert plan.release == [(3, "w1")]
    running = []
    plan = plan_admission(
        admission_order([w(1, 0, gpu=1, bypassed=3), w(2, 0, gpu=1)]), cap, running, max_bypass=3
    )
    assert plan.release == [(1, "w1")]


def test_reservation_blocks_jobs_that_would_take_the_reserved_room():
    cap = {"w1": {SLOTS: 2, "GPU": 2}}
    running = [p(9, gpu=1, priority=5, preemptible=False)]
    plan = plan_admission(
        admission_order([w(1, 0, gpu=2, bypassed=5), w(2, 0, gpu=1)]), cap, running, max_bypass=5
    )
    assert plan.release == []  # job 2 would take the GPU job 1 waits for
    plan = plan_admission(
        admission_order([w(1, 0, gpu=2, bypassed=4), w(2, 0, gpu=1)]), cap, running, max_bypass=5
    )
    assert plan.release == [(2, "w1")]


def test_preempts_lowest_priority_most_recent_first():
    cap = {"w1": {SLOTS: 3}}
    running = [p(10, priority=1, started=1.0), p(11, priority=0, started=1.0), p(12, priority=0, started=2.0)]
    plan = plan_admission(admission_order([w(1, 9)]), cap, running)
    assert plan.preempt == [12] and plan.release == []


def test_never_preempts_equal_priority_or_non_preemptible():
    cap = {"w1": {SLOTS: 2}}
    running = [p(10, priority=5), p(11, priority=0, preemptible=False)]
    plan = plan_admission(admission_order([w(1, 5)]), cap, running)
    assert plan.preempt == [] and plan.release == []


def test_yielding_jobs_are_not_preempted_twice():
    cap = {"w1": {SLOTS: 2}}
    running = [p(10, priority=0, stopping=True), p(11, priority=0)]
    plan = plan_admission(admission_order([w(1, 9)]), cap, running)
    assert plan.preempt == []  # job 10 is already yielding; its slot is claimed for job 1
    plan = plan_admission(admission_order([w(1, 9), w(2, 9)]), cap, running)
    assert plan.preempt == [11]


def test_preemption_picks_the_worker_with_cheapest_victims():
    cap = {"a": {SLOTS: 1, "GPU": 1}, "b": {SLOTS: 1, "GPU": 1}}
    running = [p(10, "a", priority=3, gpu=1), p(11, "b", priority=1, gpu=1)]
    plan = plan_admission(admission_order([w(1, 9, gpu=1)]), cap, running)
    assert plan.preempt == [11]


def test_unplaceable_jobs_are_reported_and_do_not_block():
    cap = {"w1": {SLOTS: 1, "GPU": 1}}
    plan = plan_admission(admission_order([w(1, 9, gpu=2), w(2, 0)]), cap, [])
    assert plan.release == [(2, "w1")] and "GPU" in plan.unplaceable[1]


def test_fractional_resources_share_a_device():
    cap = {"w1": {SLOTS: 4, "GPU": 1}}
    demand = {SLOTS: 1.0, "GPU": 0.5}
    waiting = [Waiting(i, 0, i, demand) for i in (1, 2, 3)]
    plan = plan_admission(waiting, cap, [])
    assert plan.release == [(1, "w1"), (2, "w1")]


def test_best_fit_keeps_big_holes():
    cap = {"big": {SLOTS: 1, "GPU": 4}, "small": {SLOTS: 1, "GPU": 1}}
    plan = plan_admission(admission_order([w(1, 0, gpu=1), w(2, 0, gpu=4)]), cap, [])
    assert plan.release == [(1, "small"), (2, "big")]
