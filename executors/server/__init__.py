"""The OpenAI-compatible server over HFSampler (FastAPI), with request batching across clients.

Example:
    >>> from executors.server import create_app, BatchingEngine
    >>> callable(create_app), BatchingEngine.__name__
    (True, 'BatchingEngine')
"""

from executors.server.app import create_app
from executors.server.batching import BatchingEngine
from executors.server.schemas import APIError

__all__ = ["APIError", "BatchingEngine", "create_app"]
