"""The scheduler's in-memory record of an active (queued or running) job, and the state directory."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributed import Future

from executors.admission import SLOTS
from executors.errors import SpecError
from executors.kinds import BUILTIN_KINDS
from executors.spec import STANDARD_KINDS, JobSpec, JobState

__all__ = ["ActiveJob", "default_state_dir", "journal_rows"]


def default_state_dir() -> Path:
    """``$GYM_TINKER_STATE_DIR``, else ``~/.gym_tinker``: where the journal and checkpoints live.

    >>> default_state_dir().name in (".gym_tinker", os.path.basename(os.environ.get("GYM_TINKER_STATE_DIR", "")))
    True
    """
    return Path(os.environ.get("GYM_TINKER_STATE_DIR") or Path.home() / ".gym_tinker")


@dataclass
class ActiveJob:
    """What the scheduler tracks for a job between submission and its final state."""

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


def journal_rows(
    items: list[dict[str, Any]], body_for: Callable[[str], str | None], cluster_kinds: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """Validate submitted ``{"spec", "body", "priority"}`` items into journal rows; all or none.

    Raises:
        SpecError: a spec is invalid, or its kind is neither standard nor has a body.

    >>> from executors.kinds import body_ref_for
    >>> [(row["priority"], row["body"]) for row in journal_rows([{"spec": {"kind": "noop"}, "priority": 4}], body_ref_for)]
    [(4, 'executors.bodies:noop_body')]
    >>> journal_rows([{"spec": {"kind": "grop"}}], body_ref_for)
    Traceback (most recent call last):
    ...
    executors.errors.SpecError: kind: unknown job kind 'grop'; known kinds: eval, grpo, noop, ppo, sample, selfplay, sft, steps
    """
    rows: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where = f" (job {i + 1} of {len(items)})" if len(items) > 1 else ""
        try:
            spec = JobSpec(**item["spec"])
            if item.get("priority") is not None:
                spec = JobSpec(**{**spec.model_dump(), "priority": item["priority"]})
        except SpecError as exc:
            raise SpecError(f"{exc}{where}") from None
        body = item.get("body") or body_for(spec.kind)
        if body is None and spec.kind not in STANDARD_KINDS:
            known = ", ".join(sorted({*STANDARD_KINDS, *BUILTIN_KINDS, *cluster_kinds}))
            raise SpecError(f"kind: unknown job kind {spec.kind!r}{where}; known kinds: {known}")
        rows.append(
            {"kind": spec.kind, "name": spec.name, "user": spec.user, "priority": spec.priority,
             "spec": spec.model_dump(mode="json"), "body": body}
        )  # fmt: skip
    return rows
