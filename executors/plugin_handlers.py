"""The RPC handlers the scheduler plugin registers on the Dask scheduler (``gym_tinker_*``)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from executors import errors
from executors.errors import JobNotFoundError, SpecError, TinkerError
from executors.spec import JobState

if TYPE_CHECKING:
    from executors.scheduler import JobScheduler

__all__ = ["HANDLERS", "SchedulerHandlers", "unwrap_reply"]

HANDLERS = ("ping", "submit", "job", "jobs", "cancel", "wait", "events", "register_kind")
"""Handler names; each is registered on the scheduler as ``gym_tinker_<name>``."""

PROTOCOL_VERSION = 1


def _reply(handler: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a handler so expected errors travel as data (the client re-raises them) instead of
    being logged by Dask as handler crashes."""

    async def wrapped(**kwargs: Any) -> dict[str, Any]:
        try:
            result = handler(**kwargs)
            if inspect.isawaitable(result):
                result = await result
        except TinkerError as exc:
            return {"error": type(exc).__name__, "message": str(exc)}
        # JSON keeps lists as lists (Dask's msgpack turns them into tuples) and matches the journal.
        return {"ok": json.dumps(result)}

    wrapped.__name__ = handler.__name__
    return wrapped


def unwrap_reply(reply: dict[str, Any]) -> Any:
    """The value of a handler reply, or the error it carries raised again."""
    if "error" in reply:
        cls = getattr(errors, reply["error"], None)
        if not (isinstance(cls, type) and issubclass(cls, TinkerError)):
            cls = TinkerError
        raise cls(reply["message"])
    return json.loads(reply["ok"])


class SchedulerHandlers:
    """The handlers answering clients on behalf of one ``JobScheduler``."""

    def __init__(self, sched: JobScheduler) -> None:
        self.sched = sched

    def register(self, scheduler: Any) -> None:
        """Install every handler on the Dask scheduler as ``gym_tinker_<name>``."""
        for name in HANDLERS:
            scheduler.handlers[f"gym_tinker_{name}"] = _reply(getattr(self, f"_h_{name}"))

    def _h_ping(self) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "journal": self.sched.journal_path,
            "active": len(self.sched.jobs),
        }

    def _h_submit(self, jobs: list[dict[str, Any]]) -> list[int]:
        return self.sched.submit_jobs(jobs)

    def _h_job(self, job_id: int) -> dict[str, Any]:
        self.sched.commit()
        row = self.sched.journal.get_job(int(job_id))
        if row is None:
            raise JobNotFoundError(f"no job with id {job_id} (journal {self.sched.journal_path})")
        row["transitions"] = self.sched.journal.transitions(row["id"])
        live = self.sched.jobs.get(row["id"])
        if live is not None:
            row.update(
                bypassed=live.bypassed,
                waiting_reason=live.waiting_reason,
                stop_signal=live.stop_signal,
                started=live.started_at if live.started_at is not None else row["started"],
            )
        return row

    def _h_jobs(
        self, state: str | None = None, user: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        if state is not None and state not in {s.value for s in JobState}:
            raise SpecError(f"state must be one of {[s.value for s in JobState]}, got {state!r}")
        self.sched.commit()
        return self.sched.journal.list_jobs(state=state, user=user, limit=limit)

    def _h_cancel(self, job_id: int) -> str:
        return self.sched.cancel(int(job_id))

    async def _h_wait(self, job_ids: list[int], timeout: float | None = None) -> list[tuple[int, str]]:
        """Wait until every job is final or ``timeout`` seconds passed; return their states."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            event = self.sched.changed
            pending = [j for j in job_ids if j in self.sched.jobs]
            if not pending:
                break
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                break
        self.sched.commit()
        states = []
        for j in job_ids:
            live = self.sched.jobs.get(j)
            if live is not None:
                states.append((j, live.state.value))
            else:
                row = self.sched.journal.get_job(j)
                if row is None:
                    raise JobNotFoundError(f"no job with id {j} (journal {self.sched.journal_path})")
                states.append((j, row["state"]))
        return states

    async def _h_events(
        self, job_id: int, after: int = 0, type: str | None = None, timeout: float = 0.0
    ) -> dict[str, Any]:
        """Events newer than ``after``; waits up to ``timeout`` seconds for some if there are none."""
        deadline = time.monotonic() + timeout
        while True:
            event = self.sched.changed
            self.sched.commit()
            self.sched.flush_events()
            found = self.sched.journal.events(int(job_id), type, after)
            live = self.sched.jobs.get(int(job_id))
            if live is not None:
                state = live.state.value
            else:
                row = self.sched.journal.get_job(int(job_id))
                if row is None:
                    raise JobNotFoundError(f"no job with id {job_id} (journal {self.sched.journal_path})")
                state = row["state"]
            remaining = deadline - time.monotonic()
            if found or live is None or remaining <= 0:
                return {"events": found, "state": state}
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)

    def _h_register_kind(self, name: str, body: str) -> str:
        return self.sched.register_kind(name, body)
