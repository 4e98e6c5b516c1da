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
import copy
import json
import math
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executors.context import JobContext
from executors.spec import JobSpec, LoraConfig
from executors.training.config import TrainParams
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

DEFAULT_MODEL = "smollm2-135m-instruct"
"""The model a training job uses when its spec names none."""

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


# --- outcomes ------------------------------------------------------------------------------------


def is_success(trajectory: Trajectory) -> bool:
    """Whether an episode solved its task: the last turn's ``info["correct"]`` when the env reports it, else reward > 0.

    An episode that did not terminate (ran out of turns or tokens, or failed) never solved its
    task, whatever shaping rewards it collected on the way (ToolUse's ``tool_call_bonus``).

    >>> from gym_tinker.trajectory import Turn
    >>> is_success(Trajectory(turns=(Turn("q", "a", 0.1, info={"correct": False}),), env_id="demo"))
    False
    >>> is_success(Trajectory(turns=(Turn("q", "a", 1.0),), env_id="demo"))
    True
    >>> is_success(Trajectory(turns=(Turn("q", "<tool_call>", 0.05),), env_id="demo", stop_reason="truncated"))
    False
    """
    if trajectory.stop_reason != "terminated" or not trajectory.turns:
        return False
    correct = trajectory.turns[-1].info.get("correct")
    if correct is not None:
        return bool(correct)
    return float(trajectory.total_reward or 0.0) > 0


def group_metrics(groups: Sequence[Sequence[Trajectory]]) -> dict[str, float]:
    """Reward, success and the fraction of groups whose rewards are all equal (they teach GRPO nothing).

    >>> from gym_tinker.trajectory import Turn
    >>> def t(r): return Trajectory(turns=(Turn("q", "a", r),), env_id="demo")
    >>> m = group_metrics([[t(1.0), t(0.0)], [t(0.0), t(0.0)]])
    >>> m["zero_variance_fraction"], m["reward_mean"], m["success_rate"]
    (0.5, 0.25, 0.25)
    """
    rewards = [float(t.total_reward or 0.0) for group in groups for t in group]
    successes = [is_success(t) for group in groups for t in group]
    flat = [len({float(t.total_reward or 0.0) for t in group}) <= 1 for group in groups if group]
    n = len(rewards)
    mean = sum(rewards) / n if n else 0.0
    return {
        "zero_variance_fraction": sum(flat) / len(flat) if flat else 0.0,
        "reward_mean": mean,
        "reward_std": math.sqrt(sum((r - mean) ** 2 for r in rewards) / n) if n else 0.0,
        "success_rate": sum(successes) / n if n else 0.0,
    }


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


# --- the run folder ------------------------------------------------------------------------------


class RunFolder:
    """A training run's outputs: ``metrics.jsonl``, ``transcripts/``, ``reward_curve.png``, ``adapter/``.

    Metrics are one JSON object per line with a ``step``; a step may have several lines (training
    metrics, held-out evaluation), merged by :meth:`history`. A resumed run first drops the lines
    after its checkpoint (:meth:`truncate`), so the file reads as one uninterrupted run.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     run = RunFolder(d)
        ...     _ = run.log_metrics(1, {"reward": 0.5}), run.log_metrics(2, {"reward": 0.7})
        ...     run.truncate(after_step=1)
        ...     [row["reward"] for row in run.read_metrics()]
        [0.5]
    """

    def __init__(self, root: str | os.PathLike[str], *, tensorboard: bool = False) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.tensorboard = tensorboard
        """Also write every metric to TensorBoard under ``tensorboard/`` (for trainers that are not TRL's)."""
        self._writer: Any = None

    @property
    def tensorboard_dir(self) -> Path:
        """``tensorboard/``: event files (TRL trainers log here too, through ``report_to``)."""
        return self.root / "tensorboard"

    @property
    def metrics_path(self) -> Path:
        """``metrics.jsonl``."""
        return self.root / "metrics.jsonl"

    @property
    def plot_path(self) -> Path:
        """``reward_curve.png``."""
        return self.root / "reward_curve.png"

    def log_metrics(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Append one line: ``step``, wall-clock ``time`` and the numeric ``metrics``; returns what was written."""
        row: dict[str, Any] = {"step": int(step), "time": round(time.time(), 3)}
        for name, value in metrics.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            row[name] = float(value) if math.isfinite(float(value)) else None
        with self.metrics_path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        if self.tensorboard:
            self._write_tensorboard(row)
        return row

    def _write_tensorboard(self, row: Mapping[str, Any]) -> None:
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(self.tensorboard_dir))
        for name, value in row.items():
            if name not in ("step", "time") and value is not None:
                self._writer.add_scalar(name, value, global_step=row["step"])
        self._writer.flush()

    def close(self) -> None:
        """Close the TensorBoard writer, if one was opened."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def read_metrics(self) -> list[dict[str, Any]]:
        """Every metrics line, in order."""
        if not self.metrics_path.exists():
            return []
        return [json.loads(line) for line in self.metrics_path.read_text().splitlines() if line.strip()]

    def truncate(self, after_step: int) -> None:
        """Drop metric lines with ``step > after_step`` (a resumed run redoes those steps)."""
        rows = [row for row in self.read_metrics() if row["step"] <= after_step]
        tmp = self.metrics_path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
        os.replace(tmp, self.metrics_path)

    def history(self) -> dict[int, dict[str, Any]]:
        """Metrics merged per step (later lines win), sorted by step."""
        merged: dict[int, dict[str, Any]] = {}
        for row in self.read_metrics():
            merged.setdefault(row["step"], {}).update(row)
        return dict(sorted(merged.items()))

    def save_transcripts(self, step: int, trajectories: Iterable[Trajectory], limit: int = 4) -> Path:
        """Write up to ``limit`` episodes of ``step`` as readable Markdown (and JSONL beside it)."""
        from gym_tinker.rollout import to_messages
        from gym_tinker.trajectory import save_jsonl

        chosen = list(trajectories)[:limit]
        folder = self.root / "transcripts"
        folder.mkdir(exist_ok=True)
        save_jsonl(folder / f"step-{step:06d}.jsonl", chosen)
        lines = [f"# Step {step}\n"]
        for number, trajectory in enumerate(chosen):
            lines.append(
                f"## Episode {number} (seed {trajectory.seed}, reward {trajectory.total_reward}, "
                f"{trajectory.stop_reason}, success {is_success(trajectory)})\n"
            )
            for message in to_messages(trajectory):
                if message["role"] == "system":
                    continue
                lines.append(f"**{message['role']}**:\n\n```\n{message['content']}\n```\n")
        path = folder / f"step-{step:06d}.md"
        path.write_text("\n".join(lines))
        return path

    def plot(self, title: str | None = None) -> Path | None:
        """Draw the training reward and the held-out accuracy against steps into ``reward_curve.png``.

        Returns the path, or None when there is nothing to plot yet.
        """
        history = self.history()
        reward_key = next(
            (k for k in _REWARD_KEYS if any(k in row and row[k] is not None for row in history.values())),
            None,
        )
        rewards = [
            (s, row[reward_key])
            for s, row in history.items()
            if reward_key and row.get(reward_key) is not None
        ]
        heldout = [
            (s, row["heldout_accuracy"])
            for s, row in history.items()
            if row.get("heldout_accuracy") is not None
        ]
        if not rewards and not heldout:  # e.g. SFT on a dataset: the loss is the curve there is
            reward_key = "loss"
            rewards = [(s, row["loss"]) for s, row in history.items() if row.get("loss") is not None]
        if not rewards and not heldout:
            return None
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
        if rewards:
            ax.plot(*zip(*rewards, strict=True), label=f"training {reward_key}", color="tab:blue", alpha=0.8)
        if heldout:
            ax.plot(*zip(*heldout, strict=True), "o-", label="held-out accuracy (greedy)", color="tab:orange")
        ax.set_xlabel("step")
        ax.set_ylabel("reward / accuracy")
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
        ax.set_title(title or self.root.name)
        fig.tight_layout()
        fig.savefig(self.plot_path)
        plt.close(fig)
        return self.plot_path

    def write_info(self, spec: JobSpec, **extra: Any) -> Path:
        """Write ``run.json``: what this run trains (kind, base model, adapter kind, env), for ``gym-tinker models``."""
        info = {
            "name": self.root.name,
            "kind": spec.kind,
            "model": spec.model or DEFAULT_MODEL,
            "adapter": "full" if spec.adapter == "full" else "lora",
            "env": spec.env,
            "created": round(time.time(), 3),
            **extra,
        }
        path = self.root / "run.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=2) + "\n")
        os.replace(tmp, path)
        return path

    def save_snapshot(self, step: int, model: Any, tokenizer: Any) -> Path:
        """Save the weights at ``step`` as ``snapshots/step-NNNNNN/`` (a peft adapter folder, or a model folder).

        Snapshots are what ``gym-tinker models`` lists as ``<run>/<step>`` and what
        ``gym-tinker serve`` can serve by that name. Written aside, then renamed into place.
        """
        import shutil
        import tempfile

        folder = self.root / "snapshots" / f"step-{int(step):06d}"
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            if folder.exists():
                shutil.rmtree(folder)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return folder

    def save_final(self, model: Any, tokenizer: Any, *, merge: bool = False) -> dict[str, str]:
        """Save the trained weights: ``adapter/`` (peft ``save_pretrained``) for LoRA, ``model/`` for full.

        With ``merge``, a LoRA run also writes ``merged/``: the adapter merged into a copy of the
        base model, a plain transformers folder. Returns the folders written, by kind.
        """
        saved: dict[str, str] = {}
        if _is_peft(model):
            folder = self.root / "adapter"
            model.save_pretrained(folder)
            tokenizer.save_pretrained(folder)
            saved["adapter"] = str(folder)
            if merge:
                merged = copy.deepcopy(model).merge_and_unload()
                target = self.root / "merged"
                merged.save_pretrained(target)
                tokenizer.save_pretrained(target)
                saved["merged"] = str(target)
        else:
            folder = self.root / "model"
            model.save_pretrained(folder)
            tokenizer.save_pretrained(folder)
            saved["model"] = str(folder)
        return saved


def _is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")


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
