"""Errors raised by the executors runtime, and the control exceptions job bodies use to yield."""

from __future__ import annotations

__all__ = [
    "ConnectError",
    "JobCancelled",
    "JobControl",
    "JobFailedError",
    "JobNotFoundError",
    "JobPreempted",
    "SpecError",
    "TinkerError",
]


class TinkerError(Exception):
    """Base class of every error the executors runtime raises on purpose."""


class SpecError(TinkerError, ValueError):
    """A job spec is invalid; the message names the field, the value and what was expected."""


class JobNotFoundError(TinkerError, KeyError):
    """No job with the given id exists in the scheduler's journal."""

    def __str__(self) -> str:
        # KeyError quotes its argument; the message is meant for people.
        return str(self.args[0]) if self.args else "job not found"


class ConnectError(TinkerError, ConnectionError):
    """The scheduler could not be reached, or it has no gym-tinker plugin installed."""


class JobFailedError(TinkerError, RuntimeError):
    """``JobHandle.result()`` was called on a job that failed or was cancelled."""


class JobControl(Exception):
    """Raised inside a job body at a step boundary to stop it; never reported as a failure.

    Subclasses take no constructor arguments so they pickle across Dask processes unchanged.
    """


class JobPreempted(JobControl):
    """The scheduler asked this job to yield to a more urgent one; it goes back to the queue."""


class JobCancelled(JobControl):
    """A user cancelled this job; it ends in state ``cancelled``."""
