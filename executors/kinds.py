"""The job-kind registry: which body runs a job of a given kind.

A body is referenced by an import path (``"package.module:function"``), so workers and a
restarted scheduler can find it again; bodies that cannot be imported by name (defined in
``__main__`` or a notebook) travel by value, pickled with cloudpickle.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Callable
from typing import Any

from executors.errors import SpecError
from executors.spec import _KIND_RE

__all__ = ["BUILTIN_KINDS", "body_ref_for", "job_kinds", "register_job_kind", "resolve_body"]

BUILTIN_KINDS: dict[str, str] = {
    "steps": "executors.bodies:steps_body",
    "noop": "executors.bodies:noop_body",
    "sample": "executors.rollout_jobs:sample_body",
    "eval": "executors.rollout_jobs:eval_body",
    "grpo": "executors.training.grpo:grpo_body",
    "ppo": "executors.training.ppo:ppo_body",
    "sft": "executors.training.sft:sft_body",
    "selfplay": "executors.training.selfplay:selfplay_body",
}
"""Kinds whose bodies ship with executors: rollouts, training, and small bodies for tests and benchmarks."""

_PICKLE_PREFIX = "pickle:"
_registry: dict[str, str] = dict(BUILTIN_KINDS)


def _import_path(obj: Any) -> str | None:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<locals>" in qualname:
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return f"{module}:{qualname}" if found is obj else None


def register_job_kind(name: str, body: Callable[..., Any] | type | str, *, replace: bool = True) -> str:
    """Register the body that runs jobs of kind ``name`` in this process.

    ``body`` is a function ``body(ctx: JobContext) -> result``, a class whose no-argument
    instances have ``run(ctx)``, or an import path ``"module:attr"`` naming either. Jobs submitted
    from this process carry the reference, so workers run it without registering it themselves.

    Returns:
        The reference stored for the body: an import path, or ``"pickle:..."`` when the body
        cannot be imported by name.

    >>> register_job_kind("countdown-steps", "executors.bodies:steps_body")
    'executors.bodies:steps_body'
    >>> body_ref_for("countdown-steps")
    'executors.bodies:steps_body'
    """
    if not isinstance(name, str) or not _KIND_RE.match(name):
        raise SpecError(f"job kind names look like 'grpo' or 'my-kind', got {name!r}")
    if not replace and name in _registry:
        raise SpecError(f"job kind {name!r} is already registered as {_registry[name]!r}")
    if isinstance(body, str):
        resolve_body(body)  # fail now, not on a worker an hour later
        ref = body
    elif callable(body):
        ref = _import_path(body) or _pickle_ref(body)
    else:
        raise SpecError(
            f"a job body must be a callable, a class or an import path, got {type(body).__name__}"
        )
    _registry[name] = ref
    return ref


def _pickle_ref(body: Any) -> str:
    import cloudpickle

    return _PICKLE_PREFIX + base64.b64encode(cloudpickle.dumps(body)).decode("ascii")


def body_ref_for(kind: str) -> str | None:
    """The body reference registered for ``kind`` in this process, or None."""
    return _registry.get(kind)


def job_kinds() -> dict[str, str]:
    """Every kind registered in this process, with its body reference (pickled ones abbreviated).

    >>> job_kinds()["steps"]
    'executors.bodies:steps_body'
    """
    return {k: (v if not v.startswith(_PICKLE_PREFIX) else "pickle:<by value>") for k, v in _registry.items()}


def resolve_body(ref: str) -> Callable[[Any], Any]:
    """Turn a body reference into a callable taking a ``JobContext``.

    Raises:
        SpecError: the reference cannot be imported or is not callable.

    >>> resolve_body("executors.bodies:noop_body").__name__
    'noop_body'
    """
    if ref.startswith(_PICKLE_PREFIX):
        import cloudpickle

        obj = cloudpickle.loads(base64.b64decode(ref[len(_PICKLE_PREFIX) :]))
    else:
        module_name, _, attr = ref.partition(":")
        if not module_name or not attr:
            raise SpecError(f"a body import path looks like 'package.module:function', got {ref!r}")
        try:
            obj = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise SpecError(f"cannot import job body {ref!r}: {exc}") from None
    if isinstance(obj, type):
        cls = obj
        if not callable(getattr(cls, "run", None)):
            raise SpecError(f"job body class {ref!r} needs a run(ctx) method")
        return lambda ctx: cls().run(ctx)
    if not callable(obj):
        raise SpecError(f"job body {ref!r} is not callable")
    return obj
