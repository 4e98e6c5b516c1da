"""`FormatReward`: bounded reward shaping for following an output format (default: answer tags)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, SupportsFloat

import gymnasium as gym

from gym_tinker.parsing import has_answer_tags

__all__ = ["FormatReward"]


class FormatReward(gym.Wrapper[str, str, str, str]):
    """Add ``+bonus`` when an action passes a format check and ``-penalty`` when it fails.

    The shaping is applied on the step that ends the episode (``when="final"``, the default:
    the final answer is where the format matters, and tool-call turns are not judged), or on
    every step (``when="every"``). ``info["format_ok"]`` and ``info["format_reward"]`` report
    it on the steps where it applies.

    .. warning::
        Small models learn to game a format bonus (tags around a wrong answer). Keep ``bonus``
        below the gap between a right and a wrong answer's reward, so that a right answer without
        the format always beats a wrong one with it: with 0/1 task rewards, ``bonus + penalty < 1``
        guarantees it (the default 0.1 + 0 does).

    Args:
        env: A text env.
        check: ``check(action) -> bool``; default :func:`gym_tinker.parsing.has_answer_tags`
            (a closed, non-empty ``<answer>...</answer>``). Must pickle for vector envs, so use a
            module-level function rather than a lambda.
        bonus: Added when the check passes; in ``[0, 1]``.
        penalty: Subtracted when it fails; in ``[0, 1]``.
        when: ``"final"`` or ``"every"``.

    Example:
        >>> from gym_tinker.envs.math import MathEnv
        >>> env = FormatReward(MathEnv(), bonus=0.1)
        >>> _ = env.reset(seed=0)
        >>> env.step("<answer>63</answer>")[1]
        1.1
        >>> _ = env.reset(seed=0)
        >>> env.step("It is 63.")[1]
        1.0
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        check: Callable[[str], bool] = has_answer_tags,
        *,
        bonus: float = 0.1,
        penalty: float = 0.0,
        when: Literal["final", "every"] = "final",
    ):
        super().__init__(env)
        if not callable(check):
            raise TypeError(f"Expected `check` to be a callable taking the action text, got {check!r}")
        for name, value in (("bonus", bonus), ("penalty", penalty)):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value <= 1
                or math.isnan(value)
            ):
                raise ValueError(f"Expected `{name}` to be a number in [0, 1], got {value!r}")
        if when not in ("final", "every"):
            raise ValueError(f"Expected `when` to be 'final' or 'every', got {when!r}")
        self.check = check
        self.bonus = float(bonus)
        self.penalty = float(penalty)
        self.when = when

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env and add the format shaping where it applies."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        if self.when == "every" or terminated or truncated:
            ok = bool(self.check(action))
            shaping = self.bonus if ok else -self.penalty
            info["format_ok"] = ok
            info["format_reward"] = shaping
            reward = float(reward) + shaping
        return observation, reward, terminated, truncated, info
