"""Adversarial actions of any size, and a check that a step's time grows linearly with them.

A parser that is fine on a 200-character answer can take minutes on a 1 MB flood of one tag:
``re.search(r"<answer>(.*?)</answer>")`` on ``"<answer>" * n`` scans to the end from each of the
``n`` tags. :data:`ADVERSARIAL_PATTERNS` lists the shapes that break naive parsers (repeated and
unclosed tags, nested tags, backtick, bracket and brace floods, digit runs, mixed scripts), each
grown to any size with :meth:`AdversarialPattern.make`. :func:`check_linear_time` times a step on
each at two sizes and fails where the time grows faster than linearly; :func:`check_linear_step`
runs it on a text env, and ``multiagent.testing.check_game_linear_step`` on a game.

Times are CPU time of the calling thread (``time.thread_time``), the best of a few runs, so other
processes on the machine do not change the ratio much; work in child processes (a sandbox) is
not counted.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

__all__ = [
    "ADVERSARIAL_PATTERNS",
    "AdversarialPattern",
    "check_linear_step",
    "check_linear_time",
]


@dataclass(frozen=True)
class AdversarialPattern:
    """An action shape that grows to any size: ``prefix + unit * k + suffix``.

    Example:
        >>> AdversarialPattern("open tags", "<a>").make(10)
        '<a><a><a><'
        >>> len(AdversarialPattern("call", "1+", prefix="f(", suffix=")").make(1000))
        1000
    """

    name: str
    """What the pattern is, for error messages."""
    unit: str
    """The repeated part."""
    prefix: str = ""
    """Text before the repetitions (an opened tool call, a fence)."""
    suffix: str = ""
    """Text after them (a closing tag)."""

    def make(self, size: int) -> str:
        """The pattern grown to exactly ``size`` characters (the suffix is kept where it fits)."""
        body = size - len(self.prefix) - len(self.suffix)
        if body <= 0:
            return (self.prefix + self.suffix)[:size]
        return self.prefix + (self.unit * (body // len(self.unit) + 1))[:body] + self.suffix


_CALC = '<tool_call>{"name": "calculator", "arguments": {"expression": "'
_PY = '<tool_call>{"name": "python", "arguments": {"code": "'

ADVERSARIAL_PATTERNS: tuple[AdversarialPattern, ...] = (
    AdversarialPattern("open answer tags", "<answer>"),
    AdversarialPattern("unclosed answers", "<answer>1 "),
    AdversarialPattern("nested answers", "<answer><answer>1</answer>"),
    AdversarialPattern("close answer tags", "</answer>"),
    AdversarialPattern("spaced answer tags", "< answer >"),
    AdversarialPattern("open tool_call tags", "<tool_call>"),
    AdversarialPattern(
        "unclosed tool calls", '<tool_call>{"name": "calculator", "arguments": {"expression": "1+'
    ),
    AdversarialPattern("json openers", '{"name": '),
    AdversarialPattern("json arrays", '["a", '),
    AdversarialPattern("brace flood", "{"),
    AdversarialPattern("bracket flood", "["),
    AdversarialPattern("bracket pairs", "[1]"),
    AdversarialPattern("paren flood", "("),
    AdversarialPattern("quote flood", '"'),
    AdversarialPattern("backslash flood", "\\"),
    AdversarialPattern("boxed flood", "\\boxed{"),
    AdversarialPattern("frac flood", "\\frac{1}{"),
    AdversarialPattern("backtick flood", "`"),
    AdversarialPattern("fence flood", "```python\n"),
    AdversarialPattern("unclosed fence", "x = 1\n", prefix="```python\n"),
    AdversarialPattern("move tags", "<move>"),
    AdversarialPattern("message tags", "<message>"),
    AdversarialPattern("offer tags", "<offer>"),
    AdversarialPattern("think tags", "<think>"),
    AdversarialPattern("angle flood", "<"),
    AdversarialPattern("digits", "1"),
    AdversarialPattern("digit groups", "1,000,"),
    AdversarialPattern("decimals", "1."),
    AdversarialPattern("minus signs", "-"),
    AdversarialPattern("spaced numbers", "1 "),
    AdversarialPattern("words", "the answer is "),
    AdversarialPattern("offer words", "offer: books=1 "),
    AdversarialPattern("mixed scripts", "é中٣²🙂\u202e\u200b "),
    AdversarialPattern("whitespace", " \n\t"),
    AdversarialPattern("fractions in an answer", "\\frac{1}{2}+", prefix="<answer>", suffix="</answer>"),
    AdversarialPattern("digit groups in an answer", "1,000", prefix="<answer>", suffix="</answer>"),
    AdversarialPattern("words in an answer", "x = 5 apples ", prefix="<answer>", suffix="</answer>"),
    AdversarialPattern("braces in a box", "{", prefix="\\boxed{", suffix="}"),
    AdversarialPattern("long calculator call", "(1+", prefix=_CALC, suffix='"}}</tool_call>'),
    AdversarialPattern("long python call", "x=1;", prefix=_PY, suffix='"}}</tool_call>'),
)
"""Shapes that break naive (quadratic) parsers; each grows to any size."""


def _best_time(prepare: Callable[[], Callable[[str], Any]], action: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        step = prepare()
        enabled = gc.isenabled()
        gc.disable()  # a collection landing in one run would look like superlinear growth
        try:
            start = time.thread_time()
            step(action)
            best = min(best, time.thread_time() - start)
        finally:
            if enabled:
                gc.enable()
    return best


def check_linear_time(
    prepare: Callable[[], Callable[[str], Any]],
    *,
    label: str = "step",
    patterns: Iterable[AdversarialPattern] = ADVERSARIAL_PATTERNS,
    size: int = 4_096,
    factor: int = 16,
    max_ratio: float = 48.0,
    floor: float = 0.002,
    repeat: int = 3,
) -> dict[str, tuple[float, float]]:
    """Check that ``step(action)`` takes time linear in ``len(action)`` on every pattern.

    For each pattern, ``prepare()`` makes a fresh ``step`` callable (an env just reset, say; not
    timed), which is timed on the pattern at ``size`` and at ``size * factor`` characters. Linear
    work grows ``factor``-fold, quadratic ``factor**2``-fold; the check fails where the larger
    took more than ``max_ratio`` times the smaller (or than ``floor`` seconds, whichever is more,
    so that microsecond timings do not decide).

    Returns:
        ``{pattern name: (seconds at size, seconds at size * factor)}``.

    Raises:
        AssertionError: naming every pattern that grew too fast, with its times.

    Example:
        >>> import re
        >>> check_linear_time(lambda: str.split, label="str.split", size=1000)["digits"][1] < 1.0
        True
        >>> quadratic = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
        >>> check_linear_time(  # doctest: +ELLIPSIS
        ...     lambda: quadratic.search, label="lazy tag regex", size=2_000,
        ...     patterns=[p for p in ADVERSARIAL_PATTERNS if p.name == "open answer tags"])
        Traceback (most recent call last):
        ...
        AssertionError: lazy tag regex is not linear in the action's length: 'open answer tags' ...
    """
    if not (isinstance(size, int) and size >= 1 and isinstance(factor, int) and factor >= 2):
        raise ValueError(
            f"Expected `size` >= 1 and `factor` >= 2 (ints), got size={size!r}, factor={factor!r}"
        )
    times: dict[str, tuple[float, float]] = {}
    slow: list[str] = []
    for pattern in patterns:
        small = _best_time(prepare, pattern.make(size), repeat)
        large = _best_time(prepare, pattern.make(size * factor), repeat)
        times[pattern.name] = (small, large)
        if large > max_ratio * max(small, floor):
            slow.append(
                f"{pattern.name!r} took {small * 1e3:.2f} ms at {size:,} characters and "
                f"{large * 1e3:.1f} ms at {size * factor:,} ({large / max(small, 1e-9):.0f}x for {factor}x)"
            )
    if slow:
        raise AssertionError(f"{label} is not linear in the action's length: " + "; ".join(slow))
    return times


def check_linear_step(env_id: str, *, seed: int = 0, **kwargs: Any) -> dict[str, tuple[float, float]]:
    """:func:`check_linear_time` on the first ``step`` of a registered text env, with no action cap.

    The env is made with ``max_action_chars=None``, so the parsers see the whole action; ``kwargs``
    go to :func:`check_linear_time`.

    Example:
        >>> times = check_linear_step("tinker/GuessNumber-v0")
        >>> sorted(times)[:3]
        ['angle flood', 'backslash flood', 'backtick flood']
    """

    def prepare() -> Callable[[str], Any]:
        env = gym.make(env_id, max_action_chars=None)
        env.reset(seed=seed)
        return env.step

    kwargs.setdefault("label", f"{env_id} step")
    return check_linear_time(prepare, **kwargs)
