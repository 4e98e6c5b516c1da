"""Countdown: reach a target number from given numbers with + - * / (single turn, ``tinker/Countdown-v0``).

Tasks
    Generated from the seed by combining some of the numbers with random operations, so every
    task has a solution. By ``difficulty``:

    ==========  =========================================================  ============
    difficulty  numbers                                                     target
    ==========  =========================================================  ============
    easy        3 numbers from 1-10                                         2-100
    medium      4 numbers from 1-25                                         10-250
    hard        6 numbers: one or two of 25 50 75 100, the rest 1-10        100-999
    ==========  =========================================================  ============

    With ``dataset``, tasks come from its rows instead (columns ``numbers``: a list of positive
    ints, ``target``: an int; optional ``task_id``).

Action
    One message holding an expression such as ``(3 + 5) * 2``: the one in the last
    ``<answer>...</answer>`` (or ``\\boxed{}``), else (``lenient=True``, the default) the last
    expression written in the message. ``= 16`` after the expression is fine. Only ``+ - * /``,
    parentheses and whole numbers from the given ones are allowed, each number used at most as
    many times as it is given. The expression is checked with the calculator's syntax-tree
    walker, never ``eval``.

Reward
    1.0 when the expression is valid and equals the target exactly, else 0.0. With
    ``partial_credit=c`` (``0 <= c < 1``; default 0), a valid expression that misses gets
    ``c * max(0, 1 - |value - target| / target)``, always less than a hit. The episode ends
    after the one action.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import Counter, deque
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from gym_tinker.core import StepResult, TextEnv
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from gym_tinker.parsing import extract_answer
from gym_tinker.tasks import TaskDataset, check_difficulty
from gym_tinker.tools.calculator import CalculatorError, evaluate_tree, format_number, parse_expression

__all__ = ["SYSTEM_PROMPT", "CountdownEnv", "check_expression", "generate_task", "oracle", "solve"]

SYSTEM_PROMPT = (
    "You play Countdown: combine the given numbers with + - * / and parentheses to reach the target. "
    "Each number may be used at most once. Give only the expression inside <answer></answer> tags, "
    "for example <answer>(1 + 2) * 3</answer>."
)

# (count of numbers, small range, count of large numbers, target range, numbers combined)
_LEVELS: dict[str, dict[str, Any]] = {
    "easy": {"count": 3, "small": (1, 10), "large": (0, 0), "target": (2, 100), "use": (2, 3)},
    "medium": {"count": 4, "small": (1, 25), "large": (0, 0), "target": (10, 250), "use": (3, 4)},
    "hard": {"count": 6, "small": (1, 10), "large": (1, 2), "target": (100, 999), "use": (4, 6)},
}
_LARGE = (25, 50, 75, 100)
_MAX_TRIES = 200
_MAX_NUMBERS = 6
# Bounds the solver's work (about a second) when a data set's task has no solution.
_MAX_SEARCH_STATES = 200_000
_ALLOWED_OPS: dict[type, str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_OTHER_OPS: dict[type, str] = {ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%", ast.BitXor: "^"}
# Expression-like runs of text: digits, operators, parentheses (no newlines). No backtracking
# tail, so scanning stays linear; the trailing operators and spaces are trimmed afterwards.
_EXPRESSION = re.compile(r"[0-9(][0-9+\-*/×÷(). \t]*")
_OPERATOR = re.compile(r"[+\-*/×÷]")
# Only the last few expression-like runs are checked (each check parses one candidate).
_MAX_CANDIDATES = 20


def _combine(rng: np.random.Generator, a: tuple[int, str], b: tuple[int, str]) -> tuple[int, str]:
    """One random operation on two (value, expression) pairs that keeps values positive ints."""
    (x, ex), (y, ey) = (a, b) if a[0] >= b[0] else (b, a)
    options = ["+"]
    if x > y:
        options.append("-")
    if x > 1 and y > 1 and x * y <= 10_000:
        options.append("*")
    if y > 1 and x % y == 0:
        options.append("/")
    op = options[int(rng.integers(len(options)))]
    value = {"+": x + y, "-": x - y, "*": x * y, "/": x // y}[op]
    return value, f"{_wrap(ex)} {op} {_wrap(ey)}"


def _wrap(expression: str) -> str:
    """Parenthesise a compound sub-expression (a single number stays bare)."""
    return f"({expression})" if " " in expression else expression


def generate_task(rng: np.random.Generator, difficulty: str = "easy") -> tuple[list[int], int, str]:
    """A random solvable task: ``(numbers, target, one solution expression)``.

    Example:
        >>> numbers, target, solution = generate_task(np.random.default_rng(0), "easy")
        >>> from gym_tinker.tools.calculator import evaluate
        >>> evaluate(solution) == target
        True
    """
    level = _LEVELS[check_difficulty(difficulty)]
    n_large = int(rng.integers(level["large"][0], level["large"][1] + 1))
    numbers = [int(v) for v in rng.choice(_LARGE, size=n_large, replace=False)] if n_large else []
    numbers += [
        int(rng.integers(level["small"][0], level["small"][1] + 1)) for _ in range(level["count"] - n_large)
    ]
    low, high = level["target"]
    for _ in range(_MAX_TRIES):
        use = int(rng.integers(level["use"][0], level["use"][1] + 1))
        chosen = [int(i) for i in rng.choice(len(numbers), size=use, replace=False)]
        pool = [(numbers[i], str(numbers[i])) for i in chosen]
        while len(pool) > 1:
            i, j = (int(k) for k in rng.choice(len(pool), size=2, replace=False))
            pool = [p for k, p in enumerate(pool) if k not in (i, j)] + [_combine(rng, pool[i], pool[j])]
        target, expression = pool[0]
        if low <= target <= high and target not in numbers:
            return numbers, target, expression
    # Rare: no random combination landed in range; the sum is always a valid solution.
    return numbers, sum(numbers), " + ".join(map(str, numbers))


def _numbers_in(node: ast.AST) -> list[int]:
    """The integers an expression uses, refusing anything but + - * / on whole numbers."""
    if isinstance(node, ast.Expression):
        return _numbers_in(node.body)
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _ALLOWED_OPS:
            symbol = _OTHER_OPS.get(type(node.op), type(node.op).__name__)
            raise CalculatorError(f"only + - * / are allowed, not {symbol}")
        return _numbers_in(node.left) + _numbers_in(node.right)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return [node.value]
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        raise CalculatorError(f"use the given whole numbers, not {node.value!r}")
    if isinstance(node, ast.UnaryOp):
        raise CalculatorError("signs in front of numbers are not allowed; use only + - * / between numbers")
    raise CalculatorError(f"only numbers, + - * / and parentheses are allowed (found {type(node).__name__})")


def check_expression(expression: str, numbers: list[int]) -> tuple[Fraction, list[int]]:
    """Validate a Countdown expression against the allowed numbers and compute its value.

    Raises:
        CalculatorError: If it is not ``+ - * /`` over whole numbers, uses a number not given
            (or more often than given), or divides by zero.

    Example:
        >>> check_expression("(3 + 5) * 2", [2, 3, 5, 7])
        (Fraction(16, 1), [3, 5, 2])
        >>> try:
        ...     check_expression("3 * 3", [2, 3, 5])
        ... except ValueError as err:
        ...     print(err)
        3 is used 2 times but given 1 time(s)
    """
    tree = parse_expression(expression)
    used = _numbers_in(tree)
    available = Counter(numbers)
    for number, count in Counter(used).items():
        if available[number] == 0:
            raise CalculatorError(f"{number} is not one of the numbers {sorted(numbers)}")
        if count > available[number]:
            raise CalculatorError(f"{number} is used {count} times but given {available[number]} time(s)")
    return Fraction(evaluate_tree(tree)), used


def _find_expression(content: str, numbers: list[int]) -> tuple[str | None, str | None]:
    """The last expression in ``content`` that checks out, else the last one and why it fails."""
    # Only the last few runs are kept (with operators, and any), never a list of every run.
    last_runs: deque[str] = deque(maxlen=_MAX_CANDIDATES)
    last_with_ops: deque[str] = deque(maxlen=_MAX_CANDIDATES)
    for match in _EXPRESSION.finditer(content):
        run = match.group().rstrip("+-*/×÷(. \t")
        if run and run[-1] in "0123456789)":
            last_runs.append(run)
            if _OPERATOR.search(run):
                last_with_ops.append(run)
    last_error = None
    for candidate in reversed(last_with_ops or last_runs):
        try:
            check_expression(candidate, numbers)
            return candidate, None
        except CalculatorError as err:
            last_error = last_error or f"{candidate!r}: {err}"
    return None, last_error


def solve(numbers: list[int], target: int) -> str | None:
    """An expression reaching ``target`` from ``numbers`` (positive whole intermediates), or ``None``.

    Example:
        >>> solve([2, 3, 5, 7], 16)
        '(2 * 7) + (5 - 3)'
    """
    seen: set[tuple[int, ...]] = set()

    def search(pool: list[tuple[int, str]]) -> str | None:
        for value, expression in pool:
            if value == target:
                return expression
        key = tuple(sorted(v for v, _ in pool))
        if len(pool) < 2 or key in seen or len(seen) >= _MAX_SEARCH_STATES:
            return None
        seen.add(key)
        for i in range(len(pool)):
            for j in range(len(pool)):
                if i == j:
                    continue
                (x, ex), (y, ey) = pool[i], pool[j]
                rest = [p for k, p in enumerate(pool) if k not in (i, j)]
                results = []
                if i < j:
                    results += [(x + y, "+"), (x * y, "*")]
                if x > y:
                    results.append((x - y, "-"))
                if y > 1 and x % y == 0:
                    results.append((x // y, "/"))
                for value, op in results:
                    found = search([*rest, (value, f"{_wrap(ex)} {op} {_wrap(ey)}")])
                    if found is not None:
                        return found
        return None

    return search([(n, str(n)) for n in numbers])


class CountdownEnv(TextEnv):
    """Reach the target from the given numbers with + - * /; reward 1 for an exact, valid expression.

    See the module docstring for the tasks, the action format and the reward.

    Args:
        difficulty: ``"easy"``, ``"medium"`` or ``"hard"`` (generated tasks only).
        dataset: Fixed tasks: a JSONL path, a ``datasets.Dataset`` or a sequence of dicts with
            columns ``numbers`` (list of 1-6 positive ints) and ``target`` (int), optional
            ``task_id``.
        max_turns: Actions per episode (default 1).
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an action that are read; a longer one is cut, with a
            note in the observation (``None``: no cap; see :mod:`gym_tinker.limits`).
        lenient: Without answer tags or a box, use the last expression in the message.
        partial_credit: Weight ``c`` in ``[0, 1)`` of the closeness reward for a valid miss.

    Example:
        >>> env = CountdownEnv()
        >>> observation, info = env.reset(seed=0)
        >>> env.step(oracle(env))[1:3]
        (1.0, True)
    """

    description: ClassVar[str] = "Reach a target number from given numbers with + - * / (Countdown)."
    default_max_turns: ClassVar[int] = 1

    def __init__(
        self,
        difficulty: str = "easy",
        dataset: Any = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        *,
        lenient: bool = True,
        partial_credit: float = 0.0,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        self.difficulty = check_difficulty(difficulty)
        super().__init__(max_turns=max_turns, render_mode=render_mode, max_action_chars=max_action_chars)
        if (
            isinstance(partial_credit, bool)
            or not isinstance(partial_credit, (int, float))
            or not 0 <= partial_credit < 1
        ):
            raise ValueError(f"Expected `partial_credit` to be a number in [0, 1), got {partial_credit!r}")
        self.lenient = bool(lenient)
        self.partial_credit = float(partial_credit)
        self.dataset: TaskDataset | None = None
        if dataset is not None:
            self.dataset = TaskDataset(
                dataset, required=["numbers", "target"], optional=["task_id"], env_name="Countdown"
            )
            for index, row in enumerate(self.dataset.rows):
                _check_row(index, row)
        self.numbers: list[int] = []
        self.target = 0
        self.solution: str | None = None
        self.task_id = ""

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        if self.dataset is not None:
            index, row = self.dataset.pick(self.np_random, options)
            self.numbers, self.target = list(row["numbers"]), row["target"]
            self.solution = None  # found on demand by the oracle
            self.task_id = str(row.get("task_id") or f"Countdown-dataset-{index}")
        else:
            self.numbers, self.target, self.solution = generate_task(self.np_random, self.difficulty)
            self.np_random.shuffle(self.numbers)
            digest = hashlib.sha1(f"{self.numbers}:{self.target}".encode()).hexdigest()[:12]
            self.task_id = f"Countdown-{self.difficulty}-{digest}"
        listed = ", ".join(map(str, self.numbers))
        observation = (
            f"Numbers: {listed}\nTarget: {self.target}\n\n"
            f"Write an expression that equals {self.target} using the numbers {listed}, with + - * / and "
            "parentheses. Each number may be used at most once; you do not have to use them all. "
            "Put only the expression inside <answer></answer> tags, for example <answer>(1 + 2) * 3</answer>."
        )
        info = {
            "system_prompt": SYSTEM_PROMPT,
            "tools": [],
            "task_id": self.task_id,
            "difficulty": self.difficulty,
        }
        return observation, info

    def _step(self, action: str) -> StepResult:
        content = extract_answer(action, fallback_last_number=False)
        if content is None and self.lenient:
            content = action
        info: dict[str, Any] = {"correct": False, "expression": None, "value": None}
        expression, error = _find_expression(content, self.numbers) if content else (None, None)
        if expression is None:
            feedback = (
                f"Invalid expression {error}."
                if error
                else "No expression found. Put it inside <answer></answer> tags."
            )
            return feedback, 0.0, True, False, info
        value, _ = check_expression(expression, self.numbers)
        correct = value == self.target
        info.update(correct=correct, expression=expression, value=format_number(value))
        if correct:
            return f"Correct: {expression} = {self.target}.", 1.0, True, False, info
        closeness = max(0.0, 1.0 - abs(float(value) - self.target) / max(abs(self.target), 1))
        feedback = f"{expression} = {format_number(value)}, not {self.target}."
        return feedback, self.partial_credit * closeness, True, False, info


def _check_row(index: int, row: dict[str, Any]) -> None:
    numbers, target = row["numbers"], row["target"]
    if (
        not isinstance(numbers, (list, tuple))
        or not 1 <= len(numbers) <= _MAX_NUMBERS
        or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in numbers)
    ):
        raise ValueError(
            f"Countdown dataset row {index}: expected `numbers` to be a list of 1 to {_MAX_NUMBERS} positive ints, "
            f"got {numbers!r:.80}"
        )
    if not isinstance(target, int) or isinstance(target, bool):
        raise ValueError(f"Countdown dataset row {index}: expected `target` to be an int, got {target!r:.80}")


def oracle(env: Any) -> str:
    """The action of a perfect agent: a solution inside answer tags (searched for if unknown).

    Example:
        >>> env = CountdownEnv(dataset=[{"numbers": [2, 3, 5, 7], "target": 16}])
        >>> _ = env.reset(seed=0)
        >>> oracle(env)
        '<answer>(2 * 7) + (5 - 3)</answer>'
    """
    countdown = env.unwrapped
    if not isinstance(countdown, CountdownEnv):
        raise TypeError(f"oracle expects a CountdownEnv (possibly wrapped), got {type(countdown).__name__}")
    if countdown.solution is None:
        countdown.solution = solve(countdown.numbers, countdown.target)
    # An unsolvable dataset task has no perfect action; the sum of the numbers is a valid try.
    return f"<answer>{countdown.solution or ' + '.join(map(str, countdown.numbers))}</answer>"
