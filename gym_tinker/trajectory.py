"""`Turn` and `Trajectory`: the text-level record of an episode that training consumes.

A trajectory is what one agent (one seat of a game, or the single agent of an env) saw, did
and earned over one episode. Turns hold text; the rollout engine fills the optional token
fields (``prompt_ids``, ``completion_ids``, ``completion_logprobs``, ``env_mask``) so that
training sees the exact ids that were sampled. Both classes are frozen dataclasses, pickle,
and round-trip through JSON (:func:`save_jsonl` / :func:`load_jsonl`, one trajectory a line).

``info`` and ``metadata`` must be JSON-serialisable for JSONL; tuples in them come back as lists.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

__all__ = ["StopReason", "Trajectory", "TrajectoryFormatError", "Turn", "load_jsonl", "save_jsonl"]

StopReason: TypeAlias = Literal["terminated", "truncated", "token_budget", "error"]
"""Why an episode ended: the game/env ended it, a turn or cycle limit cut it, the rollout ran out
of tokens, or an error stopped it."""

_STOP_REASONS: frozenset[str] = frozenset(get_args(StopReason))


class TrajectoryFormatError(ValueError):
    """A trajectory dict or JSONL line does not have the expected shape."""


def _int_tuple(name: str, value: Sequence[int] | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TrajectoryFormatError(f"Expected `{name}` to be a sequence of ints or None, got {value!r:.80}")
    out = tuple(value)
    for item in out:
        if not isinstance(item, int) or isinstance(item, bool):
            raise TrajectoryFormatError(f"Expected `{name}` to hold ints, got {item!r} in it")
    return out


@dataclass(frozen=True)
class Turn:
    """One decision: what the agent saw, what it answered, and the reward that followed.

    Example:
        >>> turn = Turn("Your move.", "rock", 1.0, {"legal_moves": ["rock", "paper", "scissors"]})
        >>> turn.reward, Turn.from_dict(turn.to_dict()) == turn
        (1.0, True)
    """

    observation: str
    """The text the agent saw before acting."""
    action: str
    """The text the agent answered."""
    reward: float = 0.0
    """Reward the agent received for this action (up to its next decision or the end)."""
    info: Mapping[str, Any] = field(default_factory=dict)
    """The env's info for this decision (legal moves, errors, ...)."""
    prompt_ids: tuple[int, ...] | None = None
    """Token ids the sampler conditioned on, when the rollout recorded them."""
    completion_ids: tuple[int, ...] | None = None
    """Token ids that were sampled for ``action``."""
    completion_logprobs: tuple[float, ...] | None = None
    """Sampler log-probability of each id in ``completion_ids``."""
    env_mask: tuple[int, ...] | None = None
    """1 for tokens the model produced, 0 for env tokens, aligned with ``completion_ids``."""

    def __post_init__(self) -> None:
        if not isinstance(self.observation, str):
            raise TrajectoryFormatError(f"Expected `observation` to be a str, got {self.observation!r:.80}")
        if not isinstance(self.action, str):
            raise TrajectoryFormatError(f"Expected `action` to be a str, got {self.action!r:.80}")
        if isinstance(self.reward, bool) or not isinstance(self.reward, (int, float)):
            raise TrajectoryFormatError(f"Expected `reward` to be a number, got {self.reward!r}")
        object.__setattr__(self, "reward", float(self.reward))
        if not isinstance(self.info, Mapping):
            raise TrajectoryFormatError(f"Expected `info` to be a mapping, got {self.info!r:.80}")
        for name in ("prompt_ids", "completion_ids", "env_mask"):
            object.__setattr__(self, name, _int_tuple(name, getattr(self, name)))
        if self.completion_logprobs is not None:
            logprobs = self.completion_logprobs
            if isinstance(logprobs, (str, bytes)) or not isinstance(logprobs, Sequence):
                raise TrajectoryFormatError(
                    f"Expected `completion_logprobs` to be a sequence, got {logprobs!r:.80}"
                )
            object.__setattr__(self, "completion_logprobs", tuple(float(x) for x in logprobs))
        for name in ("completion_logprobs", "env_mask"):
            value = getattr(self, name)
            if value is not None and (self.completion_ids is None or len(value) != len(self.completion_ids)):
                expected = "no completion_ids" if self.completion_ids is None else len(self.completion_ids)
                raise TrajectoryFormatError(
                    f"`{name}` has {len(value)} entries but must align with `completion_ids` ({expected})"
                )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``None`` token fields are left out."""
        out: dict[str, Any] = {
            "observation": self.observation,
            "action": self.action,
            "reward": self.reward,
            "info": dict(self.info),
        }
        for name in ("prompt_ids", "completion_ids", "completion_logprobs", "env_mask"):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
        """Inverse of :meth:`to_dict`; raises :class:`TrajectoryFormatError` on a bad dict."""
        if not isinstance(data, Mapping):
            raise TrajectoryFormatError(f"Expected a turn to be a JSON object, got {data!r:.80}")
        _check_keys("turn", data, required={"observation", "action"}, allowed=_TURN_FIELDS)
        return cls(**data)


_TURN_FIELDS = frozenset(
    {
        "observation",
        "action",
        "reward",
        "info",
        "prompt_ids",
        "completion_ids",
        "completion_logprobs",
        "env_mask",
    }
)
_TRAJECTORY_FIELDS = frozenset(
    {"turns", "total_reward", "env_id", "seed", "agent", "stop_reason", "metadata"}
)


def _check_keys(what: str, data: Mapping[str, Any], *, required: set[str], allowed: frozenset[str]) -> None:
    missing = sorted(required - set(data))
    if missing:
        raise TrajectoryFormatError(f"A {what} is missing field(s) {missing}; got fields {sorted(data)}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise TrajectoryFormatError(
            f"A {what} has unknown field(s) {unknown}; expected only {sorted(allowed)}"
        )


@dataclass(frozen=True)
class Trajectory:
    """One agent's episode: its turns, total reward, where it came from and why it stopped.

    Example:
        >>> traj = Trajectory(
        ...     turns=(Turn("Your move.", "rock", 0.0), Turn("You drew. Again.", "paper", 1.0)),
        ...     env_id="rock_paper_scissors_v0", seed=7, agent="player_0", stop_reason="terminated",
        ... )
        >>> traj.total_reward, len(traj), Trajectory.from_dict(traj.to_dict()) == traj
        (1.0, 2, True)
    """

    turns: tuple[Turn, ...]
    """The agent's decisions in order."""
    env_id: str
    """The env id or game name, e.g. ``"tinker/GuessNumber-v0"`` or ``"tictactoe_v0"``."""
    seed: int | None = None
    """The seed the episode was reset with."""
    agent: str | None = None
    """The seat (PettingZoo agent id) for games; ``None`` for single-agent envs."""
    stop_reason: StopReason = "terminated"
    """``"terminated"``, ``"truncated"``, ``"token_budget"`` or ``"error"``."""
    total_reward: float | None = None
    """The agent's return; defaults to the sum of the turns' rewards."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Anything else: policy names, opponents, outcome, sampler settings, ..."""

    def __post_init__(self) -> None:
        if isinstance(self.turns, (str, bytes)) or not isinstance(self.turns, Iterable):
            raise TrajectoryFormatError(f"Expected `turns` to be a sequence of Turn, got {self.turns!r:.80}")
        turns = tuple(self.turns)
        for turn in turns:
            if not isinstance(turn, Turn):
                raise TrajectoryFormatError(f"Expected every item of `turns` to be a Turn, got {turn!r:.80}")
        object.__setattr__(self, "turns", turns)
        if not isinstance(self.env_id, str):
            raise TrajectoryFormatError(f"Expected `env_id` to be a str, got {self.env_id!r}")
        if self.seed is not None and (not isinstance(self.seed, int) or isinstance(self.seed, bool)):
            raise TrajectoryFormatError(f"Expected `seed` to be an int or None, got {self.seed!r}")
        if self.agent is not None and not isinstance(self.agent, str):
            raise TrajectoryFormatError(f"Expected `agent` to be a str or None, got {self.agent!r}")
        if self.stop_reason not in _STOP_REASONS:
            raise TrajectoryFormatError(
                f"Expected `stop_reason` to be one of {sorted(_STOP_REASONS)}, got {self.stop_reason!r}"
            )
        if self.total_reward is None:
            object.__setattr__(self, "total_reward", math.fsum(t.reward for t in turns))
        elif isinstance(self.total_reward, bool) or not isinstance(self.total_reward, (int, float)):
            raise TrajectoryFormatError(f"Expected `total_reward` to be a number, got {self.total_reward!r}")
        else:
            object.__setattr__(self, "total_reward", float(self.total_reward))
        if not isinstance(self.metadata, Mapping):
            raise TrajectoryFormatError(f"Expected `metadata` to be a mapping, got {self.metadata!r:.80}")

    def __len__(self) -> int:
        return len(self.turns)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (turns as dicts)."""
        return {
            "turns": [turn.to_dict() for turn in self.turns],
            "total_reward": self.total_reward,
            "env_id": self.env_id,
            "seed": self.seed,
            "agent": self.agent,
            "stop_reason": self.stop_reason,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trajectory:
        """Inverse of :meth:`to_dict`; raises :class:`TrajectoryFormatError` on a bad dict."""
        if not isinstance(data, Mapping):
            raise TrajectoryFormatError(f"Expected a trajectory to be a JSON object, got {data!r:.80}")
        _check_keys("trajectory", data, required={"turns", "env_id"}, allowed=_TRAJECTORY_FIELDS)
        turns = data["turns"]
        if not isinstance(turns, list):
            raise TrajectoryFormatError(f"Expected `turns` to be a list, got {turns!r:.80}")
        return cls(**{**data, "turns": tuple(Turn.from_dict(t) for t in turns)})


def save_jsonl(path: str | PathLike[str], trajectories: Iterable[Trajectory]) -> int:
    """Write ``trajectories`` to ``path``, one JSON object a line; returns how many were written.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "t.jsonl")
        >>> save_jsonl(path, [Trajectory(turns=(Turn("hi", "hello", 1.0),), env_id="demo")])
        1
        >>> load_jsonl(path)[0].turns[0].action
        'hello'
    """
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            if not isinstance(trajectory, Trajectory):
                raise TypeError(f"save_jsonl expects Trajectory objects, got {type(trajectory).__name__}")
            try:
                line = json.dumps(trajectory.to_dict(), ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as error:
                raise TrajectoryFormatError(
                    f"Trajectory #{count} (env_id={trajectory.env_id!r}) is not JSON-serialisable: {error}"
                ) from error
            handle.write(line + "\n")
            count += 1
    return count


def load_jsonl(path: str | PathLike[str]) -> list[Trajectory]:
    """Read trajectories written by :func:`save_jsonl`. Blank lines are skipped.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        TrajectoryFormatError: a line is not JSON or not a trajectory; the message names the
            file and line.
    """
    out = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise TrajectoryFormatError(
            f"{path}: not a UTF-8 text file ({error.reason} at byte {error.start})"
        ) from None
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise TrajectoryFormatError(
                f"{path}:{number}: not valid JSON ({error.msg}): {line[:80]!r}"
            ) from None
        try:
            out.append(Trajectory.from_dict(data))
        except (TrajectoryFormatError, TypeError, ValueError) as error:
            raise TrajectoryFormatError(f"{path}:{number}: not a trajectory: {error}") from None
    return out
