"""Built-in job bodies: ``steps`` (checkpointing stepper) and ``noop``; real, small, and honest."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from executors.context import JobContext

__all__ = ["noop_body", "steps_body"]


def steps_body(ctx: JobContext) -> dict[str, Any]:
    """Run ``params.steps`` steps, checkpointing the step counter and an accumulator after each.

    Step ``i`` (0-based) sleeps ``step_seconds`` then adds ``i + 1`` to the accumulator, so a
    finished job's accumulator is ``steps * (steps + 1) / 2`` whatever preemptions or worker
    deaths happened. The checkpoint also keeps a trace of ``(attempt, step)`` pairs, which lets
    tests check that no step was repeated or lost. Optional params: ``fail_at_step`` (raise
    there), ``kill_worker_at_step`` (SIGKILL the worker process there, on every attempt).

    >>> import tempfile
    >>> from executors.spec import JobSpec
    >>> with tempfile.TemporaryDirectory() as d:
    ...     ctx = JobContext(JobSpec(kind="steps", params={"steps": 4, "step_seconds": 0}), 7, 1, d)
    ...     result = steps_body(ctx)
    >>> result["accumulator"], [step for _, step in result["trace"]]
    (10, [0, 1, 2, 3])
    """
    params = ctx.spec.params
    total = _int_param(params, "steps", 10)
    step_seconds = float(params.get("step_seconds", 0.02))
    fail_at = params.get("fail_at_step")
    kill_at = params.get("kill_worker_at_step")
    state = ctx.load_checkpoint() or {"step": 0, "accumulator": 0, "trace": []}
    if state["step"]:
        ctx.log(f"resuming at step {state['step']} (attempt {ctx.attempt})")
    while state["step"] < total:
        ctx.check_signals()
        step = state["step"]
        if kill_at is not None and step == int(kill_at):
            os.kill(os.getpid(), signal.SIGKILL)
        if fail_at is not None and step == int(fail_at):
            raise RuntimeError(f"steps body failing on purpose at step {step} (fail_at_step={fail_at})")
        time.sleep(step_seconds)
        state = {
            "step": step + 1,
            "accumulator": state["accumulator"] + step + 1,
            "trace": [*state["trace"], (ctx.attempt, step)],
        }
        ctx.save_checkpoint(state)
        ctx.report(step=step + 1, accumulator=state["accumulator"])
    return {"steps": state["step"], "accumulator": state["accumulator"], "trace": state["trace"]}


def noop_body(ctx: JobContext) -> dict[str, Any]:
    """Return at once with ``params.value`` echoed back (for throughput tests and benchmarks).

    >>> import tempfile
    >>> from executors.spec import JobSpec
    >>> with tempfile.TemporaryDirectory() as d:
    ...     noop_body(JobContext(JobSpec(kind="noop", params={"value": 5}), 1, 1, d))
    {'value': 5}
    """
    return {"value": ctx.spec.params.get("value")}


def _int_param(params: dict[str, Any], name: str, default: int) -> int:
    value = params.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"params.{name} must be a non-negative integer, got {value!r}")
    return value
