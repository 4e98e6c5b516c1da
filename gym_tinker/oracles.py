"""Scripted oracle agents: the perfect next action for any gym_tinker env, from its hidden task.

Each env module defines ``oracle(env) -> str``; :func:`oracle_action` finds the right one from
the (unwrapped) env's class, so an oracle works through ``gym.make``'s wrappers and for
subclasses. Oracles prove every task is solvable and exercise the reward path end to end; they
are also the scripted policy of ``python -m gym_tinker`` and of ``bench/env_throughput.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from gym_tinker.trajectory import StopReason, Trajectory, Turn

__all__ = ["Episode", "OraclePolicy", "oracle_action", "oracle_trajectories", "play_episode"]

OracleFn = Callable[[Any], str]


def _find_oracle(env: gym.Env) -> OracleFn:
    inner = env.unwrapped
    for cls in type(inner).__mro__:
        if cls.__module__ in ("builtins", "gym_tinker.core") or cls.__module__.startswith("gymnasium"):
            break
        fn = getattr(importlib.import_module(cls.__module__), "oracle", None)
        if callable(fn):
            return fn
    raise TypeError(
        f"No oracle for {type(inner).__name__}: expected a function `oracle(env) -> str` in module "
        f"{type(inner).__module__!r} (or in the module of a base class)"
    )


def oracle_action(env: gym.Env) -> str:
    """The next action a perfect agent would send in ``env`` (wrapped or not), mid-episode.

    Raises:
        TypeError: When the env's module (and its base classes' modules) defines no ``oracle``.

    Example:
        >>> import gymnasium as gym
        >>> import gym_tinker
        >>> env = gym.make("tinker/Wordle-v0")
        >>> _ = env.reset(seed=0)
        >>> env.step(oracle_action(env))[1]
        1.0
    """
    return _find_oracle(env)(env)


class OraclePolicy:
    """A policy object around :func:`oracle_action`: ``policy(env) -> str``.

    It caches the oracle function per env class. Multi-turn envs are solved by calling it once
    per turn; it reads the env's hidden state, so it needs the env itself, not observations.

    Example:
        >>> import gymnasium as gym
        >>> import gym_tinker
        >>> policy, env = OraclePolicy(), gym.make("tinker/GuessNumber-v0")
        >>> _ = env.reset(seed=0)
        >>> env.step(policy(env))[1:3]
        (1.0, True)
    """

    def __init__(self) -> None:
        self._oracles: dict[type, OracleFn] = {}

    def __call__(self, env: gym.Env) -> str:
        cls = type(env.unwrapped)
        fn = self._oracles.get(cls)
        if fn is None:
            fn = self._oracles[cls] = _find_oracle(env)
        return fn(env)


@dataclass
class Episode:
    """What happened in one episode played by :func:`play_episode`."""

    observations: list[str] = field(default_factory=list)
    """The reset observation, then one per step."""
    actions: list[str] = field(default_factory=list)
    """One per step."""
    rewards: list[float] = field(default_factory=list)
    """One per step."""
    terminated: bool = False
    """The episode ended by the task (answer given, game over)."""
    truncated: bool = False
    """The episode ran out of turns."""
    info: dict[str, Any] = field(default_factory=dict)
    """The reset info (system prompt, tools, task id)."""

    @property
    def total_reward(self) -> float:
        """Sum of the step rewards."""
        return float(sum(self.rewards))


def play_episode(
    env: gym.Env,
    policy: Callable[[gym.Env], str] = oracle_action,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    max_steps: int = 1000,
) -> Episode:
    """Reset ``env`` and step it with ``policy(env)`` until the episode ends.

    Args:
        env: Any text env, wrapped or not.
        policy: Called with the env before each step; returns the action text.
        seed: Passed to ``reset``.
        options: Passed to ``reset``.
        max_steps: Safety bound for envs without a turn limit.

    Example:
        >>> import gymnasium as gym
        >>> import gym_tinker
        >>> episode = play_episode(gym.make("tinker/GuessNumber-v0", difficulty="hard"), seed=1)
        >>> episode.total_reward, episode.terminated, len(episode.actions)
        (1.0, True, 1)
    """
    observation, info = env.reset(seed=seed, options=options)
    episode = Episode(observations=[observation], info=info)
    for _ in range(max_steps):
        action = policy(env)
        observation, reward, terminated, truncated, _ = env.step(action)
        episode.actions.append(action)
        episode.observations.append(observation)
        episode.rewards.append(float(reward))
        if terminated or truncated:
            episode.terminated, episode.truncated = bool(terminated), bool(truncated)
            break
    return episode


def oracle_trajectories(env_id: str, seeds: Iterable[int], **env_kwargs: Any) -> list[Trajectory]:
    """Demonstrations: the oracle's episode for each seed, as text trajectories for SFT.

    Each trajectory holds the reset info's ``system_prompt`` and ``tools`` in its metadata, and
    per turn what the agent saw, the oracle's action, the reward and the step's info (whose
    ``observation_role`` makes a tool result a ``tool`` message), which is what
    :func:`gym_tinker.rollout.to_messages` and the SFT job render: the conversation a model sees
    in a rollout of the same env. Behaviour cloning from these gives a model that cannot yet
    call tools (so that GRPO's groups have nothing to reinforce) its first successes.

    Example:
        >>> [t] = oracle_trajectories("tinker/ToolUse-v0", [3], difficulty="easy")
        >>> t.total_reward, t.stop_reason, [turn.info.get("observation_role") for turn in t.turns]
        (1.0, 'terminated', ['tool', 'user'])
        >>> t.turns[0].action.startswith("<tool_call>"), [tool["function"]["name"] for tool in t.metadata["tools"]][:2]
        (True, ['calculator', 'python'])
    """
    env = gym.make(env_id, **env_kwargs)
    trajectories = []
    try:
        for seed in seeds:
            observation, info = env.reset(seed=seed)
            metadata = {
                "system_prompt": info.get("system_prompt", ""),
                "tools": list(info.get("tools") or []),
            }
            turns: list[Turn] = []
            while True:
                action = oracle_action(env)
                next_observation, reward, terminated, truncated, step_info = env.step(action)
                turns.append(Turn(observation, action, float(reward), dict(step_info)))
                observation = next_observation
                if terminated or truncated:
                    break
            stop_reason: StopReason = "terminated" if terminated else "truncated"
            trajectories.append(
                Trajectory(
                    tuple(turns),
                    env_id,
                    seed=seed,
                    agent="oracle",
                    stop_reason=stop_reason,
                    metadata=metadata,
                )
            )
    finally:
        env.close()
    return trajectories
