"""GuessNumber: find a secret integer from higher/lower feedback (multi-turn; the speed reference).

Rules
    The env picks a secret whole number in ``[low, high]``; each turn the agent guesses one number
    and hears whether the secret is higher, lower, or found. The range and the default turn
    budget grow with ``difficulty``:

    ==========  ==========  ====================================================
    difficulty  range       turns (when ``max_turns`` is not given)
    ==========  ==========  ====================================================
    easy        1-100       10 (binary search needs at most 7)
    medium      1-1000      12 (binary search needs at most 10)
    hard        1-10000     16 (binary search needs at most 14)
    ==========  ==========  ====================================================

Action
    Any text. The guess is the last whole number in it, after narrowing to the last
    ``<answer>...</answer>`` or ``\\boxed{...}`` if there is one; ``"<answer>50</answer>"``,
    ``"My guess: 50"`` and ``"50"`` all guess 50. A message without a whole number, or a guess
    outside the range, gets feedback saying so and costs a turn.

Reward
    ``1 - (turns - 1) / max_turns`` on the turn the number is found (1.0 at the first guess,
    ``1 / max_turns`` at the last), 0.0 on every other turn. Terminated when found, truncated
    when the turns run out (the last message then reveals the number).

Info
    ``info["feedback"]`` is ``"higher"``, ``"lower"``, ``"correct"``, ``"out_of_range"`` or
    ``"invalid"``.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any, ClassVar

from gym_tinker.core import StepResult, TextEnv
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from gym_tinker.parsing import last_answer_or_box
from gym_tinker.tasks import TaskDataset, check_difficulty

__all__ = ["DIFFICULTY_RANGES", "DIFFICULTY_TURNS", "GuessNumberEnv", "oracle", "parse_guess"]

DIFFICULTY_RANGES: dict[str, tuple[int, int]] = {"easy": (1, 100), "medium": (1, 1000), "hard": (1, 10000)}
"""Inclusive ``(low, high)`` range of the secret per difficulty."""

DIFFICULTY_TURNS: dict[str, int] = {"easy": 10, "medium": 12, "hard": 16}
"""Default turn budget per difficulty: the worst case of binary search plus a little slack."""

# ASCII digits only: `str.isdigit` accepts "²" and `int` accepts "٣", neither of which is a guess.
# The greedy `.*` makes one left-anchored match find the *last* number without scanning every
# number in the text (about 3x faster than `finditer` on chatty replies; this is the hot path).
_LAST_NUMBER = re.compile(r".*(?<![0-9,.])((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?)", re.DOTALL)
# Longer digit strings are far outside any range; capping avoids `int()` on megabytes of digits.
_MAX_DIGITS = 18
_HUGE = 10**_MAX_DIGITS
# The replies seen most, "\\boxed{42}", "<answer>42</answer>" and "42" (ASCII digits, no sign, at most
# `_MAX_DIGITS`), whose guess is the digits themselves: one C-level match instead of the general path
# (4x faster on the env's hot path). tests/gym_tinker/test_guess_number_fast_paths.py checks they agree.
_PLAIN_GUESS = re.compile(r"\\boxed\{([0-9]{1,18})\}|<answer>([0-9]{1,18})</answer>|([0-9]{1,18})")

_SYSTEM_PROMPT = (
    "You are playing a number guessing game. Each turn, reply with one whole number, your "
    "guess, inside <answer></answer> tags, for example <answer>50</answer>. A bare number "
    "works too. Use the higher/lower feedback to find the number in as few guesses as possible."
)


def parse_guess(text: str) -> int | None:
    """The integer an agent's message guesses, or ``None`` if it holds no whole number.

    The last ``<answer>...</answer>`` or ``\\boxed{...}`` narrows the search when present; the
    last number in what remains is the guess. Thousands separators are accepted, a decimal part
    of zero is dropped (``"50.0"`` is 50) and any other fraction makes the message unparsable.
    A ``-`` directly before the number (and not after a letter or digit) makes it negative.
    Only ASCII digits count. Numbers with more than 18 digits come back as ``±10**18``.

    Example:
        >>> parse_guess("Between 1 and 100, I guess <answer>42</answer>")
        42
        >>> parse_guess("My guess: 1,250"), parse_guess("\\\\boxed{-7}"), parse_guess("50.0")
        (1250, -7, 50)
        >>> parse_guess("no idea") is None, parse_guess("2.5") is None, parse_guess("²") is None
        (True, True, True)
    """
    plain = _PLAIN_GUESS.fullmatch(text)
    if plain is not None:
        return int(plain[plain.lastindex])  # type: ignore[index]  # a match sets exactly one group
    return _parse_guess_general(text)


def _parse_guess_general(text: str) -> int | None:
    """:func:`parse_guess` without its fast path (the reference the fast path is tested against)."""
    if "nswer" in text or "NSWER" in text or "boxed" in text:
        final = last_answer_or_box(text)
        if final is not None:
            text = final
            # The usual content once narrowed: ASCII digits only, whose guess is the digits themselves.
            if text.isdigit() and text.isascii() and len(text) <= _MAX_DIGITS:
                return int(text)
    match = _LAST_NUMBER.match(text)
    if match is None:
        return None
    integer, _, fraction = match.group(1).partition(".")
    if fraction and fraction.strip("0"):
        return None
    digits = integer.replace(",", "").lstrip("0") or "0"
    start = match.start(1)
    negative = start > 0 and text[start - 1] == "-" and (start == 1 or not text[start - 2].isalnum())
    if len(digits) > _MAX_DIGITS:
        return -_HUGE if negative else _HUGE
    return -int(digits) if negative else int(digits)


# Draws per `Generator.integers` call after a seed's first (see `GuessNumberEnv._draw_below`): a call
# costs about 1 us, a draw handed out of a block about 0.1 us.
_DRAW_BLOCK = 64


@functools.lru_cache(maxsize=16384)  # every secret of every difficulty (11,100) fits
def _task_id(low: int, high: int, secret: int) -> str:
    # A digest rather than the numbers themselves: the task id must not reveal the secret.
    digest = hashlib.sha1(f"{low}:{high}:{secret}".encode()).hexdigest()[:12]
    return f"GuessNumber-{low}-{high}-{digest}"


@functools.lru_cache(maxsize=4096)
def _intro(low: int, high: int, max_turns: int) -> str:
    """The first observation (the same for every secret of a range and turn budget)."""
    return (
        f"I'm thinking of a whole number between {low} and {high} (inclusive).\n"
        f"You have {max_turns} guesses. After each guess I'll tell you whether the number is "
        f"higher or lower.\nReply with your guess, e.g. <answer>{(low + high) // 2}</answer>."
    )


class GuessNumberEnv(TextEnv):
    """Guess a secret integer in as few turns as possible, from higher/lower feedback.

    See the module docstring for the rules, the action format and the reward.

    Args:
        difficulty: ``"easy"`` (1-100), ``"medium"`` (1-1000) or ``"hard"`` (1-10000).
        dataset: Fixed tasks instead of random ones: a JSONL path, a ``datasets.Dataset`` or a
            sequence of dicts with column ``secret`` (int) and optional ``low``/``high`` (ints;
            the difficulty's range when missing).
        max_turns: Guesses per episode; default per difficulty (10, 12, 16).
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an action that are read; a longer one is cut, with a
            note in the observation (``None``: no cap; see :mod:`gym_tinker.limits`).

    Example:
        >>> env = GuessNumberEnv()
        >>> observation, info = env.reset(seed=0)
        >>> observation.splitlines()[0]
        "I'm thinking of a whole number between 1 and 100 (inclusive)."
        >>> env.step("<answer>50</answer>")[0].split(".")[0] in ("50 is too low", "50 is too high", "50 is correct")
        True
        >>> env.step(oracle(env))[1:3]
        (0.9, True)
    """

    description: ClassVar[str] = (
        "Guess a secret integer from higher/lower feedback; fewer guesses, more reward."
    )
    # The budget at the default difficulty; with `max_turns=None`, medium and hard get more.
    default_max_turns: ClassVar[int] = DIFFICULTY_TURNS["easy"]

    def __init__(
        self,
        difficulty: str = "easy",
        dataset: Any = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        *,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        self.difficulty = check_difficulty(difficulty)
        super().__init__(
            max_turns=DIFFICULTY_TURNS[self.difficulty] if max_turns is None else max_turns,
            render_mode=render_mode,
            max_action_chars=max_action_chars,
        )
        self.low, self.high = DIFFICULTY_RANGES[self.difficulty]
        self.dataset = None
        if dataset is not None:
            self.dataset = TaskDataset(
                dataset, required=["secret"], optional=["low", "high"], env_name="GuessNumber"
            )
            for index, row in enumerate(self.dataset.rows):
                self._check_row(index, row)
        self.secret = self.low
        # `_draw_below`'s block: the generator and bound it was drawn with, and the draws not yet used
        # (last first).
        self._drawing_from: Any = None
        self._drawing_below = 0
        self._drawn: list[int] = []

    def _check_row(self, index: int, row: dict[str, Any]) -> None:
        default_low, default_high = DIFFICULTY_RANGES[self.difficulty]
        low, high, secret = row.get("low", default_low), row.get("high", default_high), row["secret"]
        for name, value in (("low", low), ("high", high), ("secret", secret)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(
                    f"GuessNumber dataset row {index}: expected `{name}` to be an int, got {value!r}"
                )
        if not low <= secret <= high:
            raise ValueError(
                f"GuessNumber dataset row {index}: expected low <= secret <= high, got {low}, {secret}, {high}"
            )

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        low, high = DIFFICULTY_RANGES[self.difficulty]
        if self.dataset is None:
            secret = low + self._draw_below(high - low + 1)  # np_random.integers(low, high + 1)
            task_id = _task_id(low, high, secret)
        else:
            if not options or options.get("task_index") is None:
                # `TaskDataset.pick`'s draw (the same index), without its copy of the row.
                index = self._draw_below(len(self.dataset.rows))
                row = self.dataset.rows[index]
            else:
                index, row = self.dataset.pick(self.np_random, options)
            low, high, secret = row.get("low", low), row.get("high", high), row["secret"]
            task_id = f"GuessNumber-row{index}"
        self.low, self.high, self.secret = low, high, secret
        info = {
            "system_prompt": _SYSTEM_PROMPT,
            "tools": [],
            "task_id": task_id,
            "difficulty": self.difficulty,
        }
        return _intro(low, high, self.max_turns), info

    def _draw_below(self, n: int) -> int:
        """The value ``int(self.np_random.integers(n))`` would give, from NumPy's public API only.

        The first draw after seeding is one ``integers`` call, so a reset with a new seed each episode
        draws only what it uses. Later draws come from a block, ``integers(n, size=_DRAW_BLOCK)``,
        which holds the values as many single calls would give, in order (tests check it for every
        NumPy bit generator); until the block is used up ``np_random`` is ahead of the secrets.
        """
        generator = self.np_random
        if generator is self._drawing_from and n == self._drawing_below:
            if not self._drawn:
                self._drawn = generator.integers(n, size=_DRAW_BLOCK).tolist()
                self._drawn.reverse()
            return self._drawn.pop()
        self._drawing_from, self._drawing_below, self._drawn = generator, n, []
        return int(generator.integers(n))

    def _step(self, action: str) -> StepResult:
        guess = parse_guess(action)
        turn, secret = self.turn, self.secret
        if guess is not None and guess == secret:
            plural = "guess" if turn == 1 else "guesses"
            text = f"{guess} is correct! You found it in {turn} {plural}."
            return text, 1.0 - (turn - 1) / self.max_turns, True, False, {"feedback": "correct"}
        left = self.max_turns - turn
        if left > 1:
            tail = f" {left} guesses left."
        elif left == 1:
            tail = " 1 guess left."
        else:
            tail = f" Out of guesses. The number was {secret}."
        low, high = self.low, self.high
        if guess is None:
            text = (
                f"I couldn't find a whole number in your reply. Guess a whole number between {low} and "
                f"{high}, e.g. <answer>{(low + high) // 2}</answer>.{tail}"
            )
            return text, 0.0, False, False, {"feedback": "invalid"}
        if guess < low or guess > high:
            text = f"{guess} is out of range: the number is a whole number between {low} and {high}.{tail}"
            return text, 0.0, False, False, {"feedback": "out_of_range"}
        if guess < secret:
            return (
                f"{guess} is too low. The number is higher.{tail}",
                0.0,
                False,
                False,
                {"feedback": "higher"},
            )
        return f"{guess} is too high. The number is lower.{tail}", 0.0, False, False, {"feedback": "lower"}


def oracle(env: Any) -> str:
    """The perfect next guess: the secret itself (``env`` may be wrapped).

    Example:
        >>> env = GuessNumberEnv(difficulty="hard")
        >>> _ = env.reset(seed=1)
        >>> env.step(oracle(env))[1]
        1.0
    """
    inner = env.unwrapped
    if not isinstance(inner, GuessNumberEnv):
        raise TypeError(f"guess_number.oracle expects a GuessNumberEnv, got {type(inner).__name__}")
    return f"<answer>{inner.secret}</answer>"
