"""Actor-critic PPO for LLM agents over token-exact trajectories, and the ``ppo`` job body.

TRL removed its ``PPOTrainer`` in 1.13, so this is our own, built on the math in
:mod:`executors.training.ppo_core`. One :meth:`ActorCriticPPO.step` takes a batch of
trajectories from :func:`gym_tinker.rollout.rollout` (sampled by the policy being trained) and:

1. recomputes the old log-probabilities and values with the current policy (one forward pass,
   no gradient), and the reference log-probabilities (LoRA: the same model with its adapter
   disabled; full fine-tuning: a frozen copy made at construction);
2. puts each turn's reward on that turn's last sampled token, adds the per-token KL penalty
   ``-kl_coef * (logp - logp_ref)`` (``kl_mode="penalty"``), runs GAE over sampled tokens
   only (env replies are not steps) and whitens the advantages;
3. runs ``ppo_epochs`` passes of minibatches (``minibatch_size`` trajectories each) of the
   clipped policy loss + ``vf_coef`` * clipped value loss - ``entropy_coef`` * entropy
   (+ ``kl_coef`` * k3 KL with ``kl_mode="loss"``), with gradient clipping and AdamW.

Prompt and env tokens are excluded from every loss and statistic. Log-probabilities are the
model's own at temperature 1, the same quantity :class:`~executors.sampling.HFSampler` reports.

The trainer (:class:`ActorCriticPPO`, :class:`PPOBatch`, :func:`collate`) is
:mod:`executors.training.ppo_trainer`, re-exported here; this module holds the job:
:func:`rollout_seeds` and :func:`ppo_body`.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executors.training.config import PPOParams
from executors.training.ppo_trainer import ActorCriticPPO, PPOBatch, collate

if TYPE_CHECKING:
    from executors.context import JobContext

__all__ = ["ActorCriticPPO", "PPOBatch", "collate", "ppo_body", "rollout_seeds"]

_CHECKPOINT_NAME = "ppo-state.pt"


def rollout_seeds(params: PPOParams, step: int) -> list[int]:
    """The env seeds of training step ``step`` (1-based): consecutive seeds from ``params.seed``.

    >>> rollout_seeds(PPOParams(seed=5, episodes_per_step=3), 2)
    [8, 9, 10]
    """
    first = params.seed + (step - 1) * params.episodes_per_step
    return list(range(first, first + params.episodes_per_step))


def _finite(metrics: dict[str, Any]) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(float(v))
    }


def ppo_body(ctx: JobContext) -> dict[str, Any]:
    """The ``ppo`` job: sample episodes on ``spec.env`` with the live policy, PPO step, repeat; resumable.

    Checkpoints go to ``ctx.checkpoint_dir`` every ``checkpoint_every`` steps, at the end and
    before yielding to a preempt or cancel; outputs (metrics, transcripts, plot, adapter) to
    ``ctx.output_dir``.
    """
    import gymnasium as gym

    import gym_tinker  # noqa: F401  (registers the envs)
    from executors.training import common
    from executors.training.config import parse_params
    from gym_tinker.policy import SamplingParams
    from gym_tinker.rollout import rollout

    spec = ctx.spec
    params = parse_params("ppo", spec.params)
    assert isinstance(params, PPOParams)
    if not spec.env:
        raise ValueError("A ppo job needs an `env` (e.g. tinker/Math-v0) to sample episodes from; got none")
    common.set_threads(params.threads)
    common.seed_everything(params.seed)
    policy = common.load_policy(spec, params)
    model, tokenizer = policy.model, policy.tokenizer
    trainer = ActorCriticPPO(model, tokenizer, params)
    run = common.RunFolder(ctx.output_dir, tensorboard="tensorboard" in params.integrations())
    run.write_info(spec, job_id=ctx.job_id)
    checkpoint_file = ctx.checkpoint_dir / _CHECKPOINT_NAME
    saved = ctx.load_checkpoint()
    start = 0
    if saved:
        # The file is named relative to the checkpoint folder, which may be mounted elsewhere now.
        trainer.load(ctx.checkpoint_dir / Path(saved["file"]).name)
        start = int(saved["step"])
        run.truncate(after_step=start)
        ctx.log(f"resumed from step {start}")
    # Sample through the peft-injected base model: the adapter is active in it, and HFSampler
    # sees the real forward signature (a PeftModel's forward is `*args, **kwargs`).
    sampler = common.make_sampler(model.get_base_model() if policy.lora else model, tokenizer)
    seeds = common.heldout_seeds(params)
    last_eval: dict[str, Any] = {}

    def evaluate(step: int) -> None:
        if not seeds:
            return
        began = time.perf_counter()
        out = common.heldout_eval(
            model,
            tokenizer,
            str(spec.env),
            seeds,
            env_kwargs=params.env_kwargs,
            max_tokens=params.max_tokens,
            max_turns=params.max_turns,
            batch_size=params.eval_batch_size,
            sampler=sampler,
        )
        out["heldout_seconds"] = time.perf_counter() - began
        last_eval.clear()
        last_eval.update(_finite(out))
        run.log_metrics(step, last_eval)
        ctx.report(step=step, **last_eval)

    def checkpoint(step: int) -> None:
        trainer.save(checkpoint_file)
        ctx.save_checkpoint({"step": step, "file": checkpoint_file.name})
        run.save_snapshot(step, model, tokenizer)  # `<run>/<step>` in `gym-tinker models`

    envs = [gym.make(spec.env, **params.env_kwargs) for _ in range(params.episodes_per_step)]
    metrics: dict[str, float] = {}
    try:
        if start == 0:
            evaluate(0)
        for step in range(start + 1, params.steps + 1):
            began = time.perf_counter()
            sampling = SamplingParams(
                max_tokens=params.max_tokens,
                temperature=params.temperature,
                top_p=params.top_p,
                seed=(params.seed * 1_000_003 + step) % (1 << 31),
            )
            sampler.invalidate_cache()  # the weights changed since the last rollout
            with common.sampling_mode(model):
                result = rollout(
                    envs,
                    sampler,
                    seeds=rollout_seeds(params, step),
                    params=sampling,
                    max_turns=params.max_turns,
                )
            trajectories = list(result)
            rollout_seconds = time.perf_counter() - began
            if not trajectories:
                raise RuntimeError(
                    f"Every episode of step {step} failed after retries; first failure: "
                    f"{result.stats.failures[0] if result.stats.failures else 'unknown'}"
                )
            metrics = trainer.step(trajectories)
            n = max(len(trajectories), 1)
            metrics.update(
                reward=sum(float(t.total_reward or 0.0) for t in trajectories) / n,
                success_rate=sum(common.is_success(t) for t in trajectories) / n,
                episode_turns=sum(len(t) for t in trajectories) / n,
                episodes=float(len(trajectories)),
                rollout_seconds=rollout_seconds,
                tokens_per_second=result.stats.sampled_tokens / max(rollout_seconds, 1e-9),
                step_seconds=time.perf_counter() - began,
                dropped=float(result.stats.dropped),
            )
            run.log_metrics(step, metrics)
            ctx.report(step=step, **_finite(metrics))
            if step % params.sample_every == 0:
                run.save_transcripts(step, trajectories)
            if (params.eval_every and step % params.eval_every == 0) or step == params.steps:
                evaluate(step)
            if step % params.checkpoint_every == 0 or step == params.steps or ctx.should_stop():
                checkpoint(step)
            ctx.check_signals()
    finally:
        for env in envs:
            env.close()
        run.close()
    saved_paths = run.save_final(model, tokenizer, merge=params.merge)
    plot = run.plot(title=f"PPO {spec.model or common.DEFAULT_MODEL} on {spec.env}")
    history = run.history()
    return {
        "steps": params.steps,
        "reward": metrics.get("reward"),
        "success_rate": metrics.get("success_rate"),
        "heldout_accuracy": last_eval.get("heldout_accuracy"),
        "heldout_accuracy_before": history.get(0, {}).get("heldout_accuracy"),
        "heldout_accuracy_after": history.get(params.steps, {}).get("heldout_accuracy"),
        "metrics": str(run.metrics_path),
        "plot": str(plot) if plot else None,
        **saved_paths,
    }
