"""Job specs: the validated description of a job (kind, model, adapter, resources, priority...)."""

from __future__ import annotations

import enum
import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from executors.errors import SpecError

__all__ = ["STANDARD_KINDS", "JobSpec", "JobState", "LoraConfig", "format_validation_error"]

STANDARD_KINDS: tuple[str, ...] = ("sample", "eval", "sft", "grpo", "ppo")
"""Kinds every gym-tinker cluster accepts; their bodies are registered by the packages that run them."""

_KIND_RE = re.compile(r"^[a-z][a-z0-9_\-]{0,63}$")
_RESOURCE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_\-.]{0,63}$")


class JobState(enum.StrEnum):
    """Where a job is in its life. ``succeeded``, ``failed`` and ``cancelled`` are final."""

    QUEUED = "queued"
    RUNNING = "running"
    PREEMPTED = "preempted"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        """True for states a job never leaves.

        >>> JobState.FAILED.final, JobState.QUEUED.final
        (True, False)
        """
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class LoraConfig(BaseModel):
    """A LoRA adapter: rank, scaling, dropout and the modules it wraps.

    >>> LoraConfig(r=16).alpha
    16.0
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    r: int = Field(8, gt=0, le=4096, description="Rank of the low-rank update.")
    alpha: float = Field(16.0, gt=0, description="Scaling numerator; the update is scaled by alpha/r.")
    dropout: float = Field(0.05, ge=0.0, lt=1.0, description="Dropout on the adapter input.")
    target_modules: list[str] | Literal["all-linear"] | None = Field(
        None, description="Module names to wrap; None lets the trainer pick its default."
    )


class JobSpec(BaseModel):
    """What to run, with what, and how urgently. Unknown fields are errors.

    >>> spec = JobSpec(kind="steps", params={"steps": 3}, resources={"GPU": 0.5}, priority=5)
    >>> spec.priority, spec.resources["GPU"], spec.preemptible
    (5, 0.5, True)
    >>> JobSpec(kind="steps", priorty=5)
    Traceback (most recent call last):
    ...
    executors.errors.SpecError: invalid job spec:
      priorty: Extra inputs are not permitted (got 5)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(description="Job kind: sample, eval, sft, grpo, ppo, or a registered kind.")
    name: str | None = Field(None, max_length=200, description="Human-readable job name.")
    user: str | None = Field(None, max_length=200, description="Who submitted it; filled in by the client.")
    model: str | None = Field(None, description="Model name or path.")
    adapter: LoraConfig | Literal["full"] | None = Field(
        None, description='LoRA config, or "full" for full-parameter training.'
    )
    env: str | None = Field(None, min_length=1, description="Env id, e.g. tinker/Math-v0.")
    dataset: str | None = Field(None, min_length=1, description="Dataset name or path.")
    params: dict[str, Any] = Field(default_factory=dict, description="Hyper-parameters for the body.")
    resources: dict[str, float] = Field(
        default_factory=dict, description='Dask worker resources the job holds, e.g. {"GPU": 0.5}.'
    )
    priority: int = Field(0, ge=-1_000_000, le=1_000_000, description="Higher runs first.")
    preemptible: bool = Field(True, description="Whether more urgent jobs may make this one yield.")
    max_attempts: int = Field(
        3, ge=1, le=100, description="Attempts (worker deaths included) before failing."
    )
    output_dir: str | None = Field(None, min_length=1, description="Where the body writes its outputs.")

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise SpecError(format_validation_error(exc)) from None

    @field_validator("kind")
    @classmethod
    def _check_kind(cls, value: str) -> str:
        if not _KIND_RE.match(value):
            raise ValueError(
                "expected a lower-case name like 'grpo' or 'my-kind' (letters, digits, '_', '-')"
            )
        return value

    @field_validator("resources")
    @classmethod
    def _check_resources(cls, value: dict[str, float]) -> dict[str, float]:
        for key, amount in value.items():
            if not _RESOURCE_RE.match(key):
                raise ValueError(f"resource names look like 'GPU' or 'MEMORY', got {key!r}")
            if not amount > 0:
                raise ValueError(f"resource {key!r} must be a positive amount, got {amount!r}")
        return value

    @field_validator("params")
    @classmethod
    def _check_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"params must be JSON-serialisable ({exc})") from None
        return value

    @classmethod
    def from_file(cls, path: str | Path) -> JobSpec:
        """Load a spec from a YAML or JSON file.

        Raises:
            SpecError: the file is missing, unparsable, or describes an invalid spec.

        >>> import tempfile, os
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = os.path.join(d, "job.yaml")
        ...     _ = Path(p).write_text("kind: steps\\npriority: 3\\nparams: {steps: 2}\\n")
        ...     JobSpec.from_file(p).priority
        3
        """
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise SpecError(f"cannot read job spec {str(path)!r}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            raise SpecError(f"cannot parse job spec {str(path)!r}: {exc}") from None
        if not isinstance(data, dict):
            raise SpecError(f"job spec {str(path)!r} must be a mapping of fields, got {type(data).__name__}")
        try:
            return cls(**data)
        except SpecError as exc:
            raise SpecError(f"{exc} [in {path}]") from None

    @classmethod
    def coerce(cls, obj: JobSpec | dict[str, Any] | str | Path) -> JobSpec:
        """Turn a spec, a dict of fields, or a path to a YAML/JSON file into a validated spec.

        >>> JobSpec.coerce({"kind": "sft"}).kind
        'sft'
        """
        if isinstance(obj, JobSpec):
            return obj
        if isinstance(obj, dict):
            return cls(**obj)
        if isinstance(obj, str | Path):
            return cls.from_file(obj)
        raise SpecError(f"expected a JobSpec, a dict or a path to a YAML/JSON file, got {type(obj).__name__}")


def format_validation_error(exc: ValidationError) -> str:
    """Render a pydantic error as one line per field: ``field: message (got value)``."""
    lines = ["invalid job spec:"]
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"]) or "<spec>"
        msg = err["msg"].removeprefix("Value error, ")
        got = f" (got {err['input']!r})" if "input" in err and not isinstance(err["input"], dict) else ""
        lines.append(f"  {field}: {msg}{got}")
    return "\n".join(lines)
