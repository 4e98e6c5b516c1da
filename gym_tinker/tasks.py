"""Task sources for text envs: difficulty levels and dataset-backed tasks (JSONL or `datasets`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DIFFICULTIES", "TaskDataset", "check_difficulty"]

DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")
"""The difficulty levels every procedural env accepts."""


def check_difficulty(value: Any) -> str:
    """Return ``value`` if it is a known difficulty, else raise a ``ValueError`` naming it.

    Example:
        >>> check_difficulty("easy")
        'easy'
        >>> check_difficulty("impossible")
        Traceback (most recent call last):
        ...
        ValueError: Expected `difficulty` to be one of ('easy', 'medium', 'hard'), got 'impossible'
    """
    if value not in DIFFICULTIES:
        raise ValueError(f"Expected `difficulty` to be one of {DIFFICULTIES}, got {value!r}")
    return str(value)


class TaskDataset:
    """Tasks taken from a data set instead of a generator.

    Args:
        dataset: A JSONL file path (one JSON object per line), a ``datasets.Dataset``, or any
            sequence of mappings.
        required: Columns every row must have.
        optional: Columns a row may have; other columns are kept but ignored.
        env_name: Named in error messages.

    Rows are loaded once and validated up front, so a bad file fails at construction, not
    mid-training.

    Example:
        >>> tasks = TaskDataset([{"question": "1+1?", "answer": 2}], required=["question", "answer"])
        >>> len(tasks)
        1
        >>> tasks.pick(np.random.default_rng(0), None)
        (0, {'question': '1+1?', 'answer': 2})
        >>> TaskDataset([{"question": "?"}], required=["question", "answer"], env_name="Math")
        Traceback (most recent call last):
        ...
        ValueError: Math dataset row 0 is missing column(s) ['answer']; expected columns ['question', 'answer']
    """

    def __init__(
        self,
        dataset: str | os.PathLike[str] | Iterable[Mapping[str, Any]] | Any,
        *,
        required: Sequence[str],
        optional: Sequence[str] = (),
        env_name: str = "env",
    ):
        self.env_name = env_name
        self.required = tuple(required)
        self.optional = tuple(optional)
        self.source = str(dataset) if isinstance(dataset, (str, os.PathLike)) else type(dataset).__name__
        rows = self._load(dataset)
        if not rows:
            raise ValueError(f"{env_name} dataset {self.source!r} has no rows")
        for index, row in enumerate(rows):
            missing = [c for c in self.required if c not in row]
            if missing:
                raise ValueError(
                    f"{env_name} dataset row {index} is missing column(s) {missing}; "
                    f"expected columns {list(self.required)}"
                    + (f" (optional: {list(self.optional)})" if self.optional else "")
                )
        self.rows = rows

    def _load(self, dataset: Any) -> list[dict[str, Any]]:
        if isinstance(dataset, (str, os.PathLike)):
            return self._load_jsonl(Path(dataset))
        if isinstance(dataset, Mapping):
            raise TypeError(
                f"Expected {self.env_name} `dataset` to be a JSONL path, a datasets.Dataset or a sequence "
                f"of dicts, got a single mapping with keys {list(dataset)[:5]}"
            )
        try:
            rows = [dict(row) for row in dataset]
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"Expected {self.env_name} `dataset` to be a JSONL path, a datasets.Dataset or a sequence "
                f"of dicts, got {type(dataset).__name__}"
            ) from e
        return rows

    def _load_jsonl(self, path: Path) -> list[dict[str, Any]]:
        if not path.is_file():
            raise FileNotFoundError(f"{self.env_name} dataset file not found: {str(path)!r}")
        rows = []
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(
                        f"{self.env_name} dataset {str(path)!r} line {number} is not JSON: {e}"
                    ) from e
                if not isinstance(row, dict):
                    raise ValueError(
                        f"{self.env_name} dataset {str(path)!r} line {number}: expected a JSON object, "
                        f"got {type(row).__name__}"
                    )
                rows.append(row)
        return rows

    def __len__(self) -> int:
        return len(self.rows)

    def pick(self, rng: np.random.Generator, options: Mapping[str, Any] | None) -> tuple[int, dict[str, Any]]:
        """Choose a row: ``options["task_index"]`` if given, else one drawn from ``rng``."""
        index = (options or {}).get("task_index")
        if index is None:
            index = int(rng.integers(len(self.rows)))
        elif not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.rows):
            raise ValueError(
                f"Expected options['task_index'] to be an int in [0, {len(self.rows)}), got {index!r}"
            )
        return int(index), dict(self.rows[int(index)])
