"""``gym-tinker models``: list the snapshots and final models of every training run, by their ``<run>/<step>`` names."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from executors.registry import RUNS_DIR_ENV, ModelEntry, list_models, runs_dir

__all__ = ["format_size", "models_command", "models_table"]


def format_size(size: int) -> str:
    """A byte count for people.

    Example:
        >>> format_size(512), format_size(2_500_000), format_size(3 * 1024**3)
        ('512 B', '2.4 MB', '3.0 GB')
    """
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def models_table(entries: list[ModelEntry]) -> Table:
    """The entries as a rich table: name, kind, base model, env, step, created, size, path.

    Example:
        >>> models_table([]).row_count
        0
    """
    table = Table(title="Models of training runs (serve one with: gym-tinker serve --model NAME)")
    for column in ("name", "kind", "base model", "env", "step", "created", "size"):
        table.add_column(column, no_wrap=column in ("name", "created"))
    table.add_column("path", overflow="fold")
    for entry in entries:
        kind = f"{entry.trainer} {entry.kind}" if entry.trainer else entry.kind
        created = dt.datetime.fromtimestamp(entry.created).strftime("%Y-%m-%d %H:%M")
        table.add_row(
            entry.name,
            kind,
            entry.base_model or "?",
            entry.env or "-",
            "final" if entry.step is None else str(entry.step),
            created,
            format_size(entry.size),
            entry.path,
        )
    return table


def models_command(
    runs_dir_option: Annotated[
        Path | None,
        typer.Option(
            "--runs-dir",
            help=f"Folder holding the run folders (default: ${RUNS_DIR_ENV}, else ./runs).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per line instead of a table.")
    ] = False,
) -> None:
    """List every run's snapshots (<run>/<step>) and final model (<run>/final), servable by name with gym-tinker serve."""
    root = runs_dir(runs_dir_option)
    entries = list_models(root)
    if not entries:
        why = "has no runs with saved models yet" if root.is_dir() else "does not exist"
        message = (
            f"No models: the runs folder {root.resolve()} {why}. Train one with `gym-tinker train CONFIG`, "
            f"or point --runs-dir (or ${RUNS_DIR_ENV}) at another folder."
        )
        Console(stderr=as_json, highlight=False, soft_wrap=True).print(message, markup=False)
        return
    if as_json:
        for entry in entries:
            typer.echo(json.dumps(dataclasses.asdict(entry)))
        return
    Console(highlight=False).print(models_table(entries))
