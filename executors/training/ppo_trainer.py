"""Actor-critic PPO trainer: :class:`ActorCriticPPO`, and :func:`collate` into a :class:`PPOBatch`."""

from __future__ import annotations

import contextlib
import copy
import os
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executors.training import ppo_core
from executors.training.config import PPOParams
from executors.training.ppo_batch import PPOBatch, collate, rows
from gym_tinker.trajectory import Trajectory

if TYPE_CHECKING:
    pass

__all__ = ["ActorCriticPPO", "PPOBatch", "collate"]


def _disable_dropout(model: Any) -> None:
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0


def _is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")


def _weights(module: Any, everything: bool) -> dict[str, Any]:
    if everything:
        return {k: v.detach().cpu().clone() for k, v in module.state_dict().items()}
    return {k: p.detach().cpu().clone() for k, p in module.named_parameters() if p.requires_grad}


def _load_weights(module: Any, weights: dict[str, Any], everything: bool, what: str) -> None:
    if everything:
        module.load_state_dict(weights)
        return
    trainable = {k for k, p in module.named_parameters() if p.requires_grad}
    if set(weights) != trainable:
        raise ValueError(
            f"The checkpoint's {what} weights do not match this model's trainable parameters: "
            f"missing {sorted(trainable - set(weights))[:5]}, unexpected {sorted(set(weights) - trainable)[:5]}"
        )
    result = module.load_state_dict(weights, strict=False)
    if result.unexpected_keys:
        raise ValueError(f"Unexpected {what} weights in the checkpoint: {result.unexpected_keys[:5]}")


class ActorCriticPPO:
    """PPO with a critic for a causal LM (LoRA via peft, or full parameters) over token-exact trajectories.

    Args:
        model: The policy: a peft ``PeftModel`` (only the adapter trains, the reference is the
            model with its adapter disabled) or a plain transformers model (all parameters
            train, the reference is a frozen copy made here).
        tokenizer: Its tokenizer (for the pad id).
        params: PPO hyper-parameters.
        disable_dropout: Set every dropout probability to 0 (as TRL does for PPO), so the
            recomputed old log-probabilities and the first epoch's ratios agree exactly.

    Example:
        >>> from executors.models.tiny import tiny_random_model
        >>> from gym_tinker.trajectory import Turn
        >>> model, tok = tiny_random_model()
        >>> ppo = ActorCriticPPO(model, tok, PPOParams(minibatch_size=1))
        >>> turn = Turn("q", "a", 1.0, prompt_ids=(1, 5, 6), completion_ids=(7, 2), env_mask=(1, 1))
        >>> metrics = ppo.step([Trajectory(turns=(turn,), env_id="demo")])
        >>> metrics["kl"], ppo.step_count
        (0.0, 1)
    """

    def __init__(
        self, model: Any, tokenizer: Any, params: PPOParams, *, disable_dropout: bool = True
    ) -> None:
        import torch
        from transformers import get_scheduler

        if not isinstance(params, PPOParams):
            raise TypeError(f"Expected PPOParams, got {type(params).__name__}")
        self.model, self.tokenizer, self.params = model, tokenizer, params
        self.lora = _is_peft(model)
        self.device = next(model.parameters()).device
        if disable_dropout:
            _disable_dropout(model)
        model.train()
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (tokenizer.eos_token_id or 0))
        self.reference: Any = None
        if not self.lora and params.kl_coef > 0:
            self.reference = copy.deepcopy(model).eval().requires_grad_(False)
        head_class = ppo_core.ValueHead
        if params.value_model == "separate":
            self.value_head = head_class.separate(model)
        else:
            self.value_head = head_class(int(model.config.hidden_size))
        self.value_head.to(self.device).train()
        if params.gradient_checkpointing:  # after the copies above: only the trained model recomputes
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        self.policy_parameters = [p for p in model.parameters() if p.requires_grad]
        self.value_parameters = [p for p in self.value_head.parameters() if p.requires_grad]
        if not self.policy_parameters:
            raise ValueError(
                "The policy model has no trainable parameters (requires_grad is False everywhere)"
            )
        self.optimizer = torch.optim.AdamW(
            [
                {"params": self.policy_parameters, "lr": params.learning_rate},
                {"params": self.value_parameters, "lr": params.value_learning_rate or params.learning_rate},
            ],
            weight_decay=params.weight_decay,
        )
        schedule: str = params.lr_scheduler
        if schedule == "constant" and params.warmup_steps:
            schedule = "constant_with_warmup"
        self.scheduler = get_scheduler(
            schedule, self.optimizer, num_warmup_steps=params.warmup_steps, num_training_steps=params.steps
        )
        self.generator = torch.Generator().manual_seed(params.seed)
        self.step_count = 0
        """PPO steps taken (one per :meth:`step`)."""

    # --- forward passes ---------------------------------------------------------------------------

    def _policy_forward(self, model: Any, batch: PPOBatch, hidden: bool) -> tuple[Any, Any, Any]:
        """(logits of the predicted tokens, their log-probabilities, last hidden states or None)."""
        import torch

        output = model(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_hidden_states=hidden
        )
        logits = output.logits[:, :-1].float()
        chosen = logits.gather(-1, batch.input_ids[:, 1:, None]).squeeze(-1)
        logprobs = chosen - torch.logsumexp(logits, dim=-1)
        states = output.hidden_states[-1][:, :-1] if hidden else None
        return logits, logprobs, states

    def _values(self, batch: PPOBatch, policy_hidden: Any) -> Any:
        values = self.value_head.values(batch.input_ids, batch.attention_mask, policy_hidden)
        # A separate critic sees the whole sequence; the policy's hidden states are already cut.
        return values if self.value_head.backbone is None else values[:, :-1]

    def _reference_logprobs(self, batch: PPOBatch) -> Any:
        if self.lora:
            with self.model.disable_adapter():
                return self._policy_forward(self.model, batch, hidden=False)[1]
        return self._policy_forward(self.reference, batch, hidden=False)[1]

    # --- one PPO step ------------------------------------------------------------------------------

    def step(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """One PPO update on ``trajectories`` (sampled by the current policy); returns its metrics.

        Metrics: ``policy_loss``, ``value_loss``, ``entropy``, ``clip_fraction``,
        ``value_clip_fraction``, ``approx_kl`` (old vs new policy, averaged over minibatches),
        ``kl`` (mean per-token k1 KL to the reference before the update; absent when
        ``kl_coef`` is 0) and ``kl_per_episode``, ``explained_variance``,
        ``advantage_mean`` (before whitening), ``return_mean``, ``value_mean``, ``grad_norm``,
        ``learning_rate``, ``score_mean`` (env reward per episode), ``sampled_tokens`` and
        ``sampler_logprob_gap`` (mean |sampler - recomputed| log-probability, when recorded).
        """
        import torch

        params = self.params
        batch = collate(trajectories, self.pad_id, self.device)
        mask = batch.mask
        with torch.no_grad():
            old_logprobs, old_values, ref_logprobs = self._score(batch)
            kl = ppo_core.kl_estimate(old_logprobs, ref_logprobs, "k1") * mask
            rewards = batch.scores - params.kl_coef * kl if params.kl_mode == "penalty" else batch.scores
            advantages, returns = ppo_core.gae(rewards, old_values, mask, params.gamma, params.lam)
            raw_advantage_mean = float(ppo_core.masked_mean(advantages, mask))
            if params.whiten_advantages:
                advantages = ppo_core.masked_whiten(advantages, mask)
        totals: dict[str, float] = {}
        updates = 0
        for _ in range(params.ppo_epochs):
            order = torch.randperm(len(batch), generator=self.generator).tolist()
            for start in range(0, len(order), params.minibatch_size):
                index = torch.tensor(order[start : start + params.minibatch_size], device=self.device)
                stats = self._update(
                    batch, index, old_logprobs, old_values, advantages, returns, ref_logprobs
                )
                for name, value in stats.items():
                    totals[name] = totals.get(name, 0.0) + value
                updates += 1
        learning_rate = float(self.optimizer.param_groups[0]["lr"])  # the rate this step used
        self.scheduler.step()
        self.step_count += 1
        metrics = {name: value / updates for name, value in totals.items()}
        sampled = float(mask.sum())
        if params.kl_coef > 0:  # without a KL term the reference is never run
            metrics["kl"] = float(kl.sum() / mask.sum().clamp(min=1.0))
            metrics["kl_per_episode"] = float(kl.sum()) / len(batch)
        metrics.update(
            explained_variance=ppo_core.explained_variance(old_values, returns, mask),
            advantage_mean=raw_advantage_mean,
            return_mean=float(ppo_core.masked_mean(returns, mask)),
            value_mean=float(ppo_core.masked_mean(old_values, mask)),
            score_mean=float(batch.scores.sum()) / len(batch),
            sampled_tokens=sampled,
            learning_rate=learning_rate,
            updates=float(updates),
        )
        if batch.sampler_logprobs is not None:
            gap = (batch.sampler_logprobs - old_logprobs).abs()
            metrics["sampler_logprob_gap"] = float(ppo_core.masked_mean(gap, mask))
        return metrics

    def _score(self, batch: PPOBatch) -> tuple[Any, Any, Any]:
        """Old log-probabilities, old values and reference log-probabilities, a minibatch at a time."""
        import torch

        old_logprobs = torch.zeros_like(batch.mask)
        old_values = torch.zeros_like(batch.mask)
        ref_logprobs = torch.zeros_like(batch.mask)
        for start in range(0, len(batch), self.params.minibatch_size):
            index = torch.arange(
                start, min(start + self.params.minibatch_size, len(batch)), device=self.device
            )
            sub = rows(batch, index)
            width = sub.mask.shape[1]
            _, logprobs, hidden = self._policy_forward(
                self.model, sub, hidden=self.value_head.backbone is None
            )
            old_logprobs[index, :width] = logprobs
            old_values[index, :width] = self._values(sub, hidden)
            del hidden
            ref = self._reference_logprobs(sub) if self.params.kl_coef > 0 else logprobs
            ref_logprobs[index, :width] = ref
        return old_logprobs, old_values, ref_logprobs

    def _update(
        self,
        batch: PPOBatch,
        index: Any,
        old_logprobs: Any,
        old_values: Any,
        advantages: Any,
        returns: Any,
        ref_logprobs: Any,
    ) -> dict[str, float]:
        import torch

        params = self.params
        sub = rows(batch, index)
        mask = sub.mask
        width = mask.shape[1]
        logits, logprobs, hidden = self._policy_forward(
            self.model, sub, hidden=self.value_head.backbone is None
        )
        values = self._values(sub, hidden)
        pg_loss, clip_fraction, approx_kl = ppo_core.policy_loss(
            logprobs, old_logprobs[index, :width], advantages[index, :width], mask, params.clip_range
        )
        vf_loss, vf_clip = ppo_core.value_loss(
            values, old_values[index, :width], returns[index, :width], mask, params.value_clip_range
        )
        if params.entropy_coef > 0:
            entropy = ppo_core.masked_mean(ppo_core.entropy_from_logits(logits), mask)
        else:
            with torch.no_grad():
                entropy = ppo_core.masked_mean(ppo_core.entropy_from_logits(logits), mask)
        loss = pg_loss + params.vf_coef * vf_loss - params.entropy_coef * entropy
        stats: dict[str, float] = {}
        if params.kl_mode == "loss" and params.kl_coef > 0:
            kl_loss = ppo_core.masked_mean(
                ppo_core.kl_estimate(logprobs, ref_logprobs[index, :width], "k3"), mask
            )
            loss = loss + params.kl_coef * kl_loss
            stats["kl_loss"] = float(kl_loss.detach())
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(
            self.policy_parameters + self.value_parameters, params.max_grad_norm
        )
        self.optimizer.step()
        stats.update(
            loss=float(loss.detach()),
            policy_loss=float(pg_loss.detach()),
            value_loss=float(vf_loss.detach()),
            entropy=float(entropy.detach()),
            clip_fraction=float(clip_fraction),
            value_clip_fraction=float(vf_clip),
            approx_kl=float(approx_kl),
            grad_norm=float(grad_norm),
        )
        return stats

    # --- checkpoints ---------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly: trainable weights (all weights for full fine-tuning),
        the value head, optimizer, LR scheduler, random generators and the step counter."""
        import numpy as np
        import torch

        rng: dict[str, Any] = {
            "torch": torch.get_rng_state(),
            "numpy": np.random.get_state(),
            "python": random.getstate(),
            "shuffle": self.generator.get_state(),
        }
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        return {
            "step": self.step_count,
            "lora": self.lora,
            "policy": _weights(self.model, everything=not self.lora),
            "value_head": _weights(self.value_head, everything=not self.lora),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": rng,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (on a trainer built with the same model and params)."""
        import numpy as np
        import torch

        if bool(state.get("lora")) != self.lora:
            raise ValueError(
                f"The checkpoint was saved with lora={state.get('lora')!r}, this trainer has lora={self.lora}"
            )
        _load_weights(self.model, state["policy"], not self.lora, "policy")
        _load_weights(self.value_head, state["value_head"], not self.lora, "value head")
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        rng = state["rng"]
        torch.set_rng_state(rng["torch"])
        np.random.set_state(rng["numpy"])
        random.setstate(rng["python"])
        self.generator.set_state(rng["shuffle"])
        if "cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])
        self.step_count = int(state["step"])

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`state_dict` to ``path`` atomically (a temporary file, then a rename)."""
        import torch

        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ppo-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                torch.save(self.state_dict(), fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return target

    def load(self, path: str | os.PathLike[str]) -> None:
        """Restore a file written by :meth:`save`."""
        import torch

        self.load_state_dict(torch.load(path, map_location=self.device, weights_only=False))
