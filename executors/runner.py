"""The Dask task that runs one attempt of a job on a worker and reports how it ended."""

from __future__ import annotations

import json
import os
import socket
import traceback
from typing import Any

from executors.context import JobContext, _clear_signal
from executors.errors import JobCancelled, JobPreempted
from executors.kinds import resolve_body
from executors.spec import JobSpec

__all__ = ["run_attempt"]


def run_attempt(
    job_id: int, attempt: int, key: str, spec: dict[str, Any], body_ref: str, checkpoint_dir: str
) -> dict[str, Any]:
    """Run one attempt and return ``{"outcome": ..., ...}``; never raises for the body's errors.

    Outcomes: ``succeeded`` (with ``result``), ``preempted``, ``cancelled`` or ``failed`` (with
    ``error`` and ``traceback``). The outcome is also sent to the scheduler as an ``end`` event,
    which is what it acts on; the Dask task failing means the worker died.
    """
    ctx = JobContext(JobSpec(**spec), job_id, attempt, checkpoint_dir, key=key)
    ctx._emit("start", pid=os.getpid(), host=socket.gethostname())
    outcome = _run_body(ctx, body_ref)
    ctx._emit("end", outcome=outcome)
    return outcome


def _run_body(ctx: JobContext, body_ref: str) -> dict[str, Any]:
    try:
        body = resolve_body(body_ref)
        result = body(ctx)
    except JobPreempted:
        return {"outcome": "preempted"}
    except JobCancelled:
        return {"outcome": "cancelled"}
    except Exception as exc:
        return {
            "outcome": "failed",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    finally:
        _clear_signal(ctx.key)
    if ctx._stop_seen is not None:
        # The body saw should_stop() and returned: that is a yield, not a success.
        return {"outcome": "cancelled" if ctx._stop_seen == "cancel" else "preempted"}
    try:
        # JSON round trip: the journal stores JSON, and events must be msgpack-serialisable.
        result = json.loads(json.dumps(result))
    except (TypeError, ValueError):
        result = {"repr": repr(result)}
    return {"outcome": "succeeded", "result": result}
