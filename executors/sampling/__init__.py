"""Samplers that turn models into policies: HF transformers, in-process vLLM, OpenAI-compatible HTTP.

Every sampler implements :class:`gym_tinker.policy.ChatPolicy` and, where the backend exposes
token ids, :class:`gym_tinker.policy.TokenSampler`. Names are imported on first use, so
``import executors.sampling`` pulls in neither torch nor httpx.

Example:
    >>> import executors.sampling as sampling
    >>> sampling.HFSampler.__name__
    'HFSampler'
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["AdapterError", "HFSampler", "OpenAISampler", "VLLMSampler"]

_WHERE = {
    "AdapterError": "executors.sampling.hf",
    "HFSampler": "executors.sampling.hf",
    "OpenAISampler": "executors.sampling.openai_http",
    "VLLMSampler": "executors.sampling.vllm",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
