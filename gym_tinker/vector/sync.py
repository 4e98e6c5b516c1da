"""The in-process text vector env, and the stepping and batching both text vector envs share."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from copy import deepcopy
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


Stepped = tuple[
    list[Any], list[Any], list[bool], list[bool], list[dict[str, Any]], list[tuple[int, Any, dict[str, Any]]]
]
"""One step of some sub-envs, as plain lists (what a worker sends back): observations, rewards,
terminations, truncations, infos, and for same-step autoreset the (index, final observation,
final info) of each env that ended."""


def step_envs(
    envs: Sequence[gym.Env], actions: Sequence[Any], autoreset: list[bool] | None, mode: AutoresetMode
) -> Stepped:
    """Step ``envs`` as ``SyncVectorEnv.step`` does, env by env, with its autoreset rules
    (``autoreset``: next-step autoreset's flags, the envs that ended last step)."""
    n = len(envs)
    observations: list[Any] = [None] * n
    rewards: list[Any] = [0.0] * n  # SupportsFloat, as `Env.step` declares
    terminations = [False] * n
    truncations = [False] * n
    infos: list[dict[str, Any]] = [NO_INFO] * n
    finals: list[tuple[int, Any, dict[str, Any]]] = []
    i = 0
    if mode == AutoresetMode.SAME_STEP:
        for env, action in zip(envs, actions, strict=True):
            observation, rewards[i], terminated, truncated, info = env.step(action)
            if terminated or truncated:
                terminations[i], truncations[i] = terminated, truncated
                finals.append((i, observation, info))
                observation, info = env.reset()
            observations[i] = observation
            infos[i] = info
            i += 1
    elif autoreset and True in autoreset:  # the envs that ended last step are reset instead
        for env, action, reset in zip(envs, actions, autoreset, strict=True):
            if reset:
                observations[i], infos[i] = env.reset()
            else:
                observations[i], rewards[i], terminations[i], truncations[i], infos[i] = env.step(action)
            i += 1
    else:
        for env, action in zip(envs, actions, strict=True):
            observations[i], rewards[i], terminations[i], truncations[i], infos[i] = env.step(action)
            i += 1
    return observations, rewards, terminations, truncations, infos, finals


INFO_FORMATS = ("dict", "list")

VectorInfos = Any
"""A vector step's infos: Gymnasium's ``dict[str, Any]`` of arrays, or with ``info_format="list"``
a ``list[dict[str, Any]]`` (``Any``, as Gymnasium's ``VectorEnv`` declares the dict)."""


def check_info_format(info_format: Any) -> str:
    if info_format not in INFO_FORMATS:
        raise ValueError(f"info_format must be 'dict' or 'list', got {info_format!r}")
    return str(info_format)


class TextVectorBase(gym.vector.VectorEnv):
    """What both text vector envs share: checks, autoreset state, and batching a step's lists."""

    num_envs: int
    autoreset_mode: AutoresetMode
    info_format: str
    """``"dict"``: Gymnasium's dict of arrays with masks; ``"list"``: one info dict per env,
    as Gymnasium's ``DictInfoToList`` wrapper gives them."""
    _autoreset_envs: np.ndarray

    def _batch_infos(self, infos: list[dict[str, Any] | None]) -> VectorInfos:
        """A reset's infos in the vector env's format (``None``: an env that was not reset)."""
        if self.info_format == "list":
            return [{} if info is None else info for info in infos]
        return batch_infos(infos, self.num_envs)

    def _autoreset_flags(self) -> list[bool] | None:
        """Next-step autoreset's flags (``None`` in the other modes, which do not need them)."""
        mode = self.autoreset_mode
        if mode == AutoresetMode.NEXT_STEP:
            return self._autoreset_envs.tolist()  # type: ignore[no-any-return]
        if mode == AutoresetMode.DISABLED:  # the user resets finished envs
            assert not self._autoreset_envs.any(), f"{self._autoreset_envs=}"
        return None

    def _finish_step(self, stepped: Stepped) -> tuple[np.ndarray, np.ndarray, np.ndarray, VectorInfos]:
        """Rewards, terminations, truncations and the info dict of a step; updates the autoreset flags."""
        _, rewards, terminations, truncations, infos, finals = stepped
        n = self.num_envs
        terminated = np.array(terminations, dtype=np.bool_)
        truncated = np.array(truncations, dtype=np.bool_)
        # New arrays every step, so no copies are needed: what `reset` later writes in place
        # (`_terminations`, `_truncations`) is never what a step returned.
        if self.autoreset_mode != AutoresetMode.SAME_STEP:  # (same-step autoreset never reads it)
            self._autoreset_envs = terminated | truncated
        rewards_array = np.array(rewards, dtype=np.float64)
        if self.info_format == "list":  # each env's own dict, as `DictInfoToList` would give it
            if finals:
                infos = list(infos)
                for i, observation, info in finals:
                    infos[i] = {"final_obs": observation, "final_info": info, **infos[i]}
            return rewards_array, terminated, truncated, infos
        batched = batch_infos(infos, n)
        if not finals:
            return rewards_array, terminated, truncated, batched
        if "final_obs" in batched or "final_info" in batched:
            # an env's own info uses those keys too: Gymnasium's env-by-env merge, to the letter
            return rewards_array, terminated, truncated, self._merge_env_by_env(infos, finals)
        # same-step autoreset: the envs that ended report their final observation and info
        final_obs = np.empty(n, dtype=object)  # (all None)
        ended = np.zeros(n, dtype=np.bool_)
        final_infos: list[dict[str, Any] | None] = [None] * n
        for i, observation, info in finals:
            final_obs[i], ended[i], final_infos[i] = observation, True, info
        batched["final_obs"], batched["_final_obs"] = final_obs, ended
        batched["final_info"], batched["_final_info"] = batch_infos(final_infos, n), ended.copy()
        return rewards_array, terminated, truncated, batched

    def _merge_env_by_env(
        self, infos: list[dict[str, Any]], finals: list[tuple[int, Any, dict[str, Any]]]
    ) -> dict[str, Any]:
        """``SyncVectorEnv``'s same-step info, built as it builds it."""
        merged: dict[str, Any] = {}
        final_of = {i: (observation, info) for i, observation, info in finals}
        for i, info in enumerate(infos):
            if i in final_of:
                observation, final_info = final_of[i]
                merged = self._add_info(merged, {"final_obs": observation, "final_info": final_info}, i)
            merged = self._add_info(merged, info, i)
        return merged


class TextVectorEnv(TextVectorBase, SyncVectorEnv):
    """``num_envs`` copies of a registered text env, stepped in turn in this process.

    Args:
        env_id: A registered env id (``"tinker/Math-v0"``).
        num_envs: How many sub-envs.
        copy: As ``SyncVectorEnv``'s: return copies of the observations (free for ``str``).
        autoreset_mode: ``"NextStep"`` (Gymnasium's default), ``"SameStep"`` or ``"Disabled"``.
        info_format: ``"dict"`` (Gymnasium's): a dict of arrays, each with a mask ``_key`` of the
            envs that reported the key. ``"list"``: a list of each env's own info dict, what
            wrapping the vector env in Gymnasium's ``DictInfoToList`` gives (with the values as
            the env reported them, not numpy scalars), without building the arrays first.
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
        info_format: str = "dict",
        **kwargs: Any,
    ) -> None:
        check_num_envs(num_envs)
        self.info_format = check_info_format(info_format)
        self._reset_infos: list[dict[str, Any] | None] = []
        super().__init__([env_maker(env_id, kwargs)] * num_envs, copy=copy, autoreset_mode=autoreset_mode)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, VectorInfos]:
        """Step every sub-env with its action (a sequence of ``num_envs`` strings).

        Same results as ``SyncVectorEnv.step``, autoreset included.
        """
        if isinstance(actions, str) or len(actions) != self.num_envs:
            check_actions(actions, self.num_envs)
        stepped = step_envs(self.envs, actions, self._autoreset_flags(), self.autoreset_mode)
        self._env_obs = stepped[0]
        return (self._batched_observations(), *self._finish_step(stepped))

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, VectorInfos]:
        """Reset the sub-envs (all, or those in ``options["reset_mask"]``), as ``SyncVectorEnv.reset``."""
        copy = self.copy
        self.copy = False  # the observations are copied below, only where that is not free
        self._reset_infos = [None] * self.num_envs
        try:
            super().reset(seed=seed, options=options)  # its infos come through `_add_info`, below
        finally:
            self.copy = copy
        infos, self._reset_infos = self._reset_infos, []
        return self._batched_observations(), self._batch_infos(infos)

    def _add_info(
        self, vector_infos: dict[str, Any], env_info: dict[str, Any], env_num: int
    ) -> dict[str, Any]:
        """In ``reset``: keep each env's info, to batch them all at once."""
        if self._reset_infos:
            self._reset_infos[env_num] = env_info
            return vector_infos
        return super()._add_info(vector_infos, env_info, env_num)

    def _batched_observations(self) -> Any:
        self._observations = tuple(self._env_obs)
        if self.copy and not self._immutable_observations:
            return deepcopy(self._observations)
        return self._observations

    @functools.cached_property
    def _immutable_observations(self) -> bool:
        """Text observations are immutable ``str``: a copy could not be told from the original."""
        return isinstance(self.single_observation_space, TextSpace)
