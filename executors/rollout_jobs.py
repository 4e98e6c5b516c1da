"""Job bodies for the ``sample`` and ``eval`` kinds: batched rollouts of a model on a text env.

Both run the rollout engine (:func:`gym_tinker.rollout.rollout`) with an
:class:`~executors.sampling.HFSampler` in batches of episodes, checkpoint after every batch
(so a preempted or restarted job continues with the next batch, never repeating one) and write
the trajectories to ``<output_dir>/trajectories.jsonl``. ``eval`` samples greedily by default
and reports the success rate with a 95% Wilson interval; ``sample`` samples at temperature 1.
``params.adapter`` (a peft adapter folder or a registry name such as ``math/20``) samples every
rollout through that LoRA adapter on top of ``model``.

A spec for the main demo job::

    kind: eval
    model: smollm2-135m-instruct
    env: tinker/Math-v0
    params: {episodes: 32, batch_size: 8, env_kwargs: {difficulty: easy}}
"""

from __future__ import annotations

import hashlib
import math
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from executors.context import JobContext
from executors.spec import format_validation_error

__all__ = [
    "RolloutJobParams",
    "eval_body",
    "load_adapter_once",
    "resolve_adapter",
    "sample_body",
    "wilson_interval",
]


class RolloutJobParams(BaseModel):
    """``params`` of a ``sample`` or ``eval`` job. Unknown fields are errors.

    >>> RolloutJobParams(episodes=4).batch_size
    8
    >>> RolloutJobParams(episodes=0)
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for RolloutJobParams
    episodes
      Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]
        For further information visit https://errors.pydantic.dev/2.14/v/greater_than_equal
    """

    model_config = ConfigDict(extra="forbid")

    episodes: int = Field(32, ge=1, description="Episodes to run, one per seed.")
    batch_size: int = Field(
        8, ge=1, le=256, description="Episodes sampled together (one policy batch per turn)."
    )
    seed: int = Field(0, ge=0, description="Seed of the first episode; episode i uses seed + i.")
    env_kwargs: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments for gym.make.")
    max_tokens: int = Field(128, ge=1, description="Most tokens sampled per turn.")
    temperature: float | None = Field(None, ge=0, description="Default: 0 (greedy) for eval, 1 for sample.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    max_turns: int | None = Field(None, ge=1, description="Turn limit; default the env's.")
    token_budget: int | None = Field(None, ge=1, description="Most tokens per episode.")
    threads: int | None = Field(None, ge=1, description="torch CPU threads for this job.")
    device: str = Field("cpu", description="torch device for the sampler.")
    adapter: str | None = Field(
        None,
        min_length=1,
        description="LoRA adapter used for every rollout: a peft adapter folder or a registry name (run/step).",
    )


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval for a success rate (95% by default).

    >>> [round(x, 3) for x in wilson_interval(8, 10)]
    [0.49, 0.943]
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def sample_body(ctx: JobContext) -> dict[str, Any]:
    """Sample ``params.episodes`` episodes (temperature 1 unless set) and save their trajectories."""
    return _run(ctx, default_temperature=1.0)


def eval_body(ctx: JobContext) -> dict[str, Any]:
    """Evaluate greedily (unless ``params.temperature`` is set): success rate with a 95% interval."""
    return _run(ctx, default_temperature=0.0)


def _run(ctx: JobContext, *, default_temperature: float) -> dict[str, Any]:
    import gymnasium as gym

    import gym_tinker  # noqa: F401  (registers the envs)
    from gym_tinker.policy import SamplingParams
    from gym_tinker.rollout import rollout
    from gym_tinker.trajectory import load_jsonl, save_jsonl

    spec = ctx.spec
    try:
        params = RolloutJobParams(**spec.params)
    except ValidationError as exc:
        raise ValueError(f"invalid params for a {spec.kind} job:\n{format_validation_error(exc)}") from None
    if spec.env is None:
        raise ValueError(f"a {spec.kind} job needs `env`, e.g. env: tinker/Math-v0")
    if params.threads is not None:
        import torch

        torch.set_num_threads(params.threads)

    adapter = resolve_adapter(params.adapter) if params.adapter is not None else None
    sampler = _sampler(spec.model or "smollm2-135m-instruct", params.device)
    policy = sampler
    if adapter is not None:
        policy = sampler.with_adapter(load_adapter_once(sampler, adapter))
        ctx.log(f"sampling through the LoRA adapter at {adapter}")
    temperature = default_temperature if params.temperature is None else params.temperature
    sampling = SamplingParams(
        max_tokens=params.max_tokens, temperature=temperature, top_p=params.top_p, seed=params.seed
    )
    batch_dir = ctx.output_dir / "batches"
    batch_dir.mkdir(parents=True, exist_ok=True)
    envs = [gym.make(spec.env, **params.env_kwargs) for _ in range(min(params.batch_size, params.episodes))]

    state = ctx.load_checkpoint() or {"done": 0, "rewards": [], "tokens": 0, "seconds": 0.0}
    if state["done"]:
        ctx.log(f"resuming after {state['done']} of {params.episodes} episodes (attempt {ctx.attempt})")
    while state["done"] < params.episodes:
        ctx.check_signals()
        start = state["done"]
        stop = min(start + params.batch_size, params.episodes)
        seeds = [params.seed + i for i in range(start, stop)]
        began = time.perf_counter()
        result = rollout(
            envs[: len(seeds)],
            policy,
            seeds=seeds,
            params=sampling,
            max_turns=params.max_turns,
            token_budget=params.token_budget,
            keep_failed=True,
            metadata={"job_id": ctx.job_id},
        )
        seconds = time.perf_counter() - began
        # One file per batch, named by its seeds: a batch redone after a crash overwrites itself.
        save_jsonl(batch_dir / f"episodes-{start:06d}-{stop:06d}.jsonl", result)
        tokens = sum(sum(1 for m in (turn.env_mask or ()) if m) for t in result for turn in t.turns)
        rewards = [float(t.total_reward or 0.0) for t in result]
        state = {
            "done": stop,
            "rewards": state["rewards"] + rewards,
            "tokens": state["tokens"] + tokens,
            "seconds": state["seconds"] + seconds,
        }
        ctx.save_checkpoint(state)
        successes = sum(r > 0 for r in state["rewards"])
        ctx.report(
            step=stop,
            mean_reward=sum(state["rewards"]) / len(state["rewards"]),
            success_rate=successes / len(state["rewards"]),
            tokens_per_s=tokens / seconds if seconds else 0.0,
            dropped=float(result.stats.dropped),
        )
        ctx.log(
            f"episodes {start}-{stop - 1}: mean reward {sum(rewards) / len(rewards):.3f} in {seconds:.1f}s"
        )

    trajectories_path = ctx.output_dir / "trajectories.jsonl"
    batches = sorted(batch_dir.glob("episodes-*.jsonl"))
    save_jsonl(trajectories_path, (t for path in batches for t in load_jsonl(path)))
    rewards = state["rewards"]
    successes = sum(r > 0 for r in rewards)
    low, high = wilson_interval(successes, len(rewards))
    return {
        "env": spec.env,
        "model": spec.model or "smollm2-135m-instruct",
        "adapter": adapter,
        "episodes": len(rewards),
        "mean_reward": sum(rewards) / len(rewards),
        "success_rate": successes / len(rewards),
        "success_ci95": [low, high],
        "sampled_tokens": state["tokens"],
        "tokens_per_s": state["tokens"] / state["seconds"] if state["seconds"] else 0.0,
        "trajectories": str(Path(trajectories_path)),
    }


def resolve_adapter(ref: str) -> str:
    """The absolute folder of the LoRA adapter ``ref``: a peft adapter folder, or a registry name (``run/step``).

    Raises:
        ValueError: ``ref`` is neither a folder with ``adapter_config.json`` nor a registry name of
            a LoRA checkpoint.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = (Path(d) / "adapter_config.json").write_text("{}")
        ...     resolve_adapter(d) == str(Path(d).resolve())
        True
    """
    folder = Path(ref).expanduser()
    if (folder / "adapter_config.json").is_file():
        return str(folder.resolve())
    from executors.registry import resolve

    try:
        resolved = resolve(ref)
    except (LookupError, ValueError, OSError) as exc:
        raise ValueError(
            f"adapter {ref!r} is neither a peft adapter folder (with adapter_config.json) "
            f"nor a known model name: {exc}"
        ) from None
    if resolved.adapter is None:
        raise ValueError(
            f"adapter {ref!r} is not a LoRA adapter: no adapter_config.json there, and as a model name "
            f"it resolves to the full model {resolved.base_model!r} (pass that as the model instead)"
        )
    return str(resolved.adapter)


def load_adapter_once(sampler: Any, folder: str) -> str:
    """Load the adapter at ``folder`` on ``sampler`` unless it is loaded already; return its name.

    Samplers over one cached model share its adapters, so the name is derived from the folder:
    a second eval of the same adapter in one process reuses it instead of failing on the name.

    Example:
        >>> class Sampler:  # the two methods of HFSampler this uses
        ...     def __init__(self):
        ...         self.loaded = {}
        ...     def adapters(self):
        ...         return list(self.loaded)
        ...     def load_adapter(self, name, folder):
        ...         self.loaded[name] = folder
        >>> sampler = Sampler()
        >>> name = load_adapter_once(sampler, "/runs/math/adapter")
        >>> load_adapter_once(sampler, "/runs/math/adapter") == name, len(sampler.adapters())
        (True, 1)
    """
    name = "eval-" + hashlib.sha1(str(Path(folder).resolve()).encode()).hexdigest()[:12]
    if name not in sampler.adapters():
        sampler.load_adapter(name, folder)
    return name


def _sampler(model: str, device: str) -> Any:
    from executors.sampling import HFSampler

    return HFSampler(model, device=device)
