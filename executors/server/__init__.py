"""The OpenAI-compatible server over HFSampler (FastAPI), with request batching across clients.

The names below are imported on first use, so that ``gym-tinker``'s command line can read the
server's settings (:mod:`executors.server.guard`) without loading the server.

Example:
    >>> from executors.server import create_app, BatchingEngine
    >>> callable(create_app), BatchingEngine.__name__
    (True, 'BatchingEngine')
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from executors.server.app import create_app
    from executors.server.batching import BatchingEngine
    from executors.server.errors import APIError

__all__ = ["APIError", "BatchingEngine", "create_app"]

_HOMES = {
    "APIError": "executors.server.errors",
    "BatchingEngine": "executors.server.batching",
    "create_app": "executors.server.app",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'executors.server' has no attribute {name!r}")
