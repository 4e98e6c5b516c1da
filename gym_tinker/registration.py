"""Registers every gym_tinker env with Gymnasium under the ``tinker`` namespace.

Each env enforces its own turn limit, ``max_turns`` (a constructor argument whose default is the
env's ``default_max_turns``): ``gym.make("tinker/ToolUse-v0", max_turns=4)`` changes it. Registering it as
``max_episode_steps`` instead would let Gymnasium's ``TimeLimit`` mark a final answer given on the
last allowed turn as truncated as well as terminated (every episode of a single-turn env).

``gym.make_vec(id, num_envs=N)`` builds the env's ``vector_entry_point``, a
:class:`gym_tinker.vector.TextVectorEnv` (Gymnasium's sync vector API, faster);
``vectorization_mode="sync"`` or ``"async"`` gives Gymnasium's own vector envs.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

import gymnasium as gym

__all__ = ["ENV_ENTRIES", "EnvEntry", "list_envs", "register_all"]

NAMESPACE = "tinker"


@dataclass(frozen=True)
class EnvEntry:
    """One registered env."""

    name: str
    """Name without namespace or version, e.g. ``"ToolUse"``."""
    entry_point: str
    """``"module:Class"``; imported only when the env is made."""
    max_turns: int
    """The env's default turn limit (its ``default_max_turns``); the env truncates itself there."""

    @property
    def id(self) -> str:
        return f"{NAMESPACE}/{self.name}-v0"

    @property
    def vector_entry_point(self) -> str:
        """What ``gym.make_vec(id)`` calls: :func:`gym_tinker.vector.make_text_vec` for this id."""
        return f"gym_tinker.vector:make_{re.sub(r'(?<!^)(?=[A-Z])', '_', self.name).lower()}_vec"


ENV_ENTRIES: tuple[EnvEntry, ...] = (
    EnvEntry("ToolUse", "gym_tinker.envs.tool_use:ToolUseEnv", 8),
    EnvEntry("Math", "gym_tinker.envs.math:MathEnv", 1),
    EnvEntry("Countdown", "gym_tinker.envs.countdown:CountdownEnv", 1),
    EnvEntry("Code", "gym_tinker.envs.code:CodeEnv", 1),
    EnvEntry("Wordle", "gym_tinker.envs.wordle:WordleEnv", 6),
    EnvEntry("GuessNumber", "gym_tinker.envs.guess_number:GuessNumberEnv", 10),
)


def register_all() -> None:
    """Register every env in :data:`ENV_ENTRIES` (idempotent)."""
    for entry in ENV_ENTRIES:
        if entry.id not in gym.registry:
            # The env enforces its own turn limit (`max_turns`, default per env and difficulty) rather than
            # Gymnasium's TimeLimit: TimeLimit marks an episode truncated whenever it reaches the
            # limit, so every single-turn episode would come back terminated *and* truncated.
            gym.register(
                entry.id,
                entry_point=entry.entry_point,
                vector_entry_point=entry.vector_entry_point,
                max_episode_steps=None,
            )


def list_envs() -> list[tuple[str, str]]:
    """``(id, one-line description)`` for every registered gym_tinker env.

    Example:
        >>> import gym_tinker
        >>> ids = [env_id for env_id, _ in gym_tinker.list_envs()]
        >>> "tinker/ToolUse-v0" in ids
        True
    """
    rows = []
    for entry in ENV_ENTRIES:
        module_name, class_name = entry.entry_point.split(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        rows.append((entry.id, getattr(cls, "description", "")))
    return rows
