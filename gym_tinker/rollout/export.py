"""Trajectories as training rows: one flat token sequence with a loss mask, chat messages, a `datasets.Dataset`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gym_tinker.rollout.dialogue import messages_for_reply
from gym_tinker.trajectory import Trajectory

__all__ = ["FlatTrajectory", "flatten", "to_dataset", "to_messages", "to_records", "to_trl_batch"]


@dataclass(frozen=True)
class FlatTrajectory:
    """A token-exact trajectory as one sequence: the first prompt, then every turn's ids.

    This is the shape TRL's ``rollout_func`` returns per completion (``prompt_ids``,
    ``completion_ids``, ``logprobs``, ``env_mask``).
    """

    prompt_ids: tuple[int, ...]
    """The first turn's prompt (system, tools, first observation, assistant prompt)."""
    completion_ids: tuple[int, ...]
    """Every turn's sampled ids and the env's ids after them, in order."""
    env_mask: tuple[int, ...]
    """1 for sampled ids (trained on), 0 for env ids; aligned with ``completion_ids``."""
    logprobs: tuple[float, ...] | None
    """Sampler log-probability of each id (0.0 for env ids); ``None`` if not recorded."""
    reward: float
    """The trajectory's total reward."""

    @property
    def input_ids(self) -> tuple[int, ...]:
        """The whole sequence: ``prompt_ids + completion_ids``."""
        return self.prompt_ids + self.completion_ids

    @property
    def loss_mask(self) -> tuple[int, ...]:
        """Aligned with :attr:`input_ids`: 0 over the prompt, then :attr:`env_mask`."""
        return (0,) * len(self.prompt_ids) + self.env_mask


def flatten(trajectory: Trajectory) -> FlatTrajectory:
    """One flat sequence from a token-exact trajectory, checking that its turns chain.

    Raises:
        ValueError: The trajectory has no turns, lacks token ids (a text-only rollout), or a
            turn's prompt is not the previous prompt plus the previous turn's ids.

    Example:
        >>> from gym_tinker.trajectory import Turn
        >>> turns = (Turn("q", "a", 0.0, prompt_ids=(1, 2), completion_ids=(3, 9), env_mask=(1, 0)),
        ...          Turn("r", "b", 1.0, prompt_ids=(1, 2, 3, 9), completion_ids=(4,), env_mask=(1,)))
        >>> flat = flatten(Trajectory(turns=turns, env_id="demo"))
        >>> flat.input_ids, flat.loss_mask, flat.reward
        ((1, 2, 3, 9, 4), (0, 0, 1, 0, 1), 1.0)
    """
    if not trajectory.turns:
        raise ValueError(f"Cannot flatten a trajectory without turns (env {trajectory.env_id!r})")
    first = trajectory.turns[0]
    if first.prompt_ids is None:
        raise ValueError("Cannot flatten a text-only trajectory: its turns have no prompt_ids")
    sequence = list(first.prompt_ids)
    completion: list[int] = []
    mask: list[int] = []
    logprobs: list[float] | None = []
    for number, turn in enumerate(trajectory.turns):
        if turn.prompt_ids is None or turn.completion_ids is None:
            raise ValueError(f"Cannot flatten: turn {number} has no token ids")
        if list(turn.prompt_ids) != sequence:
            raise ValueError(
                f"Turn {number}'s prompt_ids are not the previous sequence plus the previous turn's ids "
                f"({len(turn.prompt_ids)} vs {len(sequence)} ids): the trajectory is not token-exact"
            )
        sequence.extend(turn.completion_ids)
        completion.extend(turn.completion_ids)
        mask.extend(turn.env_mask if turn.env_mask is not None else (1,) * len(turn.completion_ids))
        if logprobs is not None and turn.completion_logprobs is not None:
            logprobs.extend(turn.completion_logprobs)
        else:
            logprobs = None
    return FlatTrajectory(
        prompt_ids=tuple(first.prompt_ids),
        completion_ids=tuple(completion),
        env_mask=tuple(mask),
        logprobs=None if logprobs is None else tuple(logprobs),
        reward=float(trajectory.total_reward or 0.0),
    )


def to_trl_batch(trajectories: Iterable[Trajectory]) -> dict[str, list[Any]]:
    """Token-exact trajectories in the form TRL's GRPO ``rollout_func`` returns.

    Keys ``prompt_ids``, ``completion_ids``, ``logprobs`` and ``env_mask``, one entry per
    trajectory, plus ``rewards`` (each trajectory's total). ``logprobs`` entries are ``None``
    where the sampler gave none.

    Raises:
        ValueError: A trajectory is not token-exact (see :func:`flatten`).

    Example:
        >>> from gym_tinker.trajectory import Turn
        >>> turn = Turn("q", "a", 1.0, prompt_ids=(1, 2), completion_ids=(3, 9), env_mask=(1, 0),
        ...             completion_logprobs=(-0.5, 0.0))
        >>> batch = to_trl_batch([Trajectory(turns=(turn,), env_id="demo")])
        >>> batch["completion_ids"], batch["env_mask"], batch["rewards"]
        ([[3, 9]], [[1, 0]], [1.0])
    """
    flats = [flatten(trajectory) for trajectory in trajectories]
    return {
        "prompt_ids": [list(f.prompt_ids) for f in flats],
        "completion_ids": [list(f.completion_ids) for f in flats],
        "logprobs": [None if f.logprobs is None else list(f.logprobs) for f in flats],
        "env_mask": [list(f.env_mask) for f in flats],
        "rewards": [f.reward for f in flats],
    }


def to_messages(trajectory: Trajectory) -> list[dict[str, str]]:
    """The conversation as chat messages (``role``/``content``), for SFT on kept trajectories.

    The system prompt comes from ``metadata["system_prompt"]`` (the rollout engine stores it);
    observations that answered a tool call become ``tool`` messages.

    Example:
        >>> from gym_tinker.trajectory import Turn
        >>> t = Trajectory(turns=(Turn("2+2?", "4", 1.0),), env_id="demo", metadata={"system_prompt": "Add."})
        >>> [m["role"] for m in to_messages(t)]
        ['system', 'user', 'assistant']
    """
    messages: list[dict[str, str]] = []
    system_prompt = trajectory.metadata.get("system_prompt")
    if system_prompt:
        messages.append({"role": "system", "content": str(system_prompt)})
    previous_info: dict[str, Any] = {}
    for turn in trajectory.turns:
        for message in messages_for_reply(turn.observation, previous_info):
            messages.append({"role": message["role"], "content": message["content"]})
        messages.append({"role": "assistant", "content": turn.action})
        previous_info = dict(turn.info)
    return messages


def to_records(trajectories: Iterable[Trajectory]) -> list[dict[str, Any]]:
    """One flat, column-friendly dict per trajectory (messages, reward, ids and mask when token-exact).

    ``tools`` and ``metadata`` are JSON strings so that every row has the same columns.

    Example:
        >>> from gym_tinker.trajectory import Turn
        >>> row = to_records([Trajectory(turns=(Turn("hi", "hello", 1.0),), env_id="demo")])[0]
        >>> row["total_reward"], row["num_turns"], row["completion_ids"]
        (1.0, 1, None)
    """
    rows = []
    for trajectory in trajectories:
        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"Expected Trajectory objects, got {type(trajectory).__name__}")
        flat: FlatTrajectory | None
        try:
            flat = flatten(trajectory)
        except ValueError:
            flat = None
        rows.append(
            {
                "env_id": trajectory.env_id,
                "seed": trajectory.seed,
                "agent": trajectory.agent,
                "stop_reason": trajectory.stop_reason,
                "total_reward": trajectory.total_reward,
                "num_turns": len(trajectory.turns),
                "rewards": [turn.reward for turn in trajectory.turns],
                "messages": to_messages(trajectory),
                "tools": json.dumps(trajectory.metadata.get("tools") or []),
                "prompt_ids": None if flat is None else list(flat.prompt_ids),
                "completion_ids": None if flat is None else list(flat.completion_ids),
                "env_mask": None if flat is None else list(flat.env_mask),
                "logprobs": None if flat is None or flat.logprobs is None else list(flat.logprobs),
                "metadata": json.dumps(dict(trajectory.metadata), default=repr),
            }
        )
    return rows


def to_dataset(trajectories: Iterable[Trajectory]) -> Any:
    """The trajectories as a ``datasets.Dataset`` with the columns of :func:`to_records`.

    Needs the ``datasets`` package (in the ``train`` extra); imported only here.
    """
    try:
        import datasets
    except ImportError as error:
        raise ImportError(
            "to_dataset needs the `datasets` package: pip install 'gym-tinker[train]' (or `datasets`)"
        ) from error
    return datasets.Dataset.from_list(to_records(trajectories))
