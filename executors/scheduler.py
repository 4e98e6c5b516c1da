"""The job scheduler's core: the queue, admission, releases to Dask, outcomes, and the journal.

``PriorityScheduler`` in ``executors.plugin`` puts this core inside the Dask scheduler process.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from distributed import Client

from executors.admission import SLOTS, Placed, Waiting, plan_admission
from executors.context import deliver_signal
from executors.errors import JobNotFoundError, SpecError
from executors.journal import Journal
from executors.kinds import body_ref_for, resolve_body
from executors.records import ActiveJob, default_state_dir, journal_rows
from executors.runner import run_attempt
from executors.spec import _KIND_RE, JobState

__all__ = ["KEY_PREFIX", "JobScheduler", "default_state_dir"]

KEY_PREFIX = "gym-tinker-job-"
"""Dask keys of job attempts: ``gym-tinker-job-<id>-attempt-<n>``."""
SEND_INTERVAL = 0.001

EventRow = tuple[int, float, int | None, str, int | None, dict[str, Any]]


class JobScheduler:
    """Queue, admission, placement and outcomes of jobs; needs a running Dask scheduler and client.

    Args:
        journal: SQLite journal path; default ``<state_dir>/journal.sqlite``.
        state_dir: default home of the journal and of checkpoints of jobs without ``output_dir``.
        max_bypass: how often a waiting job may be passed over before it reserves room.
        aging_interval: seconds of waiting worth one priority point (None: no aging).

    >>> JobScheduler(journal=":memory:", max_bypass=4).max_bypass
    4
    >>> JobScheduler(aging_interval=0)
    Traceback (most recent call last):
    ...
    ValueError: aging_interval must be positive seconds or None, got 0
    """

    def __init__(
        self,
        journal: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        max_bypass: int = 16,
        aging_interval: float | None = None,
    ) -> None:
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.journal_path = str(journal) if journal else str(self.state_dir / "journal.sqlite")
        if max_bypass < 0:
            raise ValueError(f"max_bypass must be >= 0, got {max_bypass!r}")
        if aging_interval is not None and aging_interval <= 0:
            raise ValueError(f"aging_interval must be positive seconds or None, got {aging_interval!r}")
        self.max_bypass = max_bypass
        self.aging_interval = aging_interval
        self.jobs: dict[int, ActiveJob] = {}
        # Queued jobs as (-priority, id), kept sorted: admission order without aging.
        self._queue: list[tuple[int, int]] = []
        self._running: dict[int, ActiveJob] = {}
        self.kinds: dict[str, str] = {}
        self.client: Client | None = None
        self.scheduler: Any = None
        self._journal: Journal | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        self._event_buffer: list[EventRow] = []
        # Transitions not yet committed; commit() writes them in one transaction, always before
        # a release reaches Dask and before any handler reads the journal.
        self._pending: list[tuple[int, str, str | None, dict[str, Any]]] = []
        self._admit_pending = False
        self._closing = False
        self._changed = asyncio.Event()

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            raise RuntimeError("the gym-tinker scheduler plugin has not started")
        return self._journal

    def _record(self, job_id: int, state: str, reason: str | None, **fields: Any) -> None:
        self._pending.append((job_id, state, reason, fields))
        # The next admission round commits it, together with that round's releases.
        self._admit_soon()

    def commit(self) -> None:
        """Write pending transitions to the journal, in one transaction (group commit)."""
        if self._pending and self._journal is not None:
            self._journal.transitions_many(self._pending)
            self._pending = []

    @property
    def changed(self) -> asyncio.Event:
        """Set at the next change of any job (state, events); then replaced by a fresh event."""
        return self._changed

    def cancel(self, job_id: int) -> str:
        """Cancel a queued job now, or ask a running one to stop; returns the state or "cancelling"."""
        job = self.jobs.get(job_id)
        if job is None:
            self.commit()
            row = self.journal.get_job(job_id)
            if row is None:
                raise JobNotFoundError(f"no job with id {job_id} (journal {self.journal_path})")
            return str(row["state"])  # already final: nothing to do
        if job.state is JobState.QUEUED:
            self._finish(job, JobState.CANCELLED, "cancelled by user while queued")
            self._admit_soon()
            return JobState.CANCELLED.value
        job.cancel_requested = True
        self._send_signal(job, "cancel")
        return "cancelling"

    def register_kind(self, name: str, body: str) -> str:
        """Register a job kind for the whole cluster (journaled)."""
        if not _KIND_RE.match(name):
            raise SpecError(f"job kind names look like 'grpo' or 'my-kind', got {name!r}")
        resolve_body(body)  # refuse what this cluster cannot import, before any job needs it
        self.journal.add_kind(name, body)
        self.kinds[name] = body
        self._admit_soon()
        return body

    def _open(self) -> None:
        self._changed = asyncio.Event()
        self._journal = Journal(self.journal_path)
        self._restore()

    def _restore(self) -> None:
        self.kinds.update(self.journal.kinds())
        moves: list[tuple[int, str, str | None, dict[str, Any]]] = []
        for row in self.journal.list_jobs(with_body=True):
            state = JobState(row["state"])
            if state.final:
                continue
            job = ActiveJob(
                id=row["id"],
                spec=row["spec"],
                body=row["body"],
                priority=row["priority"],
                attempts=row["attempts"],
                crashes=row["crashes"],
                preemptions=row["preemptions"],
                checkpoint_dir=row["checkpoint_dir"] or self._checkpoint_dir(row["id"], row["spec"]),
                queued_since=row["submitted"],
            )
            self.jobs[job.id] = job
            self._enqueue(job)
            if state is not JobState.QUEUED:
                moves.append(
                    (
                        job.id,
                        "queued",
                        f"scheduler restarted while {state.value}; resuming from last checkpoint",
                        {},
                    )
                )
        if moves:
            self.journal.transitions_many(moves)

    def _notify(self) -> None:
        """Wake every handler waiting for a change (each waits on the event current when it looked)."""
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _checkpoint_dir(self, job_id: int, spec: dict[str, Any]) -> str:
        base = Path(spec["output_dir"]) if spec.get("output_dir") else self.state_dir / "jobs" / str(job_id)
        return str(base / "checkpoint")

    # -- submission ----------------------------------------------------------------------------
    def submit_jobs(self, items: list[dict[str, Any]]) -> list[int]:
        """Validate, journal and queue jobs; all or none (a bad spec rejects the batch)."""
        rows = journal_rows(items, self.body_for, self.kinds)
        ids = self.journal.add_jobs(rows)
        now = time.time()
        for job_id, row in zip(ids, rows, strict=True):
            self.jobs[job_id] = ActiveJob(
                job_id, row["spec"], row["body"], row["priority"],
                checkpoint_dir=self._checkpoint_dir(job_id, row["spec"]), queued_since=now,
            )  # fmt: skip
            self._enqueue(self.jobs[job_id])
        self._admit_soon()
        return ids

    def body_for(self, kind: str) -> str | None:
        return self.kinds.get(kind) or body_ref_for(kind)

    # -- admission -----------------------------------------------------------------------------
    def _admit_soon(self) -> None:
        if not self._admit_pending and not self._closing:
            self._admit_pending = True
            asyncio.get_running_loop().call_soon(self._admit)

    def _enqueue(self, job: ActiveJob) -> None:
        bisect.insort(self._queue, (-job.priority, job.id))

    def _dequeue(self, job: ActiveJob) -> None:
        i = bisect.bisect_left(self._queue, (-job.priority, job.id))
        if i < len(self._queue) and self._queue[i] == (-job.priority, job.id):
            del self._queue[i]

    def _waiting(self, now: float, failures: list[ActiveJob]) -> Iterator[Waiting]:
        """Queued jobs in admission order, built lazily (admission usually stops early)."""
        order = list(self._queue)
        aging = self.aging_interval
        if aging:
            order.sort(key=lambda e: (e[0] - int((now - self.jobs[e[1]].queued_since) // aging), e[1]))
        for _, job_id in order:
            job = self.jobs[job_id]
            if job.body is None:
                job.body = self.body_for(job.spec["kind"])
            if job.body is None:
                failures.append(job)
                continue
            yield Waiting(job.id, job.priority, job.id, job.demand, job.bypassed, now - job.queued_since)

    def _admit(self) -> None:
        self._admit_pending = False
        try:
            if self.client is not None and not self._closing:
                self._admission_round()
        finally:
            self.commit()

    def _admission_round(self) -> None:
        now = time.time()
        failures: list[ActiveJob] = []
        placed = [
            Placed(job.id, job.worker, job.priority, job.demand, job.spec["preemptible"],
                   job.released_at, stopping=job.stop_signal is not None)
            for job in self._running.values() if job.worker is not None
        ]  # fmt: skip
        capacity = {
            addr: {SLOTS: float(ws.nthreads), **ws.resources}
            for addr, ws in self.scheduler.workers.items()
            # A new worker reports "init" and then "running" with no plugin hook in between.
            if ws.status.name in ("init", "running")
        }
        plan = plan_admission(
            self._waiting(now, failures), capacity, placed,
            max_bypass=self.max_bypass, aging_interval=self.aging_interval,
        )  # fmt: skip
        for job in failures:
            reason = (
                f"no job body is registered for kind {job.spec['kind']!r} on this cluster; register one with "
                f"executors.register_job_kind({job.spec['kind']!r}, body) in the submitting process "
                f"or TinkerClient.register_kind"
            )
            self._finish(job, JobState.FAILED, reason, error=reason)
        for job_id in plan.bypassed:
            self.jobs[job_id].bypassed += 1
        for job_id, reason in plan.unplaceable.items():
            self.jobs[job_id].waiting_reason = reason
        for job_id in plan.preempt:
            self._send_signal(self.jobs[job_id], "preempt")
        if plan.release:
            self._release([(self.jobs[j], w) for j, w in plan.release])

    def _release(self, pairs: list[tuple[ActiveJob, str]]) -> None:
        assert self.client is not None
        now = time.time()
        changes = []
        for job, worker in pairs:
            job.attempts += 1
            changes.append(
                (job.id, "running", f"released to {worker}",
                 {"attempts": job.attempts, "worker": worker, "checkpoint_dir": job.checkpoint_dir})
            )  # fmt: skip
        self._pending.extend(changes)
        self.commit()  # journaled before Dask sees the release
        for job, worker in pairs:
            self._tune_stream(worker)
            self._dequeue(job)
            self._running[job.id] = job
            job.state, job.worker, job.released_at = JobState.RUNNING, worker, now
            job.key = f"{KEY_PREFIX}{job.id}-attempt-{job.attempts}"
            job.waiting_reason, job.stop_signal, job.started_at = None, None, None
            resources = job.spec.get("resources") or None
            job.future = self.client.submit(
                run_attempt, job.id, job.attempts, job.key, job.spec, job.body, job.checkpoint_dir,
                key=job.key, workers=[worker], allow_other_workers=False, resources=resources,
                priority=job.priority, pure=False, retries=0,
            )  # fmt: skip
        self._notify()

    def _on_outcome(self, job_id: int, key: str, outcome: dict[str, Any]) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.key != key or job.state is not JobState.RUNNING:
            return  # a stale attempt already accounted for
        self._drop_future(job, cancel=outcome["outcome"] == "lost")
        kind = outcome["outcome"]
        if kind == "succeeded":
            self._finish(job, JobState.SUCCEEDED, None, result=outcome.get("result"))
        elif kind == "failed":
            self._finish(
                job,
                JobState.FAILED,
                outcome["error"],
                error=outcome["error"],
                traceback=outcome.get("traceback"),
            )
        elif kind == "cancelled" or (job.cancel_requested and kind == "preempted"):
            self._finish(job, JobState.CANCELLED, "cancelled by user while running")
        elif kind == "preempted":
            job.preemptions += 1
            self._record(
                job.id, "preempted", "yielded to a higher-priority job at a step boundary",
                preemptions=job.preemptions, worker=None,
            )  # fmt: skip
            self._record(job.id, "queued", "re-queued after preemption; will resume from its checkpoint")
            self._requeue(job)
        else:
            job.crashes += 1
            limit = job.spec["max_attempts"]
            if job.crashes >= limit:
                reason = (
                    f"worker died during {job.crashes} attempts (max_attempts={limit}); "
                    f"last: {outcome.get('error')}"
                )
                self._finish(job, JobState.FAILED, reason, error=reason, crashes=job.crashes)
            else:
                reason = (
                    f"attempt {job.attempts} lost ({outcome.get('error')}); resuming from last checkpoint"
                )
                self._record(job.id, "queued", reason, crashes=job.crashes, worker=None)
                self._requeue(job)
        self._admit_soon()

    def _drop_future(self, job: ActiveJob, cancel: bool) -> None:
        future, job.future = job.future, None
        if future is None or self.client is None:
            return
        if cancel:
            # A lost attempt's task may sit in Dask waiting for its dead worker: remove it.
            self._spawn(self.client.cancel([future]))
        else:
            future.release()

    def _requeue(self, job: ActiveJob) -> None:
        self._running.pop(job.id, None)
        job.state, job.key, job.worker, job.future = JobState.QUEUED, None, None, None
        job.stop_signal, job.bypassed, job.queued_since = None, 0, time.time()
        self._enqueue(job)
        self._notify()

    def _finish(self, job: ActiveJob, state: JobState, reason: str | None, **fields: Any) -> None:
        fields.setdefault("finished", time.time())
        if job.started_at is not None:
            fields.setdefault("started", job.started_at)
        self._record(job.id, state.value, reason, **fields)
        self._drop_future(job, cancel=False)
        del self.jobs[job.id]
        self._running.pop(job.id, None)
        self._dequeue(job)
        job.state = state
        self._notify()

    # -- signals, workers and events -----------------------------------------------------------
    def _send_signal(self, job: ActiveJob, signal: str) -> None:
        if job.key is None or job.worker is None or job.stop_signal == "cancel":
            return
        job.stop_signal = signal
        self._event_buffer.append((job.id, time.time(), job.attempts, "signal", None, {"signal": signal}))
        self._spawn(self._deliver(job.worker, job.key, signal))

    async def _deliver(self, worker: str, key: str, signal: str) -> None:
        assert self.client is not None
        with contextlib.suppress(Exception):  # a dead worker is handled by remove_worker
            await self.client.run(deliver_signal, key, signal, workers=[worker], on_error="ignore")

    def _tune_stream(self, worker: str) -> None:
        # Every job start waits on the scheduler-to-worker stream, batched for 5 ms by default;
        # 1 ms keeps submit-to-start low while still coalescing bursts.
        comm = getattr(self.scheduler, "stream_comms", {}).get(worker)
        if comm is not None and hasattr(comm, "interval"):
            comm.interval = min(comm.interval, SEND_INTERVAL)

    def flush_events(self) -> None:
        if self._event_buffer and self._journal is not None:
            batch, self._event_buffer = self._event_buffer, []
            self._journal.add_events(batch)
            self._notify()
