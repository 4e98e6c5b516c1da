"""Live terminal progress for a training job: step, reward, KL, held-out accuracy, tokens/s and ETA, with rich.

:func:`follow_training` reads the job's events from the scheduler (``client.follow``) and keeps
one progress line up to date; log lines print above it. It works the same for a job on the
embedded cluster and one on a remote cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["METRIC_ALIASES", "TrainingProgress", "follow_training", "summarize_metrics"]

METRIC_ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("reward", "reward_mean", "mean_reward"),
    "kl": ("kl", "approx_kl"),
    "acc": ("heldout_accuracy",),
    "tok/s": ("tokens_per_s", "tokens_per_second"),
    "loss": ("loss", "policy_loss"),
}
"""Short column names and the metric names (from TRL's trainers and ours) they show, first found wins."""


def summarize_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Pick the headline numbers out of a step's metrics, by :data:`METRIC_ALIASES`.

    >>> summarize_metrics({"reward": 0.5, "kl": 0.01, "heldout_accuracy": 0.4, "grad_norm": 2.0})
    {'reward': 0.5, 'kl': 0.01, 'acc': 0.4}
    """
    shown: dict[str, float] = {}
    for short, names in METRIC_ALIASES.items():
        for name in names:
            value = metrics.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                shown[short] = float(value)
                break
    return shown


class TrainingProgress:
    """A rich progress bar over a job's steps whose description carries the latest headline metrics.

    Feed it the events of ``client.follow(job_id)`` with :meth:`update`.

    Example:
        >>> from io import StringIO
        >>> console = Console(file=StringIO(), width=120)
        >>> with TrainingProgress(total_steps=4, console=console) as progress:
        ...     progress.update({"type": "metric", "step": 2, "payload": {"reward": 0.25, "kl": 0.001}})
        >>> progress.latest, progress.step
        ({'reward': 0.25, 'kl': 0.001}, 2)
    """

    def __init__(
        self, total_steps: int | None, *, console: Console | None = None, title: str = "training"
    ) -> None:
        self.console = console or Console()
        self.total_steps = total_steps
        self.title = title
        self.step = 0
        self.latest: dict[str, float] = {}
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[metrics]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._task = self._progress.add_task(title, total=total_steps, metrics="")

    def __enter__(self) -> TrainingProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, event: Mapping[str, Any]) -> None:
        """Apply one follow event: metrics move the bar; log lines print above it."""
        kind = event.get("type")
        payload = event.get("payload") or {}
        if kind == "metric":
            if event.get("step") is not None:
                self.step = max(self.step, int(event["step"]))
            self.latest.update(summarize_metrics(payload))
            text = "  ".join(f"{name} {value:.4g}" for name, value in self.latest.items())
            self._progress.update(self._task, completed=self.step, metrics=text)
        elif kind == "log":
            self._progress.console.print(str(payload.get("message", "")), highlight=False, markup=False)
        elif kind == "start":
            attempt = event.get("attempt")
            if attempt and int(attempt) > 1:
                self._progress.console.print(f"attempt {attempt}: resuming from the last checkpoint")


def follow_training(
    events: Iterable[Mapping[str, Any]],
    total_steps: int | None,
    *,
    console: Console | None = None,
    title: str = "training",
) -> TrainingProgress:
    """Show live progress for ``events`` (e.g. ``client.follow(job_id)``) until they end; returns the progress state."""
    progress = TrainingProgress(total_steps, console=console, title=title)
    with progress:
        for event in events:
            progress.update(event)
    return progress
