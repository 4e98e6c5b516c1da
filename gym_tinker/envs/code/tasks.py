"""Seeded function-writing tasks for the Code env: a spec, a reference solution, hidden tests.

Each family is a solution template with parameters drawn from the seed (so every task differs)
and an input generator. The reference solution is formatted from our own template with numeric
or short literal parameters only, and the expected outputs come from running it here: the
prompt, the tests and the oracle's answer cannot disagree.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gym_tinker.tasks import check_difficulty

__all__ = ["FAMILIES", "CodeTask", "Family", "generate_task"]


@dataclass(frozen=True)
class CodeTask:
    """One function to write."""

    prompt: str
    """The spec shown to the agent (signature, behaviour, examples, answer format)."""
    entry_point: str
    """Name of the function the tests call."""
    tests: tuple[tuple[tuple[Any, ...], Any], ...]
    """Hidden ``(args, expected)`` pairs."""
    task_id: str
    """Deterministic id."""
    solution: str | None = None
    """A correct solution (``None`` for dataset rows that have none)."""


@dataclass(frozen=True)
class Family:
    """A kind of function: how to draw parameters, describe it, solve it and draw inputs."""

    name: str
    """Family name, part of the task id."""
    signature: str
    """``def name(args) -> type`` line (also the entry point's name)."""
    spec: str
    """What the function does, a format string over the parameters."""
    solution: str
    """Reference body, a format string over the parameters (indented, after the signature)."""
    params: Callable[[np.random.Generator], dict[str, Any]]
    """Draws the task's parameters."""
    inputs: Callable[[np.random.Generator, dict[str, Any]], tuple[Any, ...]]
    """Draws one test's positional arguments, given the parameters."""

    @property
    def entry_point(self) -> str:
        """The function's name, from the signature."""
        return self.signature.split("(")[0].removeprefix("def ").strip()


def _ints(rng: np.random.Generator, low: int, high: int, size: int) -> list[int]:
    return [int(v) for v in rng.integers(low, high, size=size)]


def _text(rng: np.random.Generator, alphabet: str, low: int, high: int) -> str:
    return "".join(
        alphabet[int(i)] for i in rng.integers(0, len(alphabet), size=int(rng.integers(low, high)))
    )


def _words(rng: np.random.Generator) -> str:
    words = [_text(rng, string.ascii_lowercase, 1, 10) for _ in range(int(rng.integers(0, 8)))]
    return " ".join(words)


def _brackets(rng: np.random.Generator, o: str, c: str) -> str:
    """Balanced bracket text most of the time (so depth matters), otherwise random."""
    if rng.random() < 0.35:
        return _text(rng, o * 3 + c * 3 + "x(]", 0, 14)
    out, depth = [], 0
    for _ in range(int(rng.integers(0, 14))):
        move = int(rng.integers(3))
        if move == 0 or depth == 0:
            out.append(o)
            depth += 1
        elif move == 1:
            out.append(c)
            depth -= 1
        else:
            out.append("x")
    return "".join(out) + c * depth


def _letter(rng: np.random.Generator) -> str:
    return string.ascii_lowercase[int(rng.integers(26))]


FAMILIES: dict[str, tuple[Family, ...]] = {
    "easy": (
        Family(
            "affine",
            "def scale_shift(x: int) -> int",
            "returns x multiplied by {a}, plus {b}",
            "    return x * {a} + {b}",
            lambda rng: {"a": int(rng.integers(-9, 10)), "b": int(rng.integers(-50, 51))},
            lambda rng, p: (int(rng.integers(-1000, 1001)),),
        ),
        Family(
            "count_letter",
            "def count_letter(s: str) -> int",
            "returns how many times the letter {c!r} occurs in s, ignoring case",
            "    return s.lower().count({c!r})",
            lambda rng: {"c": _letter(rng)},
            lambda rng, p: (_text(rng, p["c"] * 3 + p["c"].upper() + "abcxyz ", 0, 20),),
        ),
        Family(
            "clamp",
            "def clamp_value(x: int) -> int",
            "returns x limited to the range [{lo}, {hi}]: {lo} if x is smaller, {hi} if x is larger, else x",
            "    return max({lo}, min({hi}, x))",
            lambda rng: (lambda lo: {"lo": lo, "hi": lo + int(rng.integers(1, 100))})(
                int(rng.integers(-100, 100))
            ),
            lambda rng, p: (int(rng.integers(p["lo"] - 60, p["hi"] + 60)),),
        ),
        Family(
            "repeat_join",
            "def repeat_join(s: str) -> str",
            "returns s repeated {k} times, the copies separated by {sep!r}",
            "    return {sep!r}.join([s] * {k})",
            lambda rng: {"k": int(rng.integers(2, 6)), "sep": str(rng.choice(["-", ", ", "|", "+", " "]))},
            lambda rng, p: (_text(rng, string.ascii_letters, 0, 6),),
        ),
    ),
    "medium": (
        Family(
            "filter_list",
            "def filter_numbers(xs: list[int]) -> list[int]",
            "returns the items of xs that are divisible by {d} and greater than {t}, in their original order",
            "    return [x for x in xs if x % {d} == 0 and x > {t}]",
            lambda rng: {"d": int(rng.integers(2, 8)), "t": int(rng.integers(-20, 21))},
            lambda rng, p: (_ints(rng, -50, 51, int(rng.integers(0, 12))),),
        ),
        Family(
            "caesar",
            "def shift_letters(s: str) -> str",
            "shifts every lowercase letter a-z in s forward by {k} places in the alphabet (wrapping from z "
            "back to a) and leaves every other character unchanged",
            "    return ''.join(chr((ord(c) - 97 + {k}) % 26 + 97) if 'a' <= c <= 'z' else c for c in s)",
            lambda rng: {"k": int(rng.integers(1, 26))},
            lambda rng, p: (_text(rng, string.ascii_lowercase * 3 + "AZ !?,", 0, 25),),
        ),
        Family(
            "capped_totals",
            "def capped_totals(xs: list[int]) -> list[int]",
            "returns the running totals of xs, where the total starts at 0 and after adding each item is "
            "set to {cap} if it went above {cap}",
            "    total, out = 0, []\n    for x in xs:\n        total = min({cap}, total + x)\n        out.append(total)\n    return out",
            lambda rng: {"cap": int(rng.integers(10, 100))},
            lambda rng, p: (_ints(rng, -15, 40, int(rng.integers(0, 12))),),
        ),
        Family(
            "long_words",
            "def long_words(text: str) -> str",
            "returns the words of text (separated by spaces) that have more than {n} letters, upper-cased "
            "and joined by {sep!r}, in their original order",
            "    return {sep!r}.join(w.upper() for w in text.split() if len(w) > {n})",
            lambda rng: {"n": int(rng.integers(2, 6)), "sep": str(rng.choice(["-", ",", " ", "/"]))},
            lambda rng, p: (_words(rng),),
        ),
    ),
    "hard": (
        Family(
            "recurrence",
            "def sequence_term(n: int) -> int",
            "returns f(n) where f(0) = {p}, f(1) = {q} and f(k) = ({a} * f(k-1) + {b} * f(k-2)) % {m} for "
            "k >= 2 (n can be as large as 5000)",
            "    x, y = {p}, {q}\n    for _ in range(n):\n        x, y = y, ({a} * y + {b} * x) % {m}\n    return x",
            lambda rng: {
                "p": int(rng.integers(0, 10)),
                "q": int(rng.integers(1, 10)),
                "a": int(rng.integers(1, 6)),
                "b": int(rng.integers(1, 6)),
                "m": int(rng.choice([97, 101, 997, 1009, 10007])),
            },
            lambda rng, p: (int(rng.choice([int(rng.integers(0, 12)), int(rng.integers(12, 5001))])),),
        ),
        Family(
            "run_length",
            "def run_length(s: str) -> str",
            "returns the run-length encoding of s: for each run of equal consecutive characters, the "
            "{first} followed by the {second}, with runs separated by {sep!r} (the empty string gives '')",
            "    runs = []\n    for c in s:\n        if runs and runs[-1][0] == c:\n            runs[-1][1] += 1\n"
            "        else:\n            runs.append([c, 1])\n    return {sep!r}.join({pair} for c, k in runs)",
            lambda rng: (
                lambda count_first: {
                    "sep": str(rng.choice(["", "-", ",", ";"])),
                    "first": "count" if count_first else "character",
                    "second": "character" if count_first else "count",
                    "pair": "str(k) + c" if count_first else "c + str(k)",
                }
            )(bool(rng.integers(2))),
            lambda rng, p: (
                "".join(
                    str(rng.choice(list("aabbc"))) * int(rng.integers(1, 5))
                    for _ in range(int(rng.integers(0, 6)))
                ),
            ),
        ),
        Family(
            "second_largest",
            "def second_largest(xs: list[int]) -> int",
            "returns the second largest distinct value in xs, or {default} if xs has fewer than two "
            "distinct values",
            "    values = sorted(set(xs))\n    return values[-2] if len(values) >= 2 else {default}",
            lambda rng: {"default": int(rng.integers(-100, 0))},
            lambda rng, p: (_ints(rng, -20, 21, int(rng.integers(0, 4)) * int(rng.integers(0, 4))),),
        ),
        Family(
            "nesting_depth",
            "def nesting_depth(s: str) -> int",
            "returns the maximum nesting depth of the brackets {o!r} and {c!r} in s (other characters are "
            "ignored), or -1 if they are unbalanced (a {c!r} without an open {o!r}, or an {o!r} never closed)",
            "    depth = best = 0\n    for ch in s:\n        if ch == {o!r}:\n            depth += 1\n"
            "            best = max(best, depth)\n        elif ch == {c!r}:\n            depth -= 1\n"
            "            if depth < 0:\n                return -1\n    return best if depth == 0 else -1",
            lambda rng: dict(zip(("o", "c"), ["()", "[]", "{}", "<>"][int(rng.integers(4))], strict=True)),
            lambda rng, p: (_brackets(rng, p["o"], p["c"]),),
        ),
    ),
}
"""Function families per difficulty."""

TESTS_PER_TASK = {"easy": 8, "medium": 10, "hard": 12}
"""Hidden tests per task."""


def _reference(source: str, entry_point: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<reference {entry_point}>", "exec"), namespace)  # our own template, not model text
    function: Callable[..., Any] = namespace[entry_point]
    return function


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


def generate_task(rng: np.random.Generator, difficulty: str) -> CodeTask:
    """Draw a function task of ``difficulty`` from ``rng``.

    Example:
        >>> task = generate_task(np.random.default_rng(1), "easy")
        >>> len(task.tests), task == generate_task(np.random.default_rng(1), "easy")
        (8, True)
    """
    families = FAMILIES[check_difficulty(difficulty)]
    family = families[int(rng.integers(len(families)))]
    params = family.params(rng)
    solution = f"{family.signature}:\n{family.solution.format(**params)}\n"
    reference = _reference(solution, family.entry_point)
    n_tests = TESTS_PER_TASK[difficulty]
    inputs: list[tuple[Any, ...]] = []
    for _ in range(200):  # distinct inputs where the input space allows
        args = family.inputs(rng, params)
        if args not in inputs:
            inputs.append(args)
        if len(inputs) == n_tests + 2:
            break
    examples, hidden = inputs[:2], inputs[2:]
    tests = tuple((args, _jsonable(reference(*args))) for args in hidden)
    shown = "\n".join(
        f"    {family.entry_point}({', '.join(map(repr, args))}) == {reference(*args)!r}" for args in examples
    )
    prompt = (
        f"Write a Python function\n\n    {family.signature}\n\nthat {family.spec.format(**params)}.\n\n"
        f"Examples:\n{shown}\n\n"
        "Reply with the complete function in a ```python code block. It must not read input or print: "
        "hidden tests call the function and check what it returns."
    )
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:8]
    return CodeTask(prompt, family.entry_point, tests, f"code-{difficulty}-{family.name}-{digest}", solution)
