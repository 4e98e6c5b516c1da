"""Math: single-turn arithmetic and word problems with lenient answer checking (``tinker/Math-v0``).

Tasks
    Generated from the seed, by ``difficulty``:

    ==========  ======================================================================
    difficulty  problems
    ==========  ======================================================================
    easy        one operation on small numbers: ``23 + 45``, ``61 - 17``, ``7 * 8``
    medium      multi-step expressions (``(12 + 7) * 3``) and one- or two-step word
                problems (shopping, sharing, distance)
    hard        larger numbers, percentages and fractions, multi-step word problems
                (discounts, earnings, average speed, ratios)
    ==========  ======================================================================

    Every answer is a whole number or a short terminating decimal. With ``dataset``, tasks come
    from its rows instead (columns ``question``, ``answer``, optional ``task_id``).

Action
    One message. The answer is read leniently (see :func:`gym_tinker.parsing.extract_answer`):
    the last ``<answer>...</answer>``, else the last ``\\boxed{...}``, else the last number in
    the message (turn that off with ``lenient=False``). Equivalent forms count: ``6``, ``6.0``,
    ``\\boxed{6}`` and ``3/0.5`` all answer 6 (:func:`gym_tinker.answers.answers_match`).

Reward
    1.0 for a right answer, 0.0 for a wrong, empty or missing one. With ``format_bonus=b``
    (``0 <= b < 0.5``; default 0) the reward becomes ``(1 - b) * correct + b * tags`` where
    ``tags`` is whether the answer sat in non-empty ``<answer>`` tags: a right answer (at least
    ``1 - b``) always beats a wrong one (at most ``b``). The episode ends after the one action.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from gym_tinker.answers import answers_match
from gym_tinker.core import StepResult, TextEnv
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from gym_tinker.parsing import extract_answer, has_answer_tags
from gym_tinker.tasks import TaskDataset, check_difficulty
from gym_tinker.tools.calculator import format_number

__all__ = ["SYSTEM_PROMPT", "MathEnv", "generate_problem", "oracle"]

SYSTEM_PROMPT = (
    "You solve math problems. Think step by step if you like, then give the final answer as a "
    "number inside <answer></answer> tags, for example <answer>42</answer>."
)

_NAMES = ("Ava", "Ben", "Chloe", "Diego", "Emma", "Farid", "Grace", "Hiro", "Isla", "Jonas", "Kemi", "Liam")
_ITEMS = ("apples", "pencils", "stickers", "marbles", "cookies", "books", "cards", "shells")
_GOODS = ("notebook", "lamp", "backpack", "jacket", "kettle", "helmet")

Problem = tuple[str, Fraction]
"""A question and its exact answer."""


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform integer in ``[low, high]`` (inclusive)."""
    return int(rng.integers(low, high + 1))


def _pick(rng: np.random.Generator, options: tuple[Any, ...]) -> Any:
    return options[int(rng.integers(len(options)))]


# --- easy -------------------------------------------------------------------------------------


def _easy(rng: np.random.Generator) -> Problem:
    op = _pick(rng, ("+", "-", "*"))
    if op == "*":
        a, b = _int(rng, 2, 12), _int(rng, 2, 12)
        return f"What is {a} * {b}?", Fraction(a * b)
    a, b = _int(rng, 1, 50), _int(rng, 1, 50)
    if op == "-":
        a, b = max(a, b), min(a, b)  # no negative answers at this level
        return f"What is {a} - {b}?", Fraction(a - b)
    return f"What is {a} + {b}?", Fraction(a + b)


# --- medium -----------------------------------------------------------------------------------


def _medium_expression(rng: np.random.Generator) -> Problem:
    a, b, c = _int(rng, 2, 20), _int(rng, 2, 20), _int(rng, 2, 12)
    form = _int(rng, 0, 4)
    if form == 0:
        return f"What is {a} + {b} * {c}?", Fraction(a + b * c)
    if form == 1:
        return f"What is ({a} + {b}) * {c}?", Fraction((a + b) * c)
    if form == 2:
        return f"What is {a} * {c} - {b}?", Fraction(a * c - b)
    if form == 3:
        return f"What is {a * c} / {c} + {b}?", Fraction(a + b)
    hi, lo = max(a, b) + 1, min(a, b)
    return f"What is ({hi} - {lo}) * {c}?", Fraction((hi - lo) * c)


def _medium_word(rng: np.random.Generator) -> Problem:
    name, item = _pick(rng, _NAMES), _pick(rng, _ITEMS)
    form = _int(rng, 0, 3)
    if form == 0:
        a, packs, per = _int(rng, 3, 30), _int(rng, 2, 6), _int(rng, 3, 12)
        question = (
            f"{name} has {a} {item}. {name} buys {packs} packs with {per} {item} in each pack. "
            f"How many {item} does {name} have now?"
        )
        return question, Fraction(a + packs * per)
    if form == 1:
        count, price = _int(rng, 2, 9), _int(rng, 2, 9)
        bill = _pick(rng, tuple(b for b in (20, 50, 100) if b > count * price))
        question = (
            f"{name} buys {count} {item} at ${price} each and pays with a ${bill} bill. "
            f"How much change, in dollars, does {name} get?"
        )
        return question, Fraction(bill - count * price)
    if form == 2:
        friends, each = _int(rng, 2, 9), _int(rng, 2, 15)
        question = f"{name} shares {friends * each} {item} equally among {friends} friends. How many {item} does each friend get?"
        return question, Fraction(each)
    speed, hours = _int(rng, 4, 18) * 5, _int(rng, 2, 6)
    return f"A train travels at {speed} km/h for {hours} hours. How many km does it travel?", Fraction(
        speed * hours
    )


def _medium(rng: np.random.Generator) -> Problem:
    return _medium_expression(rng) if rng.random() < 0.5 else _medium_word(rng)


# --- hard -------------------------------------------------------------------------------------


def _hard_numbers(rng: np.random.Generator) -> Problem:
    form = _int(rng, 0, 3)
    if form == 0:
        a, b = _int(rng, 101, 999), _int(rng, 11, 99)
        return f"What is {a} * {b}?", Fraction(a * b)
    if form == 1:
        a, b, c = _int(rng, 1000, 9999), _int(rng, 1000, 9999), _int(rng, 100, 999)
        return f"What is {a} + {b} - {c}?", Fraction(a + b - c)
    if form == 2:
        percent = _pick(rng, (5, 10, 12.5, 15, 20, 25, 30, 40, 45, 60, 75, 80))
        base = _int(rng, 2, 60) * 8
        return f"What is {percent}% of {base}?", Fraction(str(percent)) * base / 100
    num_a, den_a = _int(rng, 1, 3), _pick(rng, (2, 4, 5))
    num_b, den_b = _int(rng, 1, 7), _pick(rng, (4, 8, 10))
    question = f"What is {num_a}/{den_a} + {num_b}/{den_b}? Give the answer as a decimal number."
    return question, Fraction(num_a, den_a) + Fraction(num_b, den_b)


def _hard_word(rng: np.random.Generator) -> Problem:
    name = _pick(rng, _NAMES)
    form = _int(rng, 0, 3)
    if form == 0:
        good, price, off, count = (
            _pick(rng, _GOODS),
            _int(rng, 2, 15) * 20,
            _int(rng, 1, 8) * 5,
            _int(rng, 2, 5),
        )
        question = (
            f"A {good} costs ${price}. During a sale every {good} is {off}% off. "
            f"{name} buys {count} of them at the sale price. How many dollars does {name} pay in total?"
        )
        return question, Fraction(price * (100 - off) * count, 100)
    if form == 1:
        wage, hours, days, spent = _int(rng, 12, 40), _int(rng, 3, 8), _int(rng, 3, 6), _int(rng, 1, 9) * 10
        question = (
            f"{name} earns ${wage} per hour and works {hours} hours a day for {days} days, then spends "
            f"{spent}% of the earnings. How many dollars does {name} have left?"
        )
        return question, Fraction(wage * hours * days * (100 - spent), 100)
    if form == 2:
        t1, t2, avg = _int(rng, 1, 4), _int(rng, 1, 4), _int(rng, 6, 20) * 5
        total = avg * (t1 + t2)
        d1 = _int(rng, total // 4, 3 * total // 4)
        question = (
            f"A car travels {d1} km in {t1} hours, then {total - d1} km in {t2} hours. "
            "What is its average speed for the whole trip, in km/h?"
        )
        return question, Fraction(avg)
    r1, r2, k = _int(rng, 1, 7), _int(rng, 1, 7), _int(rng, 3, 25)
    first, second = (_ITEMS[int(i)] for i in rng.choice(len(_ITEMS), size=2, replace=False))
    question = (
        f"A box holds {first} and {second} in the ratio {r1}:{r2}. There are {(r1 + r2) * k} items in "
        f"the box. How many {first} are there?"
    )
    return question, Fraction(r1 * k)


def _hard(rng: np.random.Generator) -> Problem:
    return _hard_numbers(rng) if rng.random() < 0.5 else _hard_word(rng)


_GENERATORS: dict[str, Callable[[np.random.Generator], Problem]] = {
    "easy": _easy,
    "medium": _medium,
    "hard": _hard,
}


def generate_problem(rng: np.random.Generator, difficulty: str = "easy") -> tuple[str, str]:
    """A random ``(question, answer)`` pair at ``difficulty``; same generator state, same pair.

    Example:
        >>> generate_problem(np.random.default_rng(0), "easy")
        ('What is 9 * 7?', '63')
    """
    question, answer = _GENERATORS[check_difficulty(difficulty)](rng)
    return question, format_number(answer)


def _prompt(question: str) -> str:
    return (
        f"{question}\n\nPut only the final answer, a number, inside <answer></answer> tags, "
        "for example <answer>42</answer>."
    )


class MathEnv(TextEnv):
    """Solve one arithmetic or word problem; reward 1 for a right answer in any equivalent form.

    See the module docstring for the tasks, the action format and the reward.

    Args:
        difficulty: ``"easy"``, ``"medium"`` or ``"hard"`` (generated tasks only).
        dataset: Fixed tasks instead of generated ones: a JSONL path, a ``datasets.Dataset`` or a
            sequence of dicts with columns ``question`` (str) and ``answer`` (number or str), and
            optional ``task_id`` (str).
        max_turns: Actions per episode (default 1: one answer).
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an action that are read; a longer one is cut, with a
            note in the observation (``None``: no cap; see :mod:`gym_tinker.limits`).
        lenient: Read the last number of the message when there are no answer tags or box.
        format_bonus: Shaping weight ``b`` in ``[0, 0.5)`` for using ``<answer>`` tags (see the
            module docstring); 0 turns it off.
        rel_tol: Relative tolerance when comparing numbers.

    Example:
        >>> env = MathEnv()
        >>> observation, info = env.reset(seed=0)
        >>> observation.splitlines()[0]
        'What is 9 * 7?'
        >>> env.step("9 * 7 = <answer>63</answer>")[1:3]
        (1.0, True)
    """

    description: ClassVar[str] = "Single-turn arithmetic and word problems; reward 1 for a right answer."
    default_max_turns: ClassVar[int] = 1

    def __init__(
        self,
        difficulty: str = "easy",
        dataset: Any = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
        *,
        lenient: bool = True,
        format_bonus: float = 0.0,
        rel_tol: float = 1e-6,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        self.difficulty = check_difficulty(difficulty)
        super().__init__(max_turns=max_turns, render_mode=render_mode, max_action_chars=max_action_chars)
        if (
            isinstance(format_bonus, bool)
            or not isinstance(format_bonus, (int, float))
            or not 0 <= format_bonus < 0.5
        ):
            raise ValueError(f"Expected `format_bonus` to be a number in [0, 0.5), got {format_bonus!r}")
        if isinstance(rel_tol, bool) or not isinstance(rel_tol, (int, float)) or not 0 <= rel_tol < 1:
            raise ValueError(f"Expected `rel_tol` to be a number in [0, 1), got {rel_tol!r}")
        self.lenient = bool(lenient)
        self.format_bonus = float(format_bonus)
        self.rel_tol = float(rel_tol)
        self.dataset: TaskDataset | None = None
        if dataset is not None:
            self.dataset = TaskDataset(
                dataset, required=["question", "answer"], optional=["task_id"], env_name="Math"
            )
            for index, row in enumerate(self.dataset.rows):
                _check_row(index, row)
        self.question = ""
        self.answer = ""
        self.task_id = ""

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        if self.dataset is not None:
            index, row = self.dataset.pick(self.np_random, options)
            self.question, self.answer = row["question"], str(row["answer"])
            self.task_id = str(row.get("task_id") or f"Math-dataset-{index}")
        else:
            self.question, self.answer = generate_problem(self.np_random, self.difficulty)
            # A digest of the question only: the id must not reveal the answer.
            self.task_id = f"Math-{self.difficulty}-{hashlib.sha1(self.question.encode()).hexdigest()[:12]}"
        info = {
            "system_prompt": SYSTEM_PROMPT,
            "tools": [],
            "task_id": self.task_id,
            "difficulty": self.difficulty,
        }
        return _prompt(self.question), info

    def _step(self, action: str) -> StepResult:
        answer = extract_answer(action, fallback_last_number=self.lenient)
        correct = answers_match(answer, self.answer, rel_tol=self.rel_tol)
        tags = has_answer_tags(action)
        reward = (1.0 - self.format_bonus) * correct + self.format_bonus * tags
        if answer is None:
            feedback = "No answer found. Put the final answer inside <answer></answer> tags."
        else:
            feedback = "Correct." if correct else f"Incorrect: {answer!r} is not the answer."
        info = {"correct": correct, "extracted_answer": answer, "answer_tags": tags}
        return feedback, float(reward), True, False, info


def _check_row(index: int, row: dict[str, Any]) -> None:
    question, answer = row["question"], row["answer"]
    if not isinstance(question, str) or not question.strip():
        raise ValueError(
            f"Math dataset row {index}: expected `question` to be a non-empty str, got {question!r:.80}"
        )
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)) or not str(answer).strip():
        raise ValueError(
            f"Math dataset row {index}: expected `answer` to be a number or a non-empty str, got {answer!r:.80}"
        )
    task_id = row.get("task_id")
    if task_id is not None and not isinstance(task_id, (str, int)):
        raise ValueError(f"Math dataset row {index}: expected `task_id` to be a str, got {task_id!r:.80}")


def oracle(env: Any) -> str:
    """The action of a perfect agent: the hidden answer in answer tags.

    Example:
        >>> env = MathEnv(difficulty="hard")
        >>> _ = env.reset(seed=3)
        >>> env.step(oracle(env))[1]
        1.0
    """
    math_env = env.unwrapped
    if not isinstance(math_env, MathEnv):
        raise TypeError(f"oracle expects a MathEnv (possibly wrapped), got {type(math_env).__name__}")
    return f"<answer>{math_env.answer}</answer>"
