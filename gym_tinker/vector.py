"""The vector env ``gym.make_vec`` gives for gym_tinker envs: Gymnasium's sync vector API, without its per-step overheads.

Every env registered by gym_tinker has a ``vector_entry_point``, so
``gym.make_vec("tinker/GuessNumber-v0", num_envs=8)`` (no ``vectorization_mode``) returns a
:class:`TextVectorEnv`, as ``gym.make_vec("CartPole-v1")`` returns Gymnasium's own
``CartPoleVectorEnv``. It is a :class:`gymnasium.vector.SyncVectorEnv` in every respect users
see (the same spaces, autoreset modes, ``reset_mask``, ``call``/``get_attr``/``set_attr``, and the
same observations, rewards, flags and info dicts, step for step: a test compares them), and it
is faster because:

* the sub-envs are the registered classes themselves, not ``gym.make``'s wrapper stack (its
  env checker and order enforcement cost a third of a text env's step);
* a step's infos are batched once, key by key (:func:`batch_infos`), instead of env by env
  through ``VectorEnv._add_info``, which was a third of a vector step;
* text observations are returned as they are: ``str`` is immutable, so a copy would change
  nothing (``copy=True`` still deep-copies observations of other spaces).

``vectorization_mode="sync"`` and ``"async"`` still give Gymnasium's own ``SyncVectorEnv`` and
``AsyncVectorEnv`` (use those for ``wrappers=`` or ``vector_kwargs=``, which Gymnasium refuses
for a vector entry point, and ``"async"`` for slow envs such as sandboxed code).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import multiprocessing as mp
from collections.abc import Callable, Iterable, Iterator, Sequence
from copy import deepcopy
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import batch_space

from gym_tinker.spaces import TextSpace

__all__ = ["ProcessTextVectorEnv", "TextVectorEnv", "batch_infos", "make_text_vec"]


def make_text_vec(
    env_id: str,
    num_envs: int = 1,
    *,
    workers: int = 0,
    copy: bool = True,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    context: str | None = None,
    **kwargs: Any,
) -> gym.vector.VectorEnv:
    """What ``gym.make_vec(env_id, num_envs=N, ...)`` builds for a gym_tinker env.

    Args:
        env_id: A registered env id.
        num_envs: How many sub-envs.
        workers: ``0`` (default): a :class:`TextVectorEnv`, the sub-envs stepped in this process.
            ``k > 0``: a :class:`ProcessTextVectorEnv`, the sub-envs split over ``k`` worker
            processes that step their share in parallel.
        copy: As ``SyncVectorEnv``'s (free for text observations).
        autoreset_mode: ``"NextStep"`` (Gymnasium's default), ``"SameStep"`` or ``"Disabled"``.
        context: The ``multiprocessing`` start method of the workers (default: the platform's).
        **kwargs: Passed to every sub-env's constructor (``max_turns=4``, ``difficulty="easy"``).

    Example:
        >>> import gymnasium as gym
        >>> import gym_tinker
        >>> envs = gym.make_vec("tinker/GuessNumber-v0", num_envs=4, workers=2)
        >>> type(envs).__name__, envs.num_envs
        ('ProcessTextVectorEnv', 4)
        >>> envs.close()
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
        raise ValueError(f"workers must be an int >= 0, got {workers!r}")
    if workers:
        return ProcessTextVectorEnv(
            env_id, num_envs, workers=workers, autoreset_mode=autoreset_mode, context=context, **kwargs
        )
    return TextVectorEnv(env_id, num_envs, copy=copy, autoreset_mode=autoreset_mode, **kwargs)


def _check_num_envs(num_envs: Any) -> None:
    if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")


def _env_maker(env_id: str, kwargs: dict[str, Any]) -> Callable[[], gym.Env]:
    """Makes one sub-env: the registered class itself, without ``gym.make``'s env checker and
    order enforcement (a third of a text env's step)."""
    kwargs = {
        k: v for k, v in kwargs.items() if k != "max_episode_steps"
    }  # make_vec passes the spec's (None)
    return functools.partial(_make_unwrapped, env_id, kwargs)


def _make_unwrapped(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    import gym_tinker  # noqa: F401  (registers the envs in a spawned worker)

    return gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped


def _check_actions(actions: Any, num_envs: int) -> None:
    if isinstance(actions, str) or len(actions) != num_envs:
        raise ValueError(f"expected a sequence of {num_envs} actions (one str per env), got {actions!r:.200}")


@dataclass
class _Stepped:
    """One step of some sub-envs, as plain lists (what a worker sends back)."""

    observations: list[Any]
    rewards: list[float]
    terminations: list[bool]
    truncations: list[bool]
    infos: list[dict[str, Any]]
    finals: list[tuple[int, Any, dict[str, Any]]]
    """Same-step autoreset: (index, final observation, final info) of each env that ended."""


def _step_envs(
    envs: Sequence[gym.Env], actions: Sequence[Any], autoreset: list[bool], mode: AutoresetMode
) -> _Stepped:
    """Step ``envs`` as ``SyncVectorEnv.step`` does, env by env, with its autoreset rules."""
    n = len(envs)
    out = _Stepped([None] * n, [0.0] * n, [False] * n, [False] * n, [_NO_INFO] * n, [])
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


def _ended(
    infos: list[dict[str, Any]], finals: list[tuple[int, Any, dict[str, Any]]]
) -> Iterator[tuple[int, dict[str, Any]]]:
    return ((i, infos[i]) for i, _, _ in finals)


class _TextVectorBase(gym.vector.VectorEnv):
    """What both text vector envs share: checks, autoreset state, and batching a step's lists."""

    num_envs: int
    autoreset_mode: AutoresetMode
    _autoreset_envs: np.ndarray

    def _autoreset_flags(self) -> list[bool]:
        autoreset = self._autoreset_envs.tolist()
        if self.autoreset_mode == AutoresetMode.DISABLED:
            assert not any(autoreset), f"{self._autoreset_envs=}"  # the user resets finished envs
        return autoreset

    def _finish_step(self, stepped: _Stepped) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Rewards, terminations, truncations and the info dict of a step; updates the autoreset flags."""
        terminated = np.array(stepped.terminations, dtype=np.bool_)
        truncated = np.array(stepped.truncations, dtype=np.bool_)
        # New arrays every step, so no copies are needed: what `reset` later writes in place
        # (`_terminations`, `_truncations`) is never what a step returned.
        self._autoreset_envs = terminated | truncated
        per_env = stepped.infos
        if stepped.finals:  # same-step autoreset: each ended env's final observation and info first
            per_env = list(per_env)
            for i, observation, info in stepped.finals:
                per_env[i] = {"final_obs": observation, "final_info": info, **per_env[i]}
            if any(len(info) != len(stepped.infos[i]) + 2 for i, info in _ended(per_env, stepped.finals)):
                # an env's own info has a final_obs or final_info key: Gymnasium's env-by-env merge
                merged: dict[str, Any] = {}
                for i, observation, info in stepped.finals:
                    merged = self._add_info(merged, {"final_obs": observation, "final_info": info}, i)
                for i, info in enumerate(stepped.infos):
                    merged = self._add_info(merged, info, i)
                return np.array(stepped.rewards, dtype=np.float64), terminated, truncated, merged
        return (
            np.array(stepped.rewards, dtype=np.float64),
            terminated,
            truncated,
            batch_infos(per_env, self.num_envs),
        )


class TextVectorEnv(_TextVectorBase, SyncVectorEnv):
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
        _check_num_envs(num_envs)
        super().__init__([_env_maker(env_id, kwargs)] * num_envs, copy=copy, autoreset_mode=autoreset_mode)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action (a sequence of ``num_envs`` strings).

        Same results as ``SyncVectorEnv.step``, autoreset included.
        """
        _check_actions(actions, self.num_envs)
        stepped = _step_envs(self.envs, actions, self._autoreset_flags(), self.autoreset_mode)
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


class ProcessTextVectorEnv(_TextVectorBase):
    """``num_envs`` copies of a registered text env, split over ``workers`` processes stepped in parallel.

    Each worker holds a contiguous share of the sub-envs and steps all of them per vector step:
    one pipe round trip per worker and step, not one per env as in Gymnasium's
    ``AsyncVectorEnv`` (which gives every env its own process). Results equal
    :class:`TextVectorEnv`'s: same spaces, autoreset modes, ``reset_mask``, observations,
    rewards, flags and info dicts. ``step_async``/``step_wait`` split a step as Gymnasium's async
    vector env does. Use it for envs whose steps take real time (sandboxed code, tools); for
    microsecond-fast envs the in-process :class:`TextVectorEnv` is faster.

    Example:
        >>> import gymnasium as gym
        >>> import gym_tinker
        >>> envs = gym.make_vec("tinker/GuessNumber-v0", num_envs=4, workers=2, max_turns=3)
        >>> observations, infos = envs.reset(seed=0)
        >>> observations, rewards, terminated, truncated, infos = envs.step(["5"] * 4)
        >>> len(observations), infos["turn"].tolist(), envs.get_attr("max_turns")
        (4, [1, 1, 1, 1], (3, 3, 3, 3))
        >>> envs.close()
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int = 1,
        *,
        workers: int = 2,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        context: str | None = None,
        **kwargs: Any,
    ) -> None:
        _check_num_envs(num_envs)
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be a positive int, got {workers!r}")
        self.num_envs = num_envs
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        make_env = _env_maker(env_id, kwargs)
        probe = make_env()  # the spaces and metadata, read here rather than asked of a worker
        try:
            self.metadata = {**probe.metadata, "autoreset_mode": self.autoreset_mode}
            self.render_mode = probe.render_mode
            self.single_observation_space = probe.observation_space
            self.single_action_space = probe.action_space
        finally:
            probe.close()
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._autoreset_envs = np.zeros(num_envs, dtype=np.bool_)
        self._observations: list[Any] = [None] * num_envs
        self._waiting = False
        # Contiguous shares, sizes differing by at most one: envs [starts[k], starts[k + 1]).
        workers = min(workers, num_envs)
        self._starts = [round(k * num_envs / workers) for k in range(workers + 1)]
        ctx: Any = mp.get_context(context)
        self._pipes: list[Connection] = []
        self._processes: list[Any] = []
        try:
            for k in range(workers):
                parent, child = ctx.Pipe()
                size = self._starts[k + 1] - self._starts[k]
                process = ctx.Process(
                    target=_worker,
                    name=f"ProcessTextVectorEnv-{k}",
                    args=(child, make_env, size, self.autoreset_mode),
                    daemon=True,
                )
                process.start()
                child.close()
                self._pipes.append(parent)
                self._processes.append(process)
            self._gather()  # each worker says it has made its envs
        except BaseException:
            self.close()
            raise

    # --- the worker protocol --------------------------------------------------------------------------

    def _send(self, command: str, per_worker: Sequence[Any]) -> None:
        for k, (pipe, payload) in enumerate(zip(self._pipes, per_worker, strict=True)):
            try:
                pipe.send((command, payload))
            except (BrokenPipeError, ConnectionError) as e:
                raise self._died(k) from e

    def _gather(self) -> list[Any]:
        """Every worker's reply, in worker order. All replies are read, so the workers stay in step;
        then the first worker's exception, if any, is raised here."""
        replies: list[Any] = []
        errors: list[BaseException] = []
        for k, pipe in enumerate(self._pipes):
            try:
                ok, value = pipe.recv()
            except (EOFError, ConnectionError) as e:
                raise self._died(k) from e
            (replies if ok else errors).append(value)
        if errors:
            raise errors[0]
        return replies

    def _died(self, k: int) -> RuntimeError:
        process = self._processes[k]
        process.join(timeout=1)
        return RuntimeError(f"worker {k} of {type(self).__name__} died (exit code {process.exitcode})")

    def _shares(self, values: Sequence[Any]) -> list[Sequence[Any]]:
        return [values[a:b] for a, b in itertools.pairwise(self._starts)]

    # --- the VectorEnv API ----------------------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Reset the sub-envs (all, or those in ``options["reset_mask"]``), as ``SyncVectorEnv.reset``."""
        n = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(
                    f"If seeds are passed as a list the length must match num_envs={n} but got length={len(seeds)}."
                )
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(n, dtype=np.bool_)
        elif (
            not isinstance(mask, np.ndarray) or mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any()
        ):
            raise ValueError(
                f"`options['reset_mask']` must be a numpy bool array of shape ({n},) with a True value, got {mask!r}"
            )
        self._autoreset_envs[mask] = False
        flags = mask.tolist()
        self._send(
            "reset", [(s, f, options) for s, f in zip(self._shares(seeds), self._shares(flags), strict=True)]
        )
        infos: list[dict[str, Any] | None] = []
        for k, results in enumerate(self._gather()):
            for offset, result in enumerate(results):
                i = self._starts[k] + offset
                if result is None:
                    infos.append(None)
                else:
                    self._observations[i], info = result
                    infos.append(info)
        return tuple(self._observations), batch_infos(infos, n)

    def step_async(self, actions: Any) -> None:
        """Send each worker its share of ``actions``; :meth:`step_wait` collects the results."""
        _check_actions(actions, self.num_envs)
        if self._waiting:
            raise RuntimeError("step_async was called twice without step_wait in between")
        autoreset = self._autoreset_flags()
        self._send(
            "step",
            [(a, r) for a, r in zip(self._shares(list(actions)), self._shares(autoreset), strict=True)],
        )
        self._waiting = True

    def step_wait(self) -> tuple[tuple[Any, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The results of the step sent by :meth:`step_async`."""
        if not self._waiting:
            raise RuntimeError("step_wait was called without step_async")
        self._waiting = False
        parts: list[_Stepped] = self._gather()
        stepped = _Stepped([], [], [], [], [], [])
        for k, part in enumerate(parts):
            stepped.observations += part.observations
            stepped.rewards += part.rewards
            stepped.terminations += part.terminations
            stepped.truncations += part.truncations
            stepped.infos += part.infos
            stepped.finals += [(self._starts[k] + i, obs, info) for i, obs, info in part.finals]
        self._observations = stepped.observations
        return (tuple(stepped.observations), *self._finish_step(stepped))

    def step(
        self, actions: Any
    ) -> tuple[tuple[Any, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action (a sequence of ``num_envs`` strings), in parallel."""
        self.step_async(actions)
        return self.step_wait()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` (or read attribute ``name``) of every sub-env; the results in env order."""
        self._send("call", [(name, args, kwargs)] * len(self._pipes))
        return tuple(itertools.chain.from_iterable(self._gather()))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every sub-env."""
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | object) -> None:
        """Set attribute ``name`` of every sub-env: one value each (a list or tuple), or the same value."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} values for {name!r}, got {len(values)}")
        self._send("set_attr", [(name, share) for share in self._shares(list(values))])
        self._gather()

    def render(self) -> tuple[Any, ...]:
        """Every sub-env's ``render()``."""
        return self.call("render")

    def close_extras(self, **kwargs: Any) -> None:
        """Close the sub-envs and stop the workers."""
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.send(("close", None))
        for process in self._processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join()
        for pipe in self._pipes:
            pipe.close()
        self._pipes, self._processes = [], []

    def __del__(self) -> None:
        if getattr(self, "_processes", None):
            with contextlib.suppress(Exception):
                self.close_extras()


def _worker(pipe: Connection, make_env: Callable[[], gym.Env], size: int, mode: AutoresetMode) -> None:
    """A worker process: makes ``size`` sub-envs, then answers commands until ``close``."""
    envs: list[gym.Env] = []
    try:
        envs = [make_env() for _ in range(size)]
        pipe.send((True, None))
        while True:
            command, payload = pipe.recv()
            try:
                if command == "step":
                    actions, autoreset = payload
                    reply: Any = _step_envs(envs, actions, autoreset, mode)
                elif command == "reset":
                    seeds, flags, options = payload
                    reply = [
                        env.reset(seed=seed, options=options) if flag else None
                        for env, seed, flag in zip(envs, seeds, flags, strict=True)
                    ]
                elif command == "call":
                    name, args, kwargs = payload
                    reply = [_call(env, name, args, kwargs) for env in envs]
                elif command == "set_attr":
                    name, values = payload
                    for env, value in zip(envs, values, strict=True):
                        setattr(env, name, value)
                    reply = None
                elif command == "close":
                    break
                else:
                    raise ValueError(f"unknown command {command!r}")
            except Exception as e:
                pipe.send((False, e))
            else:
                pipe.send((True, reply))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    except Exception as e:  # making the envs failed
        with contextlib.suppress(Exception):
            pipe.send((False, e))
    finally:
        for env in envs:
            with contextlib.suppress(Exception):
                env.close()
        pipe.close()


def _call(env: gym.Env, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    attribute = getattr(env, name)
    return attribute(*args, **kwargs) if callable(attribute) else attribute


def batch_infos(per_env: Sequence[dict[str, Any] | None], num_envs: int) -> dict[str, Any]:
    """The vector info dict of ``per_env``, one info dict per env (``None``: an env that did not report).

    The result equals what ``VectorEnv._add_info`` builds env by env: for every key, an array of
    the values (dtype from the first env that has the key: ``bool``, ``int``, ``float`` and numpy
    numbers as such, numpy arrays stacked, anything else in an object array; nested dicts
    recursively) and a boolean mask ``_key`` of the envs that have it. It is built once per key
    rather than once per env and key.

    Example:
        >>> infos = batch_infos([{"turn": 1, "feedback": "higher"}, {"turn": 2}], 2)
        >>> infos["turn"], infos["_turn"], infos["feedback"], infos["_feedback"]
        (array([1, 2]), array([ True,  True]), array(['higher', None], dtype=object), array([ True, False]))
    """
    infos = [info or _NO_INFO for info in per_env]
    batched: dict[str, Any] = {}
    keys: Iterable[str] = infos[0].keys()
    uniform = all(info.keys() == keys for info in infos)  # the usual case: every env reports the same keys
    if not uniform:  # every key, in the order `_add_info` meets them: env 0's, then new ones env by env
        keys = dict.fromkeys(itertools.chain.from_iterable(infos))
    for key in keys:
        if uniform:
            values = [info[key] for info in infos]
            present: list[bool] | None = None
        else:
            values = [info.get(key, _MISSING) for info in infos]
            present = [value is not _MISSING for value in values]
            if all(present):
                present = None
            else:  # gaps are 0 (numbers) or None (objects), as in `_add_info`'s fresh arrays
                first = values[present.index(True)]
                gap = 0 if type(first) in _SCALARS and key != "final_obs" else None
                values = [gap if value is _MISSING else value for value in values]
        first = values[0] if present is None else values[present.index(True)]
        kind = type(first)
        if key == "final_obs":
            array: Any = _object_array(values)
        elif kind in _SCALARS:
            array = np.array(values, dtype=kind)
        elif isinstance(first, dict):
            reported = (
                values if present is None else [v for v, here in zip(values, present, strict=True) if here]
            )
            if not all(isinstance(value, dict) for value in reported):
                raise TypeError(f"info key {key!r} is a dict for some envs and not for others")
            array = batch_infos(values, num_envs)
        elif isinstance(first, (np.number, np.ndarray)):
            array = np.zeros((num_envs, *np.shape(first)), dtype=first.dtype)
            for i, value in enumerate(values):
                if present is None or present[i]:
                    array[i] = value
        else:  # str, None, lists, any object: an object array, one item per env
            array = _object_array(values)
        batched[key] = array
        batched[f"_{key}"] = (
            _all_true(num_envs).copy() if present is None else np.array(present, dtype=np.bool_)
        )
    return batched


_MISSING: Any = object()


def _object_array(values: list[Any]) -> np.ndarray:
    """An object array holding each value as one item."""
    if set(map(type, values)) <= _STR_OR_NONE:  # np.array cannot mistake these for rows
        return np.array(values, dtype=object)
    return np.fromiter(values, dtype=object, count=len(values))  # lists stay items


_STR_OR_NONE = {str, type(None)}
_NO_INFO: dict[str, Any] = {}
_SCALARS = (int, float, bool)


@functools.cache
def _all_true(num_envs: int) -> np.ndarray:
    """A template mask, copied for each key every env reports (a copy is 6x faster than ``np.ones``)."""
    return np.ones(num_envs, dtype=np.bool_)


def _entry_point(env_id: str) -> Callable[..., gym.vector.VectorEnv]:
    def make(num_envs: int = 1, **kwargs: Any) -> gym.vector.VectorEnv:
        return make_text_vec(env_id, num_envs, **kwargs)

    make.__doc__ = f"``gym.make_vec({env_id!r}, num_envs=N, ...)``: :func:`make_text_vec` of {env_id}."
    return make


# The registered vector entry points (`gym_tinker.vector:make_<name>_vec`, see
# `EnvEntry.vector_entry_point`): Gymnasium passes one `num_envs` and the kwargs only, not the id.
make_tool_use_vec = _entry_point("tinker/ToolUse-v0")
make_math_vec = _entry_point("tinker/Math-v0")
make_countdown_vec = _entry_point("tinker/Countdown-v0")
make_code_vec = _entry_point("tinker/Code-v0")
make_wordle_vec = _entry_point("tinker/Wordle-v0")
make_guess_number_vec = _entry_point("tinker/GuessNumber-v0")
