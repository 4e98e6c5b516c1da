"""Registers every gym_tinker env with Gymnasium under the ``tinker`` namespace."""

from __future__ import annotations

import importlib
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
    max_episode_steps: int
    """Turn limit applied by ``gym.make``'s ``TimeLimit`` (the env also truncates itself)."""

    @property
    def id(self) -> str:
        return f"{NAMESPACE}/{self.name}-v0"


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
            gym.register(entry.id, entry_point=entry.entry_point, max_episode_steps=entry.max_episode_steps)


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
