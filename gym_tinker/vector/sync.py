"""The in-process text vector env, and the stepping and batching both text vector envs share."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from gym_tinker.spaces import TextSpace
from gym_tinker.vector.infos import NO_INFO, batch_infos

__all__ = ["TextVectorEnv"]


def check_num_envs(num_envs: Any) -> None:
    if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")


def env_maker(env_id: str, kwargs: dict[str, Any]) -> Callable[[], gym.Env]:
    """Makes one sub-env: the registered class itself, without ``gym.make``'s env checker and
    order enforcement (a third of a text env's step)."""
    kwargs = {
        k: v for k, v in kwargs.items() if k != "max_episode_steps"
    }  # make_vec passes the spec's (None)
    return functools.partial(_make_unwrapped, env_id, kwargs)


def _make_unwrapped(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    import gym_tinker  # noqa: F401  (registers the envs in a spawned worker)

    return gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped


def check_actions(actions: Any, num_envs: int) -> None:
    if isinstance(actions, str) or len(actions) != num_envs:
        raise ValueError(f"expected a sequence of {num_envs} actions (one str per env), got {actions!r:.200}")


@dataclass
class Stepped:
    """One step of some sub-envs, as plain lists (what a worker sends back)."""

    observations: list[Any]
    rewards: list[float]
    terminations: list[bool]
    truncations: list[bool]
    infos: list[dict[str, Any]]
    finals: list[tuple[int, Any, dict[str, Any]]]
    """Same-step autoreset: (index, final observation, final info) of each env that ended."""


def step_envs(
    envs: Sequence[gym.Env], actions: Sequence[Any], autoreset: list[bool], mode: AutoresetMode
) -> Stepped:
    """Step ``envs`` as ``SyncVectorEnv.step`` does, env by env, with its autoreset rules."""
    n = len(envs)
    out = Stepped([None] * n, [0.0] * n, [False] * n, [False] * n, [NO_INFO] * n, [])
    next_step = mode == AutoresetMode.NEXT_STEP
    same_step = mode == AutoresetMode.SAME_STEP
    observations, terminations, truncations, infos = (
        out.observations,
        out.terminations,
        out.truncations,
        out.infos,
    )
    rewards: list[Any] = out.rewards  # SupportsFloat, as `Env.step` declares
    for i, action in enumerate(actions):
        if next_step and autoreset[i]:
            observations[i], infos[i] = envs[i].reset()
            continue
        observations[i], rewards[i], terminations[i], truncations[i], infos[i] = envs[i].step(action)
        if same_step and (terminations[i] or truncations[i]):
            out.finals.append((i, observations[i], infos[i]))
            observations[i], infos[i] = envs[i].reset()
    return out


class TextVectorBase(gym.vector.VectorEnv):
    """What both text vector envs share: checks, autoreset state, and batching a step's lists."""

    num_envs: int
    autoreset_mode: AutoresetMode
    _autoreset_envs: np.ndarray

    def _autoreset_flags(self) -> list[bool]:
        autoreset = self._autoreset_envs.tolist()
        if self.autoreset_mode == AutoresetMode.DISABLED:
            assert not any(autoreset), f"{self._autoreset_envs=}"  # the user resets finished envs
        return autoreset

    def _finish_step(self, stepped: Stepped) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Rewards, terminations, truncations and the info dict of a step; updates the autoreset flags."""
        terminated = np.array(stepped.terminations, dtype=np.bool_)
        truncated = np.array(stepped.truncations, dtype=np.bool_)
        # New arrays every step, so no copies are needed: what `reset` later writes in place
        # (`_terminations`, `_truncations`) is never what a step returned.
        self._autoreset_envs = terminated | truncated
        rewards = np.array(stepped.rewards, dtype=np.float64)
        ended = [i for i, _, _ in stepped.finals]  # same-step autoreset: these report a final obs and info
        if any("final_obs" in stepped.infos[i] or "final_info" in stepped.infos[i] for i in ended):
            # an env's own info uses those keys too: Gymnasium's env-by-env merge, to the letter
            merged: dict[str, Any] = {}
            for i, observation, info in stepped.finals:
                merged = self._add_info(merged, {"final_obs": observation, "final_info": info}, i)
            for i, info in enumerate(stepped.infos):
                merged = self._add_info(merged, info, i)
            return rewards, terminated, truncated, merged
        per_env = list(stepped.infos)
        for i, observation, info in stepped.finals:
            per_env[i] = {"final_obs": observation, "final_info": info, **per_env[i]}
        return rewards, terminated, truncated, batch_infos(per_env, self.num_envs)


class TextVectorEnv(TextVectorBase, SyncVectorEnv):
    """``num_envs`` copies of a registered text env, stepped in turn in this process.

    Args:
        env_id: A registered env id (``"tinker/Math-v0"``).
        num_envs: How many sub-envs.
        copy: As ``SyncVectorEnv``'s: return copies of the observations (free for ``str``).
        autoreset_mode: ``"NextStep"`` (Gymnasium's default), ``"SameStep"`` or ``"Disabled"``.
        **kwargs: Passed to every sub-env's constructor (``max_turns=4``, ``difficulty="easy"``).

    Example:
        >>> import gymnasium as gym
        >>> import gym_tinker
        >>> envs = gym.make_vec("tinker/GuessNumber-v0", num_envs=2, max_turns=3)
        >>> type(envs).__name__
        'TextVectorEnv'
        >>> observations, infos = envs.reset(seed=0)
        >>> observations, rewards, terminated, truncated, infos = envs.step(["\\\\boxed{5}", "7"])
        >>> len(observations), rewards.shape, infos["turn"].tolist()
        (2, (2,), [1, 1])
        >>> envs.close()
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int = 1,
        *,
        copy: bool = True,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        **kwargs: Any,
    ) -> None:
        check_num_envs(num_envs)
        super().__init__([env_maker(env_id, kwargs)] * num_envs, copy=copy, autoreset_mode=autoreset_mode)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action (a sequence of ``num_envs`` strings).

        Same results as ``SyncVectorEnv.step``, autoreset included.
        """
        check_actions(actions, self.num_envs)
        stepped = step_envs(self.envs, actions, self._autoreset_flags(), self.autoreset_mode)
        self._env_obs = stepped.observations
        return (self._batched_observations(), *self._finish_step(stepped))

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the sub-envs (all, or those in ``options["reset_mask"]``), as ``SyncVectorEnv.reset``."""
        copy = self.copy
        self.copy = False  # the observations are copied below, only where that is not free
        try:
            _, infos = super().reset(seed=seed, options=options)
        finally:
            self.copy = copy
        return self._batched_observations(), infos

    def _batched_observations(self) -> Any:
        self._observations = tuple(self._env_obs)
        if self.copy and not self._immutable_observations:
            return deepcopy(self._observations)
        return self._observations

    @functools.cached_property
    def _immutable_observations(self) -> bool:
        """Text observations are immutable ``str``: a copy could not be told from the original."""
        return isinstance(self.single_observation_space, TextSpace)
