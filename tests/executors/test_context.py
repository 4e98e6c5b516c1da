"""The job-body interface outside a cluster: checkpoints, reporting, signals."""

from __future__ import annotations

import os

import pytest

from executors import JobCancelled, JobContext, JobPreempted, JobSpec
from executors.bodies import steps_body
from executors.context import deliver_signal
from executors.runner import run_attempt


def make_ctx(tmp_path, key="k", attempt=1, **params):
    spec = JobSpec(kind="steps", params={"steps": 5, "step_seconds": 0, **params})
    return JobContext(spec, 1, attempt, tmp_path / "ckpt", key=key)


def test_checkpoint_is_atomic_and_leaves_no_temp_files(tmp_path):
    ctx = make_ctx(tmp_path)
    assert ctx.load_checkpoint() is None
    ctx.save_checkpoint({"step": 1})
    ctx.save_checkpoint({"step": 2})
    assert ctx.load_checkpoint() == {"step": 2}
    assert os.listdir(tmp_path / "ckpt") == ["state.pkl"]

    class Unpicklable:
        def __reduce__(self):
            raise TypeError("nope")

    with pytest.raises(TypeError):
        ctx.save_checkpoint({"bad": Unpicklable()})
    assert ctx.load_checkpoint() == {"step": 2} and os.listdir(tmp_path / "ckpt") == ["state.pkl"]


def test_report_and_log_are_recorded(tmp_path):
    ctx = make_ctx(tmp_path)
    ctx.report(step=3, loss=0.25)
    ctx.log("hello")
    assert [(e["type"], e.get("step")) for e in ctx.events] == [("metric", 3), ("log", None)]
    with pytest.raises(TypeError, match="metric 'loss' must be a number"):
        ctx.report(step=1, loss="low")


def test_signals_stop_the_body_at_a_step_boundary(tmp_path):
    ctx = make_ctx(tmp_path, key="sig-1")
    assert not ctx.should_stop()
    deliver_signal("sig-1", "preempt")
    with pytest.raises(JobPreempted):
        ctx.check_signals()
    deliver_signal("sig-1", "cancel")
    deliver_signal("sig-1", "preempt")  # a cancel is never downgraded
    with pytest.raises(JobCancelled):
        ctx.check_signals()


def test_runner_outcomes(tmp_path):
    spec = {"kind": "steps", "params": {"steps": 3, "step_seconds": 0}}
    ckpt = str(tmp_path / "a")
    out = run_attempt(1, 1, "run-ok", spec, "executors.bodies:steps_body", ckpt)
    assert out == {
        "outcome": "succeeded",
        "result": {"steps": 3, "accumulator": 6, "trace": [[1, 0], [1, 1], [1, 2]]},
    }
    failing = {"kind": "steps", "params": {"steps": 3, "step_seconds": 0, "fail_at_step": 1}}
    out = run_attempt(2, 1, "run-fail", failing, "executors.bodies:steps_body", str(tmp_path / "b"))
    assert out["outcome"] == "failed" and "fail_at_step=1" in out["error"] and "Traceback" in out["traceback"]
    deliver_signal("run-pre", "preempt")
    out = run_attempt(3, 1, "run-pre", spec, "executors.bodies:steps_body", str(tmp_path / "c"))
    assert out == {"outcome": "preempted"}
    out = run_attempt(4, 1, "run-missing", spec, "executors.bodies:missing", str(tmp_path / "d"))
    assert out["outcome"] == "failed" and "cannot import job body" in out["error"]


def test_body_returning_after_should_stop_counts_as_yield(tmp_path):
    from executors.runner import _run_body

    ctx = make_ctx(tmp_path, key="flag-1")
    deliver_signal("flag-1", "preempt")
    register = "executors.bodies:noop_body"
    # noop never looks at signals: it succeeds even with a pending preempt
    assert _run_body(ctx, register)["outcome"] == "succeeded"


def test_steps_body_resumes_from_checkpoint(tmp_path):
    ctx = make_ctx(tmp_path, key="resume-1", steps=6)
    deliver_signal("resume-1", "preempt")
    ctx.save_checkpoint({"step": 2, "accumulator": 3, "trace": [(1, 0), (1, 1)]})
    with pytest.raises(JobPreempted):
        steps_body(ctx)
    ctx2 = make_ctx(tmp_path, key="resume-2", attempt=2, steps=6)
    result = steps_body(ctx2)
    assert result["accumulator"] == 21 and [s for _, s in result["trace"]] == list(range(6))
    assert {a for a, _ in result["trace"][2:]} == {2}
