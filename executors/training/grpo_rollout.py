"""GRPO rollouts: seed prompts and dataset, the env reward, and :class:`EngineRollout` (``rollout_func``)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from executors.training.config import GRPOParams
from gym_tinker.trajectory import Trajectory

__all__ = [
    "EngineRollout",
    "env_reward",
    "rollout_seed",
    "seed_dataset",
    "seed_of_prompt",
    "seed_prompt",
]

logger = logging.getLogger(__name__)

_SEED_PROMPT = re.compile(r"seed=(\d+)")


def seed_prompt(seed: int) -> str:
    """The train dataset's prompt for a task seed.

    >>> seed_prompt(17), seed_of_prompt(seed_prompt(17))
    ('seed=17', 17)
    """
    return f"seed={seed}"


def seed_of_prompt(prompt: Any) -> int:
    """The task seed a prompt names (a ``"seed=N"`` string, or chat messages whose last one does).

    Raises:
        ValueError: the prompt names no seed.

    >>> seed_of_prompt([{"role": "user", "content": "seed=3"}])
    3
    """
    text = prompt[-1]["content"] if isinstance(prompt, list) and prompt else prompt
    match = _SEED_PROMPT.search(str(text))
    if match is None:
        raise ValueError(f"Expected a prompt naming a task seed like 'seed=17', got {prompt!r:.80}")
    return int(match.group(1))


def seed_dataset(seeds: Sequence[int]) -> Any:
    """The GRPO train dataset: one row per task seed, columns ``prompt`` (``"seed=N"``) and ``seed``.

    >>> ds = seed_dataset([5, 6])
    >>> ds[0]
    {'prompt': 'seed=5', 'seed': 5}
    """
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [seed_prompt(s) for s in seeds], "seed": [int(s) for s in seeds]})


def rollout_seed(seed: int, step: int) -> int:
    """The sampling seed of training step ``step``: reproducible, and the same after a resume.

    >>> rollout_seed(0, 3) == rollout_seed(0, 3) != rollout_seed(0, 4)
    True
    """
    return (seed * 1_000_003 + step * 7_919 + 1) % (1 << 62)


def env_reward(
    prompts: Sequence[Any], completions: Sequence[Any], env_reward: Sequence[float | None], **kwargs: Any
) -> list[float | None]:
    """The GRPO reward function: each episode's total env reward (``None`` for a dropped episode).

    ``env_reward`` is the column :class:`EngineRollout` returns; TRL passes it as a keyword.
    A ``None`` reward makes TRL leave the completion out of its group's baseline and give it no
    advantage. When TRL passes ``log_metric``, the rollout's step metrics are logged with it too.

    >>> env_reward(["seed=1", "seed=1"], ["a", "b"], env_reward=[1.0, None])
    [1.0, None]
    """
    log_metric = kwargs.get("log_metric")
    metrics = kwargs.get("rollout_metrics")
    if callable(log_metric) and metrics:
        for name, value in metrics[0].items():
            log_metric(f"rollout/{name}", value)
    return [None if r is None else float(r) for r in env_reward]


class EngineRollout:
    """TRL's ``rollout_func`` over our rollout engine: one batched, token-exact rollout per step.

    Call it as TRL does, ``rollout(prompts, trainer)``: each prompt names a task seed
    (:func:`seed_of_prompt`); consecutive equal prompts are one GRPO group. The model sampled
    is ``trainer.model`` (current weights, eval mode while sampling); the sampling seed is
    :func:`rollout_seed` ``(params.seed, trainer.state.global_step)``.

    After each call, :attr:`last_metrics` holds the step's numbers (``zero_variance_fraction``,
    ``success_rate``, ``reward_mean``, ``reward_std``, ``sampled_tokens_per_second``,
    ``rollout_seconds``, ``dropped``, ``retried``) and :attr:`last_trajectories` its episodes
    (for ``RunFolder.save_transcripts``).

    Args:
        env_id: Registered env id, made with ``gym.make(env_id, **env_kwargs)``.
        tokenizer: The policy's tokenizer (for EOS-only completions of dropped episodes).
        params: The job's params: sampling (``max_tokens``, ``temperature``, ``top_p``, ``seed``),
            ``max_turns``, ``token_budget``, ``env_kwargs``.
        retries: Restarts of a failed episode from its seed before it is dropped.
        model: The model to sample; default ``trainer.model`` at each call.
    """

    def __init__(
        self,
        env_id: str,
        tokenizer: Any,
        params: GRPOParams,
        *,
        retries: int = 2,
        model: Any = None,
    ) -> None:
        self.env_id = env_id
        self.tokenizer = tokenizer
        self.params = params
        self.retries = retries
        self.model = model
        self.envs: list[Any] = []
        self.last_metrics: dict[str, float] = {}
        self.last_trajectories: list[Trajectory] = []
        self.history: list[dict[str, float]] = []
        """``last_metrics`` of every call, in order (with ``step``)."""
        self._sampler: Any = None

    def _pool(self, size: int) -> list[Any]:
        import gymnasium as gym

        import gym_tinker  # noqa: F401  (registers the envs)

        while len(self.envs) < size:
            self.envs.append(gym.make(self.env_id, **dict(self.params.env_kwargs)))
        return self.envs[:size]

    def sampler(self, model: Any) -> Any:
        """The :class:`~executors.sampling.HFSampler` over ``model``, made once, its prefix cache emptied per call."""
        from executors.training.common import make_sampler

        # A PeftModel's LoRA layers live inside its base model, so sampling the base model samples
        # the adapter too; and HFSampler then sees the base model's real `forward` signature (on
        # the peft wrapper it falls back to transformers' deprecated `past_key_values`).
        target = model.get_base_model() if hasattr(model, "get_base_model") else model
        if self._sampler is None or self._sampler.model is not target:
            self._sampler = make_sampler(target, self.tokenizer)
        else:
            # The weights changed since the last call (an optimizer step), and the sampler cannot
            # always tell: fused AdamW (transformers' default) writes parameters without bumping
            # their version counters, so cached keys and values would be stale.
            self._sampler.invalidate_cache()
        return self._sampler

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, list[Any]]:
        from executors.training.common import group_metrics, is_success, sampling_mode
        from gym_tinker.policy import SamplingParams
        from gym_tinker.rollout import flatten, rollout

        seeds = [seed_of_prompt(p) for p in prompts]
        step = int(trainer.state.global_step)
        model = self.model if self.model is not None else trainer.model
        accelerator = getattr(trainer, "accelerator", None)
        if accelerator is not None:  # sample the module itself, not a distributed wrapper
            model = accelerator.unwrap_model(model)
        p = self.params
        sampling = SamplingParams(
            max_tokens=p.max_tokens, temperature=p.temperature, top_p=p.top_p, seed=rollout_seed(p.seed, step)
        )
        began = time.perf_counter()
        with sampling_mode(model):
            result = rollout(
                self._pool(len(seeds)),
                self.sampler(model),
                seeds=seeds,
                params=sampling,
                max_turns=p.max_turns,
                token_budget=p.token_budget,
                retries=self.retries,
                metadata={"step": step},
            )
        seconds = time.perf_counter() - began
        if not result and seeds:
            # Nothing to train on: a systematic failure (model, env or template), not bad luck.
            first = result.stats.failures[0] if result.stats.failures else "no failure recorded"
            raise RuntimeError(
                f"GRPO step {step}: all {len(seeds)} episodes of {self.env_id} failed after "
                f"{self.retries} retries each; first failure: {first}"
            )
        by_episode = {int(t.metadata["episode"]): t for t in result}
        eos = int(self.tokenizer.eos_token_id)
        flats = {i: flatten(t) for i, t in by_episode.items()}
        out: dict[str, list[Any]] = {
            k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward", "success")
        }
        for index, seed in enumerate(seeds):
            flat = flats.get(index)
            if flat is None:
                # Dropped after its retries: an EOS-only completion with no trained token and no reward.
                logger.warning(
                    "GRPO step %d: episode %d (seed %d) dropped; EOS-only stand-in", step, index, seed
                )
                same_task = next((f for i, f in flats.items() if seeds[i] == seed), None)
                prompt_ids = list(same_task.prompt_ids) if same_task else [eos]
                out["prompt_ids"].append(prompt_ids)
                out["completion_ids"].append([eos])
                out["logprobs"].append([0.0])
                out["env_mask"].append([0])
                out["env_reward"].append(None)
                out["success"].append(False)
                continue
            out["prompt_ids"].append(list(flat.prompt_ids))
            out["completion_ids"].append(list(flat.completion_ids))
            out["logprobs"].append(
                list(flat.logprobs) if flat.logprobs is not None else [0.0] * len(flat.env_mask)
            )
            out["env_mask"].append(list(flat.env_mask))
            out["env_reward"].append(flat.reward)
            out["success"].append(is_success(by_episode[index]))
        size = getattr(trainer, "num_generations", None)
        groups = _groups(seeds, [by_episode.get(i) for i in range(len(seeds))], size)
        stats = result.stats
        metrics = {
            **group_metrics(groups),
            "rollout_seconds": seconds,
            "sampled_tokens": float(stats.sampled_tokens),
            "sampled_tokens_per_second": stats.sampled_tokens / seconds if seconds > 0 else 0.0,
            "dropped": float(stats.dropped),
            "retried": float(stats.retried),
            "episodes": float(len(seeds)),
        }
        self.last_metrics = metrics
        self.last_trajectories = list(result)
        self.history.append({"step": float(step + 1), **metrics})
        out["rollout_metrics"] = [dict(metrics) for _ in seeds]
        return out

    def metrics(self) -> dict[str, float]:
        """The last step's rollout metrics (a copy), for ``JobCallback(extra_metrics=...)``."""
        return dict(self.last_metrics)

    def trajectories(self) -> list[Trajectory]:
        """The last step's episodes, for ``JobCallback(transcripts=...)``."""
        return list(self.last_trajectories)

    def close(self) -> None:
        """Close the pooled envs."""
        for env in self.envs:
            env.close()
        self.envs = []


def _groups(
    seeds: Sequence[int], trajectories: Sequence[Trajectory | None], size: int | None
) -> list[list[Trajectory]]:
    """The GRPO groups: ``size`` consecutive episodes each (TRL's repeated prompts), else runs of one seed.

    Dropped episodes (``None``) are left out of their group.
    """
    if not isinstance(size, int) or size < 1 or len(seeds) % size:
        size = None
    groups: list[list[Trajectory]] = []
    previous: int | None = None
    for index, (seed, trajectory) in enumerate(zip(seeds, trajectories, strict=True)):
        if (index % size == 0) if size else seed != previous:
            groups.append([])
            previous = seed
        if trajectory is not None:
            groups[-1].append(trajectory)
    return groups
