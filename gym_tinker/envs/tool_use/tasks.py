"""Question generators for ToolUse: each question needs 1-4 tool calls against a seeded knowledge base."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gym_tinker.messages import ToolCall
from gym_tinker.tasks import check_difficulty
from gym_tinker.tools.knowledge_base import KnowledgeBase, knowledge_base

__all__ = ["TEMPLATES", "ToolUseTask", "generate_task", "make_task_id"]


@dataclass(frozen=True)
class ToolUseTask:
    """One question, its answer, and the tool calls a perfect agent would make."""

    question: str
    """The question shown to the agent."""
    answer: str | float | int
    """The reference answer: a number (checked with a tolerance) or a name."""
    kb_seed: int
    """Seed of the knowledge base the question is about."""
    task_id: str
    """Deterministic id."""
    plan: tuple[ToolCall, ...] = ()
    """Tool calls that gather what the answer needs, in order (empty for dataset rows)."""


def make_task_id(difficulty: str, kind: str, kb_seed: int, question: str) -> str:
    """A stable id from the task's content.

    Example:
        >>> make_task_id("easy", "price", 3, "What?")
        'tooluse-easy-price-kb3-a4949e2c'
    """
    digest = hashlib.sha256(question.encode("utf-8")).hexdigest()[:8]
    return f"tooluse-{difficulty}-{kind}-kb{kb_seed}-{digest}"


Draft = tuple[str, Any, list[ToolCall]]
"""What a template returns: question, answer, plan."""


def _pick(rng: np.random.Generator, names: list[str], k: int) -> list[str]:
    return [names[int(i)] for i in rng.choice(len(names), size=k, replace=False)]


def _lookup(entity: str, attribute: str) -> ToolCall:
    return ToolCall("lookup", {"entity": entity, "attribute": attribute})


def _calc(expression: str) -> ToolCall:
    return ToolCall("calculator", {"expression": expression})


# --- easy: one lookup -------------------------------------------------------------------------


def _price(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    (p,) = _pick(rng, kb.names("product"), 1)
    return f"What is the price of the {p}, in USD?", kb.fact(p, "price"), [_lookup(p, "price")]


def _stock(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    (p,) = _pick(rng, kb.names("product"), 1)
    return f"How many units of the {p} are in stock?", kb.fact(p, "stock"), [_lookup(p, "stock")]


def _share_price(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    (c,) = _pick(rng, kb.names("company"), 1)
    return f"What is the share price of {c}, in USD?", kb.fact(c, "share_price"), [_lookup(c, "share_price")]


def _age(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    (p,) = _pick(rng, kb.names("person"), 1)
    return f"How old is {p}?", kb.fact(p, "age"), [_lookup(p, "age")]


def _distance(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    a, b = _pick(rng, kb.names("city"), 2)
    return (
        f"How far is {a} from {b}, in km?",
        kb.fact(a, f"distance to {b}"),
        [_lookup(a, f"distance to {b}")],
    )


# --- medium: two lookups and arithmetic -------------------------------------------------------


def _basket(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    p, q = _pick(rng, kb.names("product"), 2)
    m, n = (int(x) for x in rng.integers(2, 7, size=2))
    x, y = kb.fact(p, "price"), kb.fact(q, "price")
    question = f"What is the total cost, in USD, of {m} {p} units and {n} {q} units?"
    return (
        question,
        round(m * x + n * y, 2),
        [_lookup(p, "price"), _lookup(q, "price"), _calc(f"{m} * {x} + {n} * {y}")],
    )


def _inventory_value(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    (p,) = _pick(rng, kb.names("product"), 1)
    x, s = kb.fact(p, "price"), kb.fact(p, "stock")
    question = f"What is the total value, in USD, of all {p} units in stock (price times units in stock)?"
    return question, round(x * s, 2), [_lookup(p, "price"), _lookup(p, "stock"), _calc(f"{x} * {s}")]


def _age_gap(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    people = kb.names("person")
    a, b = _pick(rng, people, 2)
    x, y = kb.fact(a, "age"), kb.fact(b, "age")
    return (
        f"What is the age difference, in years, between {a} and {b}?",
        abs(x - y),
        [_lookup(a, "age"), _lookup(b, "age"), _calc(f"abs({x} - {y})")],
    )


def _portfolio(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    c, d = _pick(rng, kb.names("company"), 2)
    m, n = (int(x) for x in rng.integers(2, 20, size=2))
    x, y = kb.fact(c, "share_price"), kb.fact(d, "share_price")
    question = f"How much, in USD, do {m} shares of {c} and {n} shares of {d} cost together?"
    plan = [_lookup(c, "share_price"), _lookup(d, "share_price"), _calc(f"{m} * {x} + {n} * {y}")]
    return question, round(m * x + n * y, 2), plan


# --- hard: three or four calls ----------------------------------------------------------------


def _farther(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    x, y, z = _pick(rng, kb.names("city"), 3)
    dy, dz = kb.fact(x, f"distance to {y}"), kb.fact(x, f"distance to {z}")
    if dy < dz:
        y, z, dy, dz = z, y, dz, dy
    question = f"How many km farther from {x} is {y} than {z}?"
    plan = [_lookup(x, f"distance to {y}"), _lookup(x, f"distance to {z}"), _calc(f"{dy} - {dz}")]
    return question, dy - dz, plan


def _neighbours(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    people = kb.names("person")
    order = [people[int(i)] for i in rng.permutation(len(people))]
    a = order[0]
    # Someone living in another city; with 10 people over 8 cities one practically always exists.
    b = next((p for p in order[1:] if kb.fact(p, "city") != kb.fact(a, "city")), order[1])
    ca, cb = kb.fact(a, "city"), kb.fact(b, "city")
    answer = 0 if ca == cb else kb.fact(ca, f"distance to {cb}")
    plan = [_lookup(a, "city"), _lookup(b, "city")] + ([_lookup(ca, f"distance to {cb}")] if ca != cb else [])
    return f"How far apart, in km, are the home cities of {a} and {b}?", answer, plan


def _average_salary(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    a, b, c = _pick(rng, kb.names("person"), 3)
    salaries = [kb.fact(p, "salary") for p in (a, b, c)]
    question = f"What is the average yearly salary, in USD, of {a}, {b} and {c}? Round to 2 decimal places."
    code = f"salaries = {salaries}\nprint(round(sum(salaries) / len(salaries), 2))"
    plan = [_lookup(p, "salary") for p in (a, b, c)] + [ToolCall("python", {"code": code})]
    return question, round(sum(salaries) / 3, 2), plan


def _shares_affordable(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    (p,) = _pick(rng, kb.names("product"), 1)
    (c,) = _pick(rng, kb.names("company"), 1)
    x, s = kb.fact(p, "price"), kb.fact(c, "share_price")
    n = int(rng.integers(2, 10)) * max(1, int(np.ceil(s / x)))  # enough money for at least one share
    question = f"If you sold {n} {p} units at their listed price, how many whole shares of {c} could you buy with the money?"
    plan = [_lookup(p, "price"), _lookup(c, "share_price"), _calc(f"floor({n} * {x} / {s})")]
    return question, int((n * round(x * 100)) // round(s * 100)), plan


def _pricier_basket(kb: KnowledgeBase, rng: np.random.Generator) -> Draft:
    products = kb.names("product")
    while True:
        p, q = _pick(rng, products, 2)
        m, n = (int(v) for v in rng.integers(2, 9, size=2))
        x, y = kb.fact(p, "price"), kb.fact(q, "price")
        if abs(m * x - n * y) > 1:  # no near-ties
            break
    question = f"Which costs more in total: {m} {p} units or {n} {q} units? Answer with the product name."
    plan = [_lookup(p, "price"), _lookup(q, "price"), _calc(f"{m} * {x} - {n} * {y}")]
    return question, p if m * x > n * y else q, plan


Template = Callable[[KnowledgeBase, np.random.Generator], Draft]

TEMPLATES: dict[str, dict[str, Template]] = {
    "easy": {
        "price": _price,
        "stock": _stock,
        "share_price": _share_price,
        "age": _age,
        "distance": _distance,
    },
    "medium": {
        "basket": _basket,
        "inventory": _inventory_value,
        "age_gap": _age_gap,
        "portfolio": _portfolio,
    },
    "hard": {
        "farther": _farther,
        "neighbours": _neighbours,
        "average_salary": _average_salary,
        "shares_affordable": _shares_affordable,
        "pricier_basket": _pricier_basket,
    },
}
"""Question templates per difficulty (easy: 1 call; medium: 3; hard: 3-4)."""


def generate_task(rng: np.random.Generator, difficulty: str) -> ToolUseTask:
    """Draw a knowledge-base seed and a question of ``difficulty`` from ``rng``.

    Example:
        >>> task = generate_task(np.random.default_rng(0), "medium")
        >>> len(task.plan), task == generate_task(np.random.default_rng(0), "medium")
        (3, True)
    """
    templates = TEMPLATES[check_difficulty(difficulty)]
    kind = list(templates)[int(rng.integers(len(templates)))]
    kb_seed = int(rng.integers(2**31))
    question, answer, plan = templates[kind](knowledge_base(kb_seed), rng)
    return ToolUseTask(
        question, answer, kb_seed, make_task_id(difficulty, kind, kb_seed, question), tuple(plan)
    )
