"""A text vector env whose sub-envs live in worker processes, several per process."""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import pickle
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from gym_tinker.vector.sync import (
    Stepped,
    TextVectorBase,
    VectorInfos,
    check_actions,
    check_info_format,
    check_num_envs,
    env_maker,
    step_envs,
)

__all__ = ["ProcessTextVectorEnv"]


class ProcessTextVectorEnv(TextVectorBase):
    """``num_envs`` copies of a registered text env, split over ``workers`` processes stepped in parallel.

    Each worker holds a contiguous share of the sub-envs and steps all of them per vector step:
    one pipe round trip per worker and step, not one per env as in Gymnasium's
    ``AsyncVectorEnv`` (which gives every env its own process). Results equal
    :class:`TextVectorEnv`'s: same spaces, autoreset modes, ``reset_mask``, observations,
    rewards, flags and info dicts (in either ``info_format``). ``step_async``/``step_wait``
    split a step as Gymnasium's async vector env does. Use it for envs whose steps take real time (sandboxed code, tools); for
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
        info_format: str = "dict",
        context: str | None = None,
        **kwargs: Any,
    ) -> None:
        check_num_envs(num_envs)
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be a positive int, got {workers!r}")
        self.info_format = check_info_format(info_format)
        self.num_envs = num_envs
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        make_env = env_maker(env_id, kwargs)
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
                pipe.send_bytes(_dumps((command, payload)))
            except (BrokenPipeError, ConnectionError) as e:
                raise self._died(k) from e

    def _gather(self) -> list[Any]:
        """Every worker's reply, in worker order. All replies are read, so the workers stay in step;
        then the first worker's exception, if any, is raised here."""
        replies: list[Any] = []
        errors: list[BaseException] = []
        for k, pipe in enumerate(self._pipes):
            try:
                ok, value = _loads(pipe.recv_bytes())
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
        if len(self._pipes) == 1:
            return [values]
        return [values[a:b] for a, b in itertools.pairwise(self._starts)]

    # --- the VectorEnv API ----------------------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[Any, ...], VectorInfos]:
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
        return tuple(self._observations), self._batch_infos(infos)

    def step_async(self, actions: Any) -> None:
        """Send each worker its share of ``actions``; :meth:`step_wait` collects the results."""
        check_actions(actions, self.num_envs)
        if self._waiting:
            raise RuntimeError("step_async was called twice without step_wait in between")
        autoreset = self._autoreset_flags()
        actions = self._shares(list(actions))
        flags = [None] * len(actions) if autoreset is None else self._shares(autoreset)
        self._send("step", list(zip(actions, flags, strict=True)))
        self._waiting = True

    def step_wait(self) -> tuple[tuple[Any, ...], np.ndarray, np.ndarray, np.ndarray, VectorInfos]:
        """The results of the step sent by :meth:`step_async`."""
        if not self._waiting:
            raise RuntimeError("step_wait was called without step_async")
        self._waiting = False
        parts: list[Stepped] = self._gather()
        if len(parts) == 1:
            stepped = parts[0]
        else:
            observations, rewards, terminations, truncations, infos, _ = (
                list(itertools.chain.from_iterable(field)) for field in zip(*parts, strict=True)
            )
            finals = [
                (start + i, observation, info)
                for start, part in zip(self._starts, parts, strict=False)
                for i, observation, info in part[5]
            ]
            stepped = (observations, rewards, terminations, truncations, infos, finals)
        self._observations = stepped[0]
        return (tuple(stepped[0]), *self._finish_step(stepped))

    def step(self, actions: Any) -> tuple[tuple[Any, ...], np.ndarray, np.ndarray, np.ndarray, VectorInfos]:
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
                pipe.send_bytes(_dumps(("close", None)))
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
        pipe.send_bytes(_dumps((True, None)))
        while True:
            command, payload = _loads(pipe.recv_bytes())
            try:
                if command == "step":
                    actions, autoreset = payload
                    reply: Any = step_envs(envs, actions, autoreset, mode)
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
                message = _dumps((True, reply))  # an unpicklable reply is this command's error
            except Exception as e:
                message = _error_message(e)
            pipe.send_bytes(message)
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    except Exception as e:  # making the envs failed
        with contextlib.suppress(Exception):
            pipe.send_bytes(_error_message(e))
    finally:
        for env in envs:
            with contextlib.suppress(Exception):
                env.close()
        pipe.close()


def _dumps(message: Any) -> bytes:
    """A message for the pipe: plain pickle, 4x cheaper than ``Connection.send``'s ``ForkingPickler``
    for a step's lists (nothing sent needs its reducers)."""
    return pickle.dumps(message, pickle.HIGHEST_PROTOCOL)


_loads = pickle.loads


def _error_message(error: Exception) -> bytes:
    """The reply for a command that raised ``error`` (as a ``RuntimeError`` naming it, if it cannot be pickled)."""
    try:
        return _dumps((False, error))
    except Exception:
        return _dumps((False, RuntimeError(f"{type(error).__name__}: {error}")))


def _call(env: gym.Env, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    attribute = getattr(env, name)
    return attribute(*args, **kwargs) if callable(attribute) else attribute
