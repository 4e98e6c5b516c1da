"""executors: the Dask runtime of gym-tinker: the priority job scheduler, its client and CLI.

Importing it is cheap (no Dask, no torch); the names below load on first use::

    >>> import executors
    >>> executors.JobSpec(kind="steps", params={"steps": 2}).kind
    'steps'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from executors.client import JobHandle, TinkerClient, connect
    from executors.context import JobContext
    from executors.errors import (
        ConnectError,
        JobCancelled,
        JobFailedError,
        JobNotFoundError,
        JobPreempted,
        SpecError,
        TinkerError,
    )
    from executors.kinds import job_kinds, register_job_kind
    from executors.spec import JobSpec, JobState, LoraConfig

__all__ = [
    "ConnectError",
    "JobCancelled",
    "JobContext",
    "JobFailedError",
    "JobHandle",
    "JobNotFoundError",
    "JobPreempted",
    "JobSpec",
    "JobState",
    "LoraConfig",
    "SpecError",
    "TinkerClient",
    "TinkerError",
    "connect",
    "job_kinds",
    "register_job_kind",
]

_LAZY = {
    "connect": "executors.client",
    "TinkerClient": "executors.client",
    "JobHandle": "executors.client",
    "JobContext": "executors.context",
    "JobSpec": "executors.spec",
    "JobState": "executors.spec",
    "LoraConfig": "executors.spec",
    "register_job_kind": "executors.kinds",
    "job_kinds": "executors.kinds",
    **{
        name: "executors.errors"
        for name in (
            "ConnectError",
            "JobCancelled",
            "JobFailedError",
            "JobNotFoundError",
            "JobPreempted",
            "SpecError",
            "TinkerError",
        )
    },
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'executors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
