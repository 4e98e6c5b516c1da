"""A training run's folder: run.json, metrics.jsonl, TensorBoard, transcripts, snapshots, the reward curve and the final weights."""

from __future__ import annotations

import copy
import json
import math
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from executors.spec import JobSpec
from executors.training.config import DEFAULT_MODEL
from executors.training.outcomes import is_success
from gym_tinker.trajectory import Trajectory

__all__ = ["RunFolder", "is_peft"]

_REWARD_KEYS = ("reward", "mean_reward", "env_reward")


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
        if is_peft(model):
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


def is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")
