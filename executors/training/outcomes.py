"""Whether episodes succeeded, and what a group of them teaches: the outcome figures every trainer logs."""

from __future__ import annotations

import math
from collections.abc import Sequence

from gym_tinker.trajectory import Trajectory

__all__ = ["group_metrics", "is_success"]


def is_success(trajectory: Trajectory) -> bool:
    """Whether an episode solved its task: the last turn's ``info["correct"]`` when the env reports it, else reward > 0.

    An episode that did not terminate (ran out of turns or tokens, or failed) never solved its
    task, whatever shaping rewards it collected on the way (ToolUse's ``tool_call_bonus``).

    >>> from gym_tinker.trajectory import Turn
    >>> is_success(Trajectory(turns=(Turn("q", "a", 0.1, info={"correct": False}),), env_id="demo"))
    False
    >>> is_success(Trajectory(turns=(Turn("q", "a", 1.0),), env_id="demo"))
    True
    >>> is_success(Trajectory(turns=(Turn("q", "<tool_call>", 0.05),), env_id="demo", stop_reason="truncated"))
    False
    """
    if trajectory.stop_reason != "terminated" or not trajectory.turns:
        return False
    correct = trajectory.turns[-1].info.get("correct")
    if correct is not None:
        return bool(correct)
    return float(trajectory.total_reward or 0.0) > 0


def group_metrics(groups: Sequence[Sequence[Trajectory]]) -> dict[str, float]:
    """Reward, success and the fraction of groups whose rewards are all equal (they teach GRPO nothing).

    >>> from gym_tinker.trajectory import Turn
    >>> def t(r): return Trajectory(turns=(Turn("q", "a", r),), env_id="demo")
    >>> m = group_metrics([[t(1.0), t(0.0)], [t(0.0), t(0.0)]])
    >>> m["zero_variance_fraction"], m["reward_mean"], m["success_rate"]
    (0.5, 0.25, 0.25)
    """
    rewards = [float(t.total_reward or 0.0) for group in groups for t in group]
    successes = [is_success(t) for group in groups for t in group]
    flat = [len({float(t.total_reward or 0.0) for t in group}) <= 1 for group in groups if group]
    n = len(rewards)
    mean = sum(rewards) / n if n else 0.0
    return {
        "zero_variance_fraction": sum(flat) / len(flat) if flat else 0.0,
        "reward_mean": mean,
        "reward_std": math.sqrt(sum((r - mean) ** 2 for r in rewards) / n) if n else 0.0,
        "success_rate": sum(successes) / n if n else 0.0,
    }
