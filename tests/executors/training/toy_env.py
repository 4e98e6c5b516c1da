"""A toy text env for learning tests: reward 1 when the answer contains a target letter.

The tiny random model's samples contain the letter "a" about one time in five, so a random
policy sometimes succeeds and a learning algorithm has something to reinforce. Jobs refer to it
as ``tests.executors.training.toy_env:toy/ContainsLetter-v0``: Gymnasium imports the module
(on a Dask worker too) before making the env.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from gym_tinker.core import StepResult, TextEnv

__all__ = ["ENV_ID", "ContainsLetterEnv"]

ENV_ID = "tests.executors.training.toy_env:toy/ContainsLetter-v0"


class ContainsLetterEnv(TextEnv):
    """Single turn: "Write a word." Reward 1 (``info["correct"]``) when the answer contains ``letter``."""

    description = "Toy: reward 1 when the answer contains the target letter."

    def __init__(self, letter: str = "a", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.letter = letter

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        number = int(self.np_random.integers(0, 100))
        return f"Write a word. Task {number}.", {"system_prompt": "", "tools": [], "task_id": f"toy-{number}"}

    def _step(self, action: str) -> StepResult:
        correct = self.letter in action
        return ("Yes." if correct else "No."), float(correct), True, False, {"correct": correct}


if "toy/ContainsLetter-v0" not in gym.registry:
    gym.register("toy/ContainsLetter-v0", entry_point=ContainsLetterEnv)
