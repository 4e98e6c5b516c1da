"""How the rollout engine resets and steps its envs: a list of envs, or one Gymnasium vector env.

Both backends take and return per-env results, with an exception in place of a result for an
env that failed, so one broken env never stops the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

__all__ = ["EnvBackend", "EnvListBackend", "StepOutcome", "VectorEnvBackend", "make_backend"]

StepOutcome = tuple[str, float, bool, bool, dict[str, Any]]
ResetOutcome = tuple[str, dict[str, Any]]


def _env_id(env: Any) -> str:
    spec = getattr(env, "spec", None)
    return (
        spec.id
        if spec is not None and getattr(spec, "id", None)
        else type(getattr(env, "unwrapped", env)).__name__
    )


class EnvBackend:
    """The envs of one rollout: ``num_envs`` slots that can be reset and stepped by index."""

    num_envs: int
    env_id: str

    def reset(self, slots: Sequence[int], seeds: Sequence[int | None]) -> list[ResetOutcome | Exception]:
        raise NotImplementedError

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[StepOutcome | Exception]:
        raise NotImplementedError

    def release(self, slot: int) -> None:
        """The slot's episode is over (or abandoned) and the slot is idle."""


class EnvListBackend(EnvBackend):
    """A list of single envs (e.g. from ``gym.make``), stepped one after another."""

    def __init__(self, envs: Sequence[gym.Env[Any, Any]]):
        self.envs = list(envs)
        if not self.envs:
            raise ValueError("Expected at least one env, got an empty list")
        for i, env in enumerate(self.envs):
            if not callable(getattr(env, "step", None)) or not callable(getattr(env, "reset", None)):
                raise TypeError(f"Expected envs[{i}] to be a Gymnasium env, got {type(env).__name__}")
        self.num_envs = len(self.envs)
        self.env_id = _env_id(self.envs[0])

    def reset(self, slots: Sequence[int], seeds: Sequence[int | None]) -> list[ResetOutcome | Exception]:
        out: list[ResetOutcome | Exception] = []
        for slot, seed in zip(slots, seeds, strict=True):
            try:
                obs, info = self.envs[slot].reset(seed=seed)
                out.append((obs, dict(info)))
            except Exception as error:
                out.append(error)
        return out

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[StepOutcome | Exception]:
        out: list[StepOutcome | Exception] = []
        for slot, action in zip(slots, actions, strict=True):
            try:
                obs, reward, terminated, truncated, info = self.envs[slot].step(action)
                out.append((obs, float(reward), bool(terminated), bool(truncated), dict(info)))
            except Exception as error:
                out.append(error)
        return out


def _unbatch_info(infos: dict[str, Any] | list[dict[str, Any]], index: int) -> dict[str, Any]:
    """Env ``index``'s info from a vector env's infos: Gymnasium's batched dict (keys with a
    ``_key`` mask), or a list of per-env dicts (``info_format="list"``, ``DictInfoToList``)."""
    if isinstance(infos, list):
        return dict(infos[index])
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get("_" + key)
        if mask is not None and not mask[index]:
            continue
        if isinstance(value, dict):  # nested info dicts are batched recursively
            out[key] = _unbatch_info(value, index)
            continue
        item = value[index]
        out[key] = item.item() if isinstance(item, np.generic) else item
    return out


class VectorEnvBackend(EnvBackend):
    """A Gymnasium vector env (sync or async): every step is one batched ``step`` call.

    Sub-envs whose slot is idle get an empty action (text envs accept any string) and are reset
    before they are stepped again once their own episode ended, so the vector env's autoreset
    never replaces an episode the rollout is running. The whole batched call succeeds or fails
    together: an exception fails every episode in that call.

    .. warning::
        Gymnasium's ``AsyncVectorEnv`` closes the worker of a sub-env that raised; every later
        call on it fails, so the remaining episodes fail fast and are dropped (each failure is
        listed in the rollout's stats). Where envs may raise, pass a list of envs instead: there
        a failure costs only its own episode.
    """

    def __init__(self, vector_env: VectorEnv[Any, Any, Any]):
        self.vector_env = vector_env
        # Typed loosely: Gymnasium's annotation says `seed: int | None`, its vector envs take lists.
        self._vector: Any = vector_env
        self.num_envs = int(vector_env.num_envs)
        self.env_id = _env_id(vector_env)
        self.mode = AutoresetMode(vector_env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self._fresh = False

    def reset(self, slots: Sequence[int], seeds: Sequence[int | None]) -> list[ResetOutcome | Exception]:
        if not slots:
            return []
        mask = np.zeros(self.num_envs, dtype=bool)
        seed_list: list[int | None] = [None] * self.num_envs
        for slot, seed in zip(slots, seeds, strict=True):
            mask[slot], seed_list[slot] = True, seed
        try:
            if not self._fresh:
                # The first reset must cover every sub-env; idle ones get seed None.
                observations, infos = self._vector.reset(seed=seed_list)
                self._fresh = True
            else:
                observations, infos = self._vector.reset(seed=seed_list, options={"reset_mask": mask})
        except Exception as error:
            return [error] * len(slots)
        self._ended[mask] = False
        return [(str(observations[slot]), _unbatch_info(infos, slot)) for slot in slots]

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[StepOutcome | Exception]:
        if not slots:
            return []
        stale = [i for i in range(self.num_envs) if self._ended[i] and i not in slots]
        if stale:
            self.reset(stale, [None] * len(stale))
        batch = np.array([""] * self.num_envs, dtype=object)
        for slot, action in zip(slots, actions, strict=True):
            batch[slot] = action
        try:
            observations, rewards, terminations, truncations, infos = self.vector_env.step(batch)
        except Exception as error:
            self._fresh = False  # the vector env's state is unknown: reset everything next time
            return [error] * len(slots)
        self._ended = np.logical_or(terminations, truncations)
        out: list[StepOutcome | Exception] = []
        for slot in slots:
            obs, info = observations[slot], _unbatch_info(infos, slot)
            if self.mode == AutoresetMode.SAME_STEP and self._ended[slot]:
                # The returned observation already belongs to the next episode.
                obs, info = info.pop("final_obs"), dict(info.pop("final_info", {}))
                self._ended[slot] = False
            out.append(
                (str(obs), float(rewards[slot]), bool(terminations[slot]), bool(truncations[slot]), info)
            )
        return out


def make_backend(envs: Any) -> EnvBackend:
    """A backend for ``envs``: a Gymnasium vector env, a single env, or a sequence of envs."""
    if isinstance(envs, VectorEnv):
        return VectorEnvBackend(envs)
    if isinstance(envs, gym.Env):
        return EnvListBackend([envs])
    if isinstance(envs, Sequence) and not isinstance(envs, (str, bytes)):
        return EnvListBackend(envs)
    raise TypeError(f"Expected a Gymnasium env, a list of envs or a vector env, got {type(envs).__name__}")
