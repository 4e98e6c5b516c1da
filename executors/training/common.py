"""What every training job shares: the trainable policy, the run folder, held-out evaluation and the job callback.

The pieces, used by :mod:`executors.training.grpo`, :mod:`~executors.training.ppo` and
:mod:`~executors.training.sft`:

* :func:`load_policy`: a fresh, trainable copy of the job's model, LoRA-wrapped with peft or
  full-parameter, per the spec's ``adapter``;
* :class:`RunFolder`: ``metrics.jsonl``, transcripts, the reward-curve PNG and the final adapter;
* :func:`heldout_eval`: greedy accuracy on fixed held-out seeds (the number that says whether the
  agent got better, which the training reward alone does not);
* :class:`JobCallback`: a ``transformers.TrainerCallback`` that connects TRL's trainers to the
  scheduler (metrics, checkpoints, preempt and cancel at step boundaries).
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executors.context import JobContext
from executors.spec import JobSpec, LoraConfig
from executors.training.config import DEFAULT_MODEL, TrainParams
from executors.training.outcomes import group_metrics, is_success
from executors.training.run_folder import RunFolder
from gym_tinker.trajectory import Trajectory

try:  # transformers is in the `train` extra; the callback base is only needed with it
    from transformers import TrainerCallback as _CallbackBase
except ImportError:  # pragma: no cover - exercised only without the train extra
    _CallbackBase = object  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    from executors.sampling import HFSampler

__all__ = [
    "DEFAULT_MODEL",
    "JobCallback",
    "Policy",
    "RunFolder",
    "checkpoint_step",
    "group_metrics",
    "heldout_eval",
    "heldout_seeds",
    "is_success",
    "last_trainer_checkpoint",
    "load_policy",
    "lora_config",
    "make_sampler",
    "raise_if_stopped",
    "sampling_mode",
    "seed_everything",
    "set_threads",
]


_REWARD_KEYS = ("reward", "mean_reward", "env_reward")


# --- process set-up ----------------------------------------------------------------------------


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (dropout, data order).

    >>> seed_everything(3); a = random.random(); seed_everything(3); a == random.random()
    True
    """
    import numpy as np

    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    with contextlib.suppress(ImportError):
        import torch

        torch.manual_seed(seed)


def set_threads(threads: int | None) -> None:
    """Set torch's CPU threads for this job (``None`` leaves torch's default)."""
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


# --- the trainable policy ------------------------------------------------------------------------


@dataclass
class Policy:
    """A trainable model and its tokenizer."""

    model: Any
    """A peft ``PeftModel`` (LoRA) or the plain transformers model (full parameters)."""
    tokenizer: Any
    lora: bool
    """True when only a LoRA adapter trains."""
    reference: str
    """The model reference it was loaded from."""

    def trainable_parameters(self) -> int:
        """Number of parameters that train."""
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)


def lora_config(adapter: LoraConfig | str | None) -> Any:
    """peft's ``LoraConfig`` for a spec's ``adapter``; ``None`` for ``"full"``. No adapter means default LoRA.

    >>> lora_config("full") is None
    True
    >>> cfg = lora_config(LoraConfig(r=4, target_modules=["q_proj"]))
    >>> cfg.r, sorted(cfg.target_modules), cfg.task_type
    (4, ['q_proj'], 'CAUSAL_LM')
    """
    if adapter == "full":
        return None
    if isinstance(adapter, str):
        raise ValueError(f"Expected a LoRA config or 'full' as adapter, got {adapter!r}")
    from peft import LoraConfig as PeftLoraConfig

    ours = adapter or LoraConfig.model_validate({})
    return PeftLoraConfig(
        r=ours.r,
        lora_alpha=ours.alpha,  # type: ignore[arg-type]  # peft annotates int; it scales by alpha / r
        lora_dropout=ours.dropout,
        target_modules=ours.target_modules,
        task_type="CAUSAL_LM",
    )


def load_policy(spec: JobSpec, params: TrainParams) -> Policy:
    """A fresh trainable copy of ``spec.model`` (default SmolLM2-135M-Instruct), wrapped per ``spec.adapter``.

    The copy is the job's own: the shared model cache that samplers use is never trained in
    place. With LoRA only the adapter's parameters require gradients; with ``"full"`` all do.

    Example:
        >>> policy = load_policy(JobSpec(kind="grpo", model="tiny-random", adapter={"r": 2}), TrainParams())
        >>> policy.lora, 0 < policy.trainable_parameters() < sum(p.numel() for p in policy.model.parameters())
        (True, True)
    """
    from executors.models import load_model

    reference = spec.model or DEFAULT_MODEL
    model, tokenizer = load_model(reference, device=params.device, cache=False)
    config = lora_config(spec.adapter)
    if config is None:
        for parameter in model.parameters():
            parameter.requires_grad_(True)
        model.train()
        return Policy(model, tokenizer, lora=False, reference=reference)
    import warnings

    from peft import get_peft_model

    with warnings.catch_warnings():
        # peft reads transformers' deprecated `is_gradient_checkpointing`; not ours to fix.
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        peft_model = get_peft_model(model, config)
    peft_model.train()
    return Policy(peft_model, tokenizer, lora=True, reference=reference)


@contextlib.contextmanager
def sampling_mode(model: Any) -> Iterator[Any]:
    """Put ``model`` in eval mode (no dropout) for sampling, then back in the mode it was in.

    >>> import torch
    >>> layer = torch.nn.Dropout(0.5)
    >>> with sampling_mode(layer):
    ...     layer.training
    False
    >>> layer.training
    True
    """
    was_training = bool(model.training)
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def make_sampler(model: Any, tokenizer: Any) -> HFSampler:
    """An :class:`~executors.sampling.HFSampler` over the live training model, with the current weights.

    A peft model is sampled through its base model, in which the LoRA layers are injected and
    active. Call ``sampler.invalidate_cache()`` after every optimizer step: fused AdamW updates
    weights without bumping the version counters the prefix cache checks.
    """
    from executors.sampling import HFSampler

    target = model.get_base_model() if hasattr(model, "get_base_model") else model
    return HFSampler((target, tokenizer))


def heldout_seeds(params: TrainParams) -> list[int]:
    """The fixed held-out seeds: ``eval_episodes`` seeds from ``eval_seed``.

    >>> heldout_seeds(TrainParams(eval_episodes=3, eval_seed=10))
    [10, 11, 12]
    """
    return list(range(params.eval_seed, params.eval_seed + params.eval_episodes))


def heldout_eval(
    model: Any,
    tokenizer: Any,
    env_id: str,
    seeds: Sequence[int],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    max_tokens: int = 128,
    max_turns: int | None = None,
    token_budget: int | None = None,
    batch_size: int = 16,
    sampler: HFSampler | None = None,
) -> dict[str, Any]:
    """Greedy accuracy of ``model`` on ``env_id`` over fixed ``seeds``: the held-out metric of every trainer.

    Returns:
        ``heldout_accuracy`` (fraction of episodes solved, see :func:`is_success`),
        ``heldout_reward`` (mean total reward), ``heldout_episodes`` and the ``trajectories``.

    Example:
        >>> from executors.models.tiny import tiny_random_model
        >>> model, tok = tiny_random_model()
        >>> out = heldout_eval(model, tok, "tinker/Math-v0", [0, 1], max_tokens=4)
        >>> out["heldout_episodes"], 0.0 <= out["heldout_accuracy"] <= 1.0
        (2, True)
    """
    import gymnasium as gym

    import gym_tinker  # noqa: F401  (registers the envs)
    from gym_tinker.policy import SamplingParams
    from gym_tinker.rollout import rollout

    if not seeds:
        return {"heldout_accuracy": 0.0, "heldout_reward": 0.0, "heldout_episodes": 0, "trajectories": []}
    if sampler is None:
        sampler = make_sampler(model, tokenizer)
    else:
        sampler.invalidate_cache()  # weights may have changed without the cache noticing
    envs = [gym.make(env_id, **dict(env_kwargs or {})) for _ in range(min(batch_size, len(seeds)))]
    try:
        with sampling_mode(model):
            result = rollout(
                envs,
                sampler,
                seeds=list(seeds),
                params=SamplingParams(max_tokens=max_tokens, temperature=0.0, seed=0),
                max_turns=max_turns,
                token_budget=token_budget,
                keep_failed=True,
            )
    finally:
        for env in envs:
            env.close()
    trajectories = list(result)
    n = len(seeds)
    return {
        "heldout_accuracy": sum(is_success(t) for t in trajectories) / n,
        "heldout_reward": sum(float(t.total_reward or 0.0) for t in trajectories) / n,
        "heldout_episodes": n,
        "trajectories": trajectories,
    }


# --- TRL trainers under the scheduler ----------------------------------------------------------------


def last_trainer_checkpoint(folder: str | os.PathLike[str]) -> str | None:
    """The newest complete ``checkpoint-N`` folder of a transformers ``Trainer`` under ``folder``, or None.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for n in (2, 10):
    ...         os.makedirs(f"{d}/checkpoint-{n}"); open(f"{d}/checkpoint-{n}/trainer_state.json", "w").close()
    ...     os.makedirs(f"{d}/checkpoint-12")  # incomplete: no trainer_state.json
    ...     os.path.basename(last_trainer_checkpoint(d))
    'checkpoint-10'
    """
    root = Path(folder)
    if not root.is_dir():
        return None
    found = []
    for child in root.iterdir():
        name = child.name
        if name.startswith("checkpoint-") and name[11:].isdigit() and (child / "trainer_state.json").exists():
            found.append((int(name[11:]), child))
    return str(max(found)[1]) if found else None


def checkpoint_step(checkpoint: str | os.PathLike[str] | None) -> int:
    """The global step a ``checkpoint-N`` folder was saved at (0 for None).

    >>> checkpoint_step("/runs/x/checkpoint-40"), checkpoint_step(None)
    (40, 0)
    """
    if checkpoint is None:
        return 0
    return int(Path(checkpoint).name.rsplit("-", 1)[1])


def raise_if_stopped(ctx: JobContext) -> None:
    """After a trainer returned: raise ``JobPreempted``/``JobCancelled`` if the scheduler asked it to stop."""
    ctx.check_signals()


def trainer_arguments(params: TrainParams, output_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``transformers.TrainingArguments`` fields every TRL trainer of ours sets the same way.

    Optimiser and schedule from ``params``; a checkpoint every ``checkpoint_every`` steps (the two
    newest kept: resuming needs the newest, the one before covers a save cut short); a log line
    every step; CPU without bf16; no progress bars (the job reports its own).

    >>> args = trainer_arguments(TrainParams(checkpoint_every=5), "/tmp/out")
    >>> args["save_steps"], args["use_cpu"], args["bf16"]
    (5, True, False)
    """
    on_cpu = params.device == "cpu"
    return {
        "output_dir": str(output_dir),
        "learning_rate": params.learning_rate,
        "lr_scheduler_type": params.lr_scheduler,
        "warmup_steps": params.warmup_steps,
        "weight_decay": params.weight_decay,
        "max_grad_norm": params.max_grad_norm,
        "seed": params.seed,
        "save_strategy": "steps",
        "save_steps": params.checkpoint_every,
        "save_total_limit": 2,
        "logging_steps": 1,
        "use_cpu": on_cpu,
        "bf16": False if on_cpu else None,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        # transformers 5's name for gradient checkpointing (TRL's configs default the old name to on).
        "activation_checkpointing": params.gradient_checkpointing,
        "activation_checkpointing_kwargs": {"use_reentrant": False}
        if params.gradient_checkpointing
        else None,
    }


def reporting(params: TrainParams, run: RunFolder) -> tuple[list[str], list[Any]]:
    """``report_to`` for a TRL trainer, and extra callbacks: TensorBoard events go to the run folder.

    transformers would put TensorBoard's events under the trainer's checkpoint folder; our own
    ``TensorBoardCallback`` writes them to ``<run>/tensorboard`` beside ``metrics.jsonl``.
    """
    report_to = params.integrations()
    callbacks: list[Any] = []
    if "tensorboard" in report_to:
        from torch.utils.tensorboard import SummaryWriter
        from transformers.integrations import TensorBoardCallback

        report_to = [name for name in report_to if name != "tensorboard"]
        callbacks.append(TensorBoardCallback(SummaryWriter(log_dir=str(run.tensorboard_dir))))
    return report_to, callbacks


class JobCallback(_CallbackBase):  # type: ignore[misc,valid-type]
    """Connects a transformers/TRL trainer to a job: metrics, held-out evaluation, transcripts, stop signals.

    * ``on_log``: the trainer's numeric logs (plus ``extra_metrics()``) go to ``metrics.jsonl``
      and ``ctx.report``;
    * held-out evaluation (``evaluate()``, a function returning metrics) before the first step,
      every ``params.eval_every`` steps and after the last;
    * transcripts (``transcripts()``, the latest trajectories) every ``params.sample_every`` steps;
    * at each step end, a preempt or cancel from the scheduler makes the trainer save a
      checkpoint and stop; the body then calls :func:`raise_if_stopped`;
    * each checkpoint's weights are also saved as a snapshot (``snapshots/step-N``).
    """

    def __init__(
        self,
        ctx: JobContext,
        run: RunFolder,
        params: TrainParams,
        *,
        evaluate: Callable[[], Mapping[str, Any]] | None = None,
        extra_metrics: Callable[[], Mapping[str, Any]] | None = None,
        transcripts: Callable[[], Sequence[Trajectory]] | None = None,
        snapshots: bool = True,
    ) -> None:
        self.ctx, self.run, self.params = ctx, run, params
        self.snapshots = snapshots
        self.evaluate, self.extra_metrics, self.transcripts = evaluate, extra_metrics, transcripts
        self.stopped = False
        self.last_eval_step: int | None = None
        self.evaluations: dict[int, dict[str, float]] = {}

    def _evaluate(self, step: int) -> None:
        if self.evaluate is None or self.params.eval_episodes == 0 or self.last_eval_step == step:
            return
        began = time.perf_counter()
        metrics = {k: float(v) for k, v in self.evaluate().items() if isinstance(v, int | float)}
        metrics["heldout_seconds"] = time.perf_counter() - began
        self.last_eval_step = step
        self.evaluations[step] = metrics
        self.run.log_metrics(step, metrics)
        self.ctx.report(step=step, **metrics)
        self.ctx.log(f"step {step}: held-out accuracy {metrics.get('heldout_accuracy', float('nan')):.3f}")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if state.global_step == 0:
            self._evaluate(0)
        return control

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        metrics = {
            k: v for k, v in (logs or {}).items() if isinstance(v, int | float) and not isinstance(v, bool)
        }
        if self.extra_metrics is not None:
            metrics.update(self.extra_metrics())
        if not metrics or "train_runtime" in metrics:  # the end-of-training summary is not a step
            return control
        row = self.run.log_metrics(state.global_step, metrics)
        row.pop("time", None)
        row.pop("step", None)
        self.ctx.report(step=state.global_step, **{k: v for k, v in row.items() if v is not None})
        return control

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        step = state.global_step
        if self.transcripts is not None and step % self.params.sample_every == 0:
            self.run.save_transcripts(step, self.transcripts())
        if self.params.eval_every and step % self.params.eval_every == 0:
            self._evaluate(step)
        if self.ctx.should_stop():
            self.stopped = True
            control.should_save = True
            control.should_training_stop = True
            self.ctx.log(f"step {step}: stopping for a {self.ctx.stop_reason} (checkpoint saved)")
        return control

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        # Each trainer checkpoint is also a named snapshot (`<run>/<step>` in `gym-tinker models`).
        model, tokenizer = kwargs.get("model"), kwargs.get("processing_class")
        if self.snapshots and model is not None and tokenizer is not None:
            self.run.save_snapshot(state.global_step, model, tokenizer)
        return control

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if not self.stopped and state.global_step >= state.max_steps:
            self._evaluate(state.global_step)
        return control
