"""What a rollout returns: trajectories with :class:`RolloutStats`, and argument checks shared by the engines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_tinker.trajectory import Trajectory

__all__ = ["RolloutGroups", "RolloutResult", "RolloutStats", "check_limits", "check_seeds"]


@dataclass
class RolloutStats:
    """What happened during a rollout: counts, failures and where the time went."""

    episodes: int = 0
    """Episodes asked for (one per seed)."""
    completed: int = 0
    """Episodes that ended normally (terminated, truncated or out of token budget)."""
    retried: int = 0
    """Restarts of an episode from its seed after a failure."""
    dropped: int = 0
    """Episodes abandoned after ``1 + retries`` failed attempts."""
    failures: list[str] = field(default_factory=list)
    """One line per failed attempt: which episode, which seed, what went wrong."""
    policy_calls: int = 0
    """Batched policy calls made."""
    sampled_tokens: int = 0
    """Tokens sampled, when the policy reports token ids."""
    policy_seconds: float = 0.0
    """Time spent in policy calls."""
    env_seconds: float = 0.0
    """Time spent in env resets and steps."""
    wall_seconds: float = 0.0
    """Time the whole rollout took."""

    def metrics(self, prefix: str = "rollout/") -> dict[str, float]:
        """Numbers for a metrics logger.

        Example:
            >>> RolloutStats(episodes=4, completed=3, dropped=1).metrics()["rollout/dropped"]
            1.0
        """
        wall = self.wall_seconds or float("nan")
        values = {
            "episodes": self.episodes,
            "completed": self.completed,
            "retried": self.retried,
            "dropped": self.dropped,
            "policy_calls": self.policy_calls,
            "sampled_tokens": self.sampled_tokens,
            "policy_seconds": self.policy_seconds,
            "env_seconds": self.env_seconds,
            "wall_seconds": self.wall_seconds,
            "env_time_share": self.env_seconds / wall,
            "episodes_per_second": self.completed / wall,
            "tokens_per_second": self.sampled_tokens / wall,
        }
        return {prefix + key: float(value) for key, value in values.items()}


class RolloutResult(list[Trajectory]):
    """The trajectories of a rollout, in seed order (dropped episodes left out), plus :attr:`stats`."""

    def __init__(self, trajectories: Sequence[Trajectory] = (), stats: RolloutStats | None = None):
        super().__init__(trajectories)
        self.stats = stats if stats is not None else RolloutStats()


class RolloutGroups(list[list[Trajectory]]):
    """GRPO groups: one list per seed with its members' trajectories (dropped ones left out), plus :attr:`stats`."""

    def __init__(self, groups: Sequence[list[Trajectory]] = (), stats: RolloutStats | None = None):
        super().__init__(groups)
        self.stats = stats if stats is not None else RolloutStats()


def check_seeds(seeds: Any) -> list[int]:
    """``seeds`` as a list of ints, or a clear error."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence):
        raise TypeError(f"Expected `seeds` to be a sequence of ints (one per episode), got {seeds!r:.80}")
    for seed in seeds:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"Expected every seed to be an int >= 0, got {seed!r}")
    return list(seeds)


def check_limits(max_turns: Any, token_budget: Any, retries: Any) -> None:
    """Clear errors for bad ``max_turns``, ``token_budget`` or ``retries``."""
    for name, value, minimum in (("max_turns", max_turns, 1), ("token_budget", token_budget, 1)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < minimum):
            raise ValueError(f"Expected `{name}` to be an int >= {minimum} or None, got {value!r}")
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise ValueError(f"Expected `retries` to be an int >= 0, got {retries!r}")
