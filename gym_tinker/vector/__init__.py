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
* a step's infos are batched in one pass (:func:`batch_infos`: each array made once and filled
  in place, or one transpose), instead of a call of ``VectorEnv._add_info`` per env, which was
  a third of a vector step; or, with ``info_format="list"``, returned as each env's own dict
  (what Gymnasium's ``DictInfoToList`` wrapper gives), which costs nothing to build;
* text observations are returned as they are: ``str`` is immutable, so a copy would change
  nothing (``copy=True`` still deep-copies observations of other spaces).

``vectorization_mode="sync"`` and ``"async"`` still give Gymnasium's own ``SyncVectorEnv`` and
``AsyncVectorEnv`` (use those for ``wrappers=`` or ``vector_kwargs=``, which Gymnasium refuses
for a vector entry point, and ``"async"`` for slow envs such as sandboxed code).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from gym_tinker.vector.infos import batch_infos
from gym_tinker.vector.process import ProcessTextVectorEnv
from gym_tinker.vector.sync import TextVectorEnv

__all__ = ["ProcessTextVectorEnv", "TextVectorEnv", "batch_infos", "make_text_vec"]


def make_text_vec(
    env_id: str,
    num_envs: int = 1,
    *,
    workers: int = 0,
    copy: bool = True,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    info_format: str = "dict",
    context: str | None = None,
    **kwargs: Any,
) -> gym.vector.VectorEnv:
    """What ``gym.make_vec(env_id, num_envs=N, ...)`` builds for a gym_tinker env.

    Args:
        env_id: A registered env id.
        num_envs: How many sub-envs.
        workers: ``0`` (default): a :class:`TextVectorEnv`, the sub-envs stepped in this process.
            ``k > 0``: a :class:`ProcessTextVectorEnv`, the sub-envs split over ``k`` worker
            processes that step their share in parallel. Leave a core to the caller, which
            sends the actions and batches the results: ``k`` at most the CPUs minus one.
        copy: As ``SyncVectorEnv``'s (free for text observations).
        autoreset_mode: ``"NextStep"`` (Gymnasium's default), ``"SameStep"`` or ``"Disabled"``.
        info_format: ``"dict"`` (Gymnasium's dict of arrays with ``_key`` masks), or ``"list"``:
            each env's own info dict, as Gymnasium's ``DictInfoToList`` wrapper gives them
            (values as the env reported them, not numpy scalars), without building arrays.
            Text envs' infos (prompts, tool schemas, feedback) are mostly strings and lists, and
            a rollout reads them env by env: ``"list"`` is the cheaper and simpler form for that.
        context: The ``multiprocessing`` start method of the workers (default: the platform's).
        **kwargs: Passed to every sub-env's constructor (``max_turns=4``, ``difficulty="easy"``).

    Example:
        >>> import gymnasium as gym
        >>> import gym_tinker
        >>> envs = gym.make_vec("tinker/GuessNumber-v0", num_envs=4, workers=2)
        >>> type(envs).__name__, envs.num_envs
        ('ProcessTextVectorEnv', 4)
        >>> envs.close()
        >>> envs = gym.make_vec("tinker/GuessNumber-v0", num_envs=2, info_format="list")
        >>> observations, infos = envs.reset(seed=0)
        >>> [info["task_id"] for info in infos]
        ['GuessNumber-1-100-15348dca72b0', 'GuessNumber-1-100-e832fc4d665f']
        >>> envs.close()
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
        raise ValueError(f"workers must be an int >= 0, got {workers!r}")
    if workers:
        return ProcessTextVectorEnv(
            env_id,
            num_envs,
            workers=workers,
            autoreset_mode=autoreset_mode,
            info_format=info_format,
            context=context,
            **kwargs,
        )
    return TextVectorEnv(
        env_id, num_envs, copy=copy, autoreset_mode=autoreset_mode, info_format=info_format, **kwargs
    )


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
