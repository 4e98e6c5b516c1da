"""The gym-tinker scheduler: a Dask scheduler plugin with our queue, admission, preemption and journal.

Install it with ``dask scheduler --preload executors.plugin`` (options:
``--gym-tinker-journal PATH``, ``--gym-tinker-state-dir DIR``, ``--gym-tinker-max-bypass N``,
``--gym-tinker-aging SECONDS``), with ``gym-tinker cluster up``, or implicitly through
``executors.connect()``. Clients talk to it through the ``gym_tinker_*`` scheduler handlers.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from distributed import Client, Future
from distributed.diagnostics.plugin import SchedulerPlugin

from executors.admission import SLOTS, Placed, Waiting, plan_admission
from executors.context import EVENT_TOPIC, deliver_signal
from executors.errors import JobNotFoundError, SpecError
from executors.journal import Journal
from executors.kinds import BUILTIN_KINDS, body_ref_for
from executors.plugin_handlers import HandlersMixin
from executors.runner import run_attempt
from executors.spec import STANDARD_KINDS, JobSpec, JobState

__all__ = ["PLUGIN_NAME", "PriorityScheduler", "dask_setup", "default_state_dir"]

logger = logging.getLogger("executors.scheduler")
PLUGIN_NAME = "gym-tinker"
_FLUSH_SECONDS = 0.1
_KEY_PREFIX = "gym-tinker-job-"
_SEND_INTERVAL = 0.001
_ADMIT_EVERY = 5  # flush ticks between periodic admission rounds


def default_state_dir() -> Path:
    """``$GYM_TINKER_STATE_DIR``, else ``~/.gym_tinker``: where the journal and checkpoints live."""
    return Path(os.environ.get("GYM_TINKER_STATE_DIR") or Path.home() / ".gym_tinker")


@dataclass
class _Job:
    id: int
    spec: dict[str, Any]
    body: str | None
    priority: int
    state: JobState = JobState.QUEUED
    attempts: int = 0
    crashes: int = 0
    preemptions: int = 0
    checkpoint_dir: str = ""
    queued_since: float = field(default_factory=time.time)
    bypassed: int = 0
    key: str | None = None
    worker: str | None = None
    future: Future | None = None
    released_at: float = 0.0
    started_at: float | None = None
    stop_signal: str | None = None
    checkpointed_at: float | None = None
    cancel_requested: bool = False
    waiting_reason: str | None = None

    @property
    def demand(self) -> dict[str, float]:
        return {SLOTS: 1.0, **self.spec.get("resources", {})}


class PriorityScheduler(HandlersMixin, SchedulerPlugin):
    """The central job scheduler of one Dask cluster (see ``docs/scheduler.md``).

    Args:
        journal: SQLite journal path; default ``<state_dir>/journal.sqlite``.
        state_dir: default home of the journal and of checkpoints of jobs without ``output_dir``.
        max_bypass: how often a waiting job may be passed over before it reserves room.
        aging_interval: seconds of waiting worth one priority point (None: no aging).

    >>> PriorityScheduler(journal=":memory:").name
    'gym-tinker'
    """

    name = PLUGIN_NAME

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
        self.jobs: dict[int, _Job] = {}
        # Queued jobs as (-priority, id), kept sorted: admission order without aging.
        self._queue: list[tuple[int, int]] = []
        self._running: dict[int, _Job] = {}
        self.kinds: dict[str, str] = {}
        self.client: Client | None = None
        self._journal: Journal | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        self._event_buffer: list[tuple[int, float, int | None, str, int | None, dict[str, Any]]] = []
        self._admit_pending = False
        self._closing = False
        self._changed = asyncio.Event()

    def __getstate__(self) -> dict[str, Any]:
        # Sent to the scheduler by Client.register_plugin before start(); only config travels.
        return {k: getattr(self, k) for k in ("state_dir", "journal_path", "max_bypass", "aging_interval")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["journal_path"], state["state_dir"], state["max_bypass"], state["aging_interval"])  # type: ignore[misc]

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            raise RuntimeError("the gym-tinker scheduler plugin has not started")
        return self._journal

    # -- life cycle --------------------------------------------------------------------------
    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self._changed = asyncio.Event()
        self._journal = Journal(self.journal_path)
        self._restore()
        self.register_handlers(scheduler)
        # An in-process listener keeps our own client off the network (and outside TLS).
        await scheduler.listen("inproc://")
        self._spawn(self._connect(scheduler.listeners[-1].contact_address))
        self._spawn(self._flush_loop())
        logger.info("gym-tinker scheduler: journal %s, %d active jobs", self.journal_path, len(self.jobs))

    async def _connect(self, address: str) -> None:
        # A preloaded plugin starts before the scheduler accepts clients: wait until it does.
        while self.scheduler.status.name != "running":
            await asyncio.sleep(0.01)
        client = await Client(address, asynchronous=True, name="gym-tinker-scheduler")
        # The client batches messages for 10 ms by default; releases are latency-critical.
        client.scheduler_comm.interval = _SEND_INTERVAL
        self.client = client
        for worker in self.scheduler.workers:
            self._tune_stream(worker)
        self._admit_soon()

    async def before_close(self) -> None:
        # Workers leaving because the cluster shuts down are not job failures: jobs still
        # running stay "running" in the journal and resume when a scheduler restarts on it.
        self._closing = True

    async def close(self) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self._journal is not None:
            self._flush_events()
            self._journal.close()
            self._journal = None

    def _restore(self) -> None:
        self.kinds.update(self.journal.kinds())
        moves = []
        for row in self.journal.list_jobs(with_body=True):
            state = JobState(row["state"])
            if state.final:
                continue
            job = _Job(
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
                moves.append((job.id, "queued", f"scheduler restarted while {state.value}; resuming from last checkpoint", {}))
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
        rows = []
        for i, item in enumerate(items):
            where = f" (job {i + 1} of {len(items)})" if len(items) > 1 else ""
            try:
                spec = JobSpec(**item["spec"])
            except SpecError as exc:
                raise SpecError(f"{exc}{where}") from None
            if item.get("priority") is not None:
                spec = JobSpec(**{**spec.model_dump(), "priority": item["priority"]})
            body = item.get("body") or self.body_for(spec.kind)
            if body is None and spec.kind not in STANDARD_KINDS:
                known = sorted({*STANDARD_KINDS, *BUILTIN_KINDS, *self.kinds})
                raise SpecError(f"kind: unknown job kind {spec.kind!r}{where}; known kinds: {', '.join(known)}")
            dumped = spec.model_dump(mode="json")
            rows.append(
                {"kind": spec.kind, "name": spec.name, "user": spec.user, "priority": spec.priority, "spec": dumped, "body": body}
            )
        ids = self.journal.add_jobs(rows)
        now = time.time()
        for job_id, row in zip(ids, rows, strict=True):
            self.jobs[job_id] = _Job(
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

    def _enqueue(self, job: _Job) -> None:
        bisect.insort(self._queue, (-job.priority, job.id))

    def _dequeue(self, job: _Job) -> None:
        i = bisect.bisect_left(self._queue, (-job.priority, job.id))
        if i < len(self._queue) and self._queue[i] == (-job.priority, job.id):
            del self._queue[i]

    def _waiting(self, now: float, failures: list[_Job]) -> Iterator[Waiting]:
        """Queued jobs in admission order, built lazily (admission usually stops early)."""
        order = list(self._queue)
        if self.aging_interval:
            order.sort(key=lambda e: (e[0] - int((now - self.jobs[e[1]].queued_since) // self.aging_interval), e[1]))
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
        if self.client is None or self._closing:
            return
        now = time.time()
        failures: list[_Job] = []
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

    def _release(self, pairs: list[tuple[_Job, str]]) -> None:
        assert self.client is not None
        now = time.time()
        changes = []
        for job, worker in pairs:
            job.attempts += 1
            changes.append(
                (job.id, "running", f"released to {worker}",
                 {"attempts": job.attempts, "worker": worker, "checkpoint_dir": job.checkpoint_dir})
            )  # fmt: skip
        self.journal.transitions_many(changes)
        for job, worker in pairs:
            self._tune_stream(worker)
            self._dequeue(job)
            self._running[job.id] = job
            job.state, job.worker, job.released_at = JobState.RUNNING, worker, now
            job.key = f"{_KEY_PREFIX}{job.id}-attempt-{job.attempts}"
            job.waiting_reason, job.stop_signal, job.started_at = None, None, None
            resources = job.spec.get("resources") or None
            job.future = self.client.submit(
                run_attempt, job.id, job.attempts, job.key, job.spec, job.body, job.checkpoint_dir,
                key=job.key, workers=[worker], allow_other_workers=False, resources=resources,
                priority=job.priority, pure=False, retries=0,
            )  # fmt: skip
        self._notify()

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        # Normal endings arrive as "end" events (see log_event); this catches an attempt whose
        # task itself erred, e.g. a worker that cannot import executors.
        if finish == "erred" and isinstance(key, str) and key.startswith(_KEY_PREFIX):
            job_id = int(key[len(_KEY_PREFIX) :].split("-", 1)[0])
            error = str(kwargs.get("exception_text") or "the Dask task erred")
            self._on_outcome(job_id, key, {"outcome": "failed", "error": error, "traceback": kwargs.get("traceback_text")})

    def _on_outcome(self, job_id: int, key: str, outcome: dict[str, Any]) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.key != key or job.state is not JobState.RUNNING:
            return  # a stale attempt already accounted for
        self._drop_future(job, cancel=outcome["outcome"] == "lost")
        kind = outcome["outcome"]
        if kind == "succeeded":
            self._finish(job, JobState.SUCCEEDED, None, result=outcome.get("result"))
        elif kind == "failed":
            self._finish(job, JobState.FAILED, outcome["error"], error=outcome["error"], traceback=outcome.get("traceback"))
        elif kind == "cancelled" or (job.cancel_requested and kind == "preempted"):
            self._finish(job, JobState.CANCELLED, "cancelled by user while running")
        elif kind == "preempted":
            job.preemptions += 1
            self.journal.transitions_many([
                (job.id, "preempted", "yielded to a higher-priority job at a step boundary",
                 {"preemptions": job.preemptions, "worker": None}),
                (job.id, "queued", "re-queued after preemption; will resume from its checkpoint", {}),
            ])  # fmt: skip
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
                reason = f"attempt {job.attempts} lost ({outcome.get('error')}); resuming from last checkpoint"
                self.journal.transition(job.id, "queued", reason, crashes=job.crashes, worker=None)
                self._requeue(job)
        self._admit_soon()

    def _drop_future(self, job: _Job, cancel: bool) -> None:
        future, job.future = job.future, None
        if future is None or self.client is None:
            return
        if cancel:
            # A lost attempt's task may sit in Dask waiting for its dead worker: remove it.
            self._spawn(self.client.cancel([future]))
        else:
            future.release()

    def _requeue(self, job: _Job) -> None:
        self._running.pop(job.id, None)
        job.state, job.key, job.worker, job.future = JobState.QUEUED, None, None, None
        job.stop_signal, job.bypassed, job.queued_since = None, 0, time.time()
        self._enqueue(job)
        self._notify()

    def _finish(self, job: _Job, state: JobState, reason: str | None, **fields: Any) -> None:
        fields.setdefault("finished", time.time())
        if job.started_at is not None:
            fields.setdefault("started", job.started_at)
        self.journal.transition(job.id, state.value, reason, **fields)
        self._drop_future(job, cancel=False)
        del self.jobs[job.id]
        self._running.pop(job.id, None)
        self._dequeue(job)
        job.state = state
        self._notify()

    # -- signals, workers and events -----------------------------------------------------------
    def _send_signal(self, job: _Job, signal: str) -> None:
        if job.key is None or job.worker is None or job.stop_signal == "cancel":
            return
        job.stop_signal = signal
        self._event_buffer.append((job.id, time.time(), job.attempts, "signal", None, {"signal": signal}))
        self._spawn(self._deliver(job.worker, job.key, signal))

    async def _deliver(self, worker: str, key: str, signal: str) -> None:
        assert self.client is not None
        with contextlib.suppress(Exception):  # a dead worker is handled by remove_worker
            await self.client.run(deliver_signal, key, signal, workers=[worker], on_error="ignore")

    def add_worker(self, scheduler: Any, worker: str) -> None:
        self._admit_soon()

    def _tune_stream(self, worker: str) -> None:
        # Every job start waits on the scheduler-to-worker stream, batched for 5 ms by default;
        # 1 ms keeps submit-to-start low while still coalescing bursts.
        comm = getattr(self.scheduler, "stream_comms", {}).get(worker)
        if comm is not None and hasattr(comm, "interval"):
            comm.interval = min(comm.interval, _SEND_INTERVAL)

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        if self._closing:
            return
        for job in list(self._running.values()):
            if job.worker == worker and job.key is not None:
                self._on_outcome(job.id, job.key, {"outcome": "lost", "error": f"worker {worker} left the cluster"})
        self._admit_soon()

    def log_event(self, topic: str, msg: Any) -> None:
        if topic != EVENT_TOPIC or not isinstance(msg, dict):
            return
        job = self.jobs.get(msg.get("job", -1))
        if job is None or job.key != msg.get("key"):
            # An attempt this scheduler does not run (e.g. one from before a restart): stop it.
            if msg.get("type") == "start" and msg.get("worker"):
                self._spawn(self._deliver(msg["worker"], msg["key"], "cancel"))
            return
        kind = msg.get("type")
        if kind == "start":
            job.started_at = msg["ts"]
            if job.stop_signal is not None:
                self._spawn(self._deliver(msg["worker"], msg["key"], job.stop_signal))
        elif kind == "log":
            self._event_buffer.append((job.id, msg["ts"], msg["attempt"], "log", None, {"message": msg["message"]}))
        elif kind == "metric":
            self._event_buffer.append((job.id, msg["ts"], msg["attempt"], "metric", msg.get("step"), msg["metrics"]))
        elif kind == "checkpoint":
            job.checkpointed_at = msg["ts"]
        elif kind == "end":
            self._on_outcome(job.id, msg["key"], msg["outcome"])
        if kind == "start":
            where = {"worker": msg.get("worker"), "pid": msg.get("pid"), "host": msg.get("host")}
            self._event_buffer.append((job.id, msg["ts"], msg["attempt"], "start", None, where))

    async def _flush_loop(self) -> None:
        ticks = 0
        while True:
            await asyncio.sleep(_FLUSH_SECONDS)
            self._flush_events()
            ticks += 1
            if self._queue and ticks % _ADMIT_EVERY == 0:
                # Safety net for changes no hook reports (a worker un-pausing) and for aging.
                self._admit_soon()

    def _flush_events(self) -> None:
        if self._event_buffer and self._journal is not None:
            batch, self._event_buffer = self._event_buffer, []
            self._journal.add_events(batch)
            self._notify()


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--gym-tinker-journal", default=None, envvar="GYM_TINKER_JOURNAL", help="SQLite journal path.")
@click.option("--gym-tinker-state-dir", default=None, envvar="GYM_TINKER_STATE_DIR", help="State directory.")
@click.option("--gym-tinker-max-bypass", default=16, type=int, show_default=True, help="Anti-starvation bound.")
@click.option("--gym-tinker-aging", default=None, type=float, help="Seconds of waiting per priority point.")
def dask_setup(
    scheduler: Any, gym_tinker_journal: str | None, gym_tinker_state_dir: str | None,
    gym_tinker_max_bypass: int, gym_tinker_aging: float | None,
) -> None:  # fmt: skip
    """Dask preload hook: ``dask scheduler --preload executors.plugin`` installs the scheduler."""
    plugin = PriorityScheduler(gym_tinker_journal, gym_tinker_state_dir, gym_tinker_max_bypass, gym_tinker_aging)
    scheduler.add_plugin(plugin, name=PLUGIN_NAME)
