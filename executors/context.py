"""The job-body interface: ``JobContext``, what a body receives when it runs on a worker.

A body is ``body(ctx) -> result`` (or a class with ``run(self, ctx)``). It should:

* resume: ``state = ctx.load_checkpoint()`` (None on a fresh start);
* work in steps, and at each step boundary ``ctx.save_checkpoint(state)`` then
  ``ctx.check_signals()`` (raises ``JobPreempted``/``JobCancelled``) or test ``ctx.should_stop()``
  and return;
* report progress with ``ctx.report(step=..., loss=...)`` and ``ctx.log("...")``;
* return a JSON-serialisable result (a dict is best), kept in the journal.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from executors.errors import JobCancelled, JobPreempted
from executors.spec import JobSpec

__all__ = ["EVENT_TOPIC", "JobContext", "deliver_signal"]

EVENT_TOPIC = "gym-tinker"
"""Dask event topic on which bodies send lifecycle, log and metric events to the scheduler plugin."""

_CHECKPOINT_FILE = "state.pkl"
# Signals for running attempts in this worker process, keyed by the attempt's Dask key. The
# scheduler plugin writes here through ``Client.run``; bodies only read a dict, so polling at
# every step boundary costs nothing.
_signals: dict[str, str] = {}
_signals_lock = threading.Lock()


def deliver_signal(key: str, signal: str) -> bool:
    """Record ``signal`` ("preempt" or "cancel") for the attempt ``key`` in this process.

    Runs on a worker, called by the scheduler plugin through ``Client.run``. A cancel is never
    downgraded to a preempt.
    """
    with _signals_lock:
        if _signals.get(key) != "cancel":
            _signals[key] = signal
    return True


def _clear_signal(key: str) -> None:
    with _signals_lock:
        _signals.pop(key, None)


class JobContext:
    """What a running job body sees: its spec, checkpoints, reporting, and stop signals.

    Outside a Dask worker (e.g. calling a body directly in a test) events are kept in
    ``ctx.events`` instead of being sent to the scheduler.

    >>> import tempfile
    >>> from executors.bodies import steps_body
    >>> with tempfile.TemporaryDirectory() as d:
    ...     ctx = JobContext(JobSpec(kind="steps", params={"steps": 3, "step_seconds": 0}), 1, 1, d)
    ...     steps_body(ctx)["accumulator"], ctx.load_checkpoint()["step"]
    (6, 3)
    """

    def __init__(
        self,
        spec: JobSpec,
        job_id: int,
        attempt: int,
        checkpoint_dir: str | os.PathLike[str],
        *,
        key: str | None = None,
    ) -> None:
        self.spec = spec
        """The job's validated spec; ``spec.params`` holds the hyper-parameters."""
        self.job_id = job_id
        """The scheduler's id for this job."""
        self.attempt = attempt
        """1 on the first run; each preemption, worker death or scheduler restart adds one."""
        self.checkpoint_dir = Path(checkpoint_dir)
        """A directory that outlives this attempt; put large checkpoint files (weights) here."""
        self.key = key or f"local-{job_id}-{attempt}"
        self.events: list[dict[str, Any]] = []
        self._stop_seen: str | None = None
        try:
            from distributed import get_worker

            self._worker: Any = get_worker()
        except ValueError:
            self._worker = None

    @property
    def output_dir(self) -> Path:
        """Where outputs go: the spec's ``output_dir``, else the parent of the checkpoint directory."""
        return Path(self.spec.output_dir) if self.spec.output_dir else self.checkpoint_dir.parent

    # -- checkpoints -----------------------------------------------------------------------
    def save_checkpoint(self, state: Any) -> None:
        """Atomically replace the checkpoint with ``state`` (any picklable object).

        The file is written beside the old one, flushed to disk, then renamed over it, so a
        worker killed mid-write leaves the previous checkpoint intact.
        """
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".state-", dir=self.checkpoint_dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(state, fh, protocol=pickle.HIGHEST_PROTOCOL)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.checkpoint_dir / _CHECKPOINT_FILE)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._emit("checkpoint")

    def load_checkpoint(self) -> Any:
        """The last state saved by ``save_checkpoint`` in any attempt, or None if there is none."""
        path = self.checkpoint_dir / _CHECKPOINT_FILE
        try:
            with path.open("rb") as fh:
                return pickle.load(fh)
        except FileNotFoundError:
            return None

    # -- reporting -------------------------------------------------------------------------
    def report(self, step: int | None = None, **metrics: float) -> None:
        """Record metrics (numbers) for ``step``; they reach the journal and ``client.follow``."""
        clean = {}
        for name, value in metrics.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise TypeError(f"metric {name!r} must be a number, got {type(value).__name__}: {value!r}")
            clean[name] = float(value)
        self._emit("metric", step=step, metrics=clean)

    def log(self, message: str) -> None:
        """Append a line to the job's log (kept in the journal; ``gym-tinker logs ID``)."""
        self._emit("log", message=str(message))

    def _emit(self, type_: str, **fields: Any) -> None:
        event = {
            "type": type_,
            "job": self.job_id,
            "attempt": self.attempt,
            "key": self.key,
            "ts": time.time(),
        }
        event.update(fields)
        if self._worker is None:
            self.events.append(event)
        else:
            self._worker.log_event(EVENT_TOPIC, event)

    # -- signals ---------------------------------------------------------------------------
    @property
    def stop_reason(self) -> str | None:
        """``"cancel"``, ``"preempt"`` or None: what the scheduler has asked of this attempt."""
        return _signals.get(self.key)

    def should_stop(self) -> bool:
        """True when the job should stop at this step boundary (checkpoint first, then return).

        A body that returns after this was True is recorded as preempted or cancelled, not as
        succeeded.
        """
        reason = self.stop_reason
        if reason is not None:
            self._stop_seen = reason
        return reason is not None

    def check_signals(self) -> None:
        """Raise ``JobPreempted`` or ``JobCancelled`` if the job was asked to stop; else return.

        Call it after ``save_checkpoint`` at a step boundary: the exception unwinds the body
        and the runner records the preemption (job re-queued) or cancellation.
        """
        if self.should_stop():
            raise JobCancelled() if self._stop_seen == "cancel" else JobPreempted()
