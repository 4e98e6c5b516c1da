"""A fictional knowledge base generated from a seed, with ``search`` and ``lookup`` tools.

Products (price, stock), companies (share price, employees), cities (population, pairwise
distances) and people (age, salary, home city), all with names made of random syllables, so no
fact can be memorised: a different seed is a different world.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gym_tinker.messages import function_schema
from gym_tinker.tools.base import Tool

__all__ = ["LOOKUP_SCHEMA", "SEARCH_SCHEMA", "Entity", "KnowledgeBase", "knowledge_base"]

_ONSETS = (
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "gr",
    "kr",
    "tr",
    "th",
    "sh",
    "qu",
)
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ei", "ou")
_CODAS = ("", "", "", "n", "r", "l", "k", "s", "x", "m")
_PRODUCT_KINDS = (
    "lamp",
    "kettle",
    "drone",
    "backpack",
    "chair",
    "headset",
    "blender",
    "tent",
    "watch",
    "scooter",
)
_COMPANY_SUFFIXES = ("Corp", "Industries", "Labs", "Systems", "Holdings", "Dynamics")
_UNITS = {"price": "USD", "share_price": "USD", "salary": "USD per year", "age": "years", "distance": "km"}
_ATTRIBUTE_ALIASES = {
    "cost": "price",
    "stock count": "stock",
    "units in stock": "stock",
    "inventory": "stock",
    "stock price": "share_price",
    "share price": "share_price",
    "shares": "share_price",
    "staff": "employees",
    "headcount": "employees",
    "income": "salary",
    "lives in": "city",
    "home city": "city",
    "hometown": "city",
}
_WORD = re.compile(r"[a-z0-9]+")

SEARCH_SCHEMA = function_schema(
    "search",
    "Search the knowledge base (products, companies, cities, people) by keywords. Returns the best "
    "matching entries with all their facts.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords, e.g. 'Zorvak lamp' or 'companies'."}
        },
        "required": ["query"],
    },
)
"""OpenAI tool schema of the ``search`` tool."""

LOOKUP_SCHEMA = function_schema(
    "lookup",
    "Look up one fact: an attribute of a named entity. Attributes: products have price and stock; "
    "companies have share_price and employees; people have age, salary and city; cities have "
    "population and 'distance to <city>' (km).",
    {
        "type": "object",
        "properties": {
            "entity": {"type": "string", "description": "Exact name, e.g. 'Zorvak lamp'."},
            "attribute": {"type": "string", "description": "e.g. 'price' or 'distance to Doravel'."},
        },
        "required": ["entity", "attribute"],
    },
)
"""OpenAI tool schema of the ``lookup`` tool."""


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower().replace("_", " ")))


def _format_value(attribute: str, value: Any) -> str:
    unit = _UNITS.get(attribute.split(" ")[0], "")
    text = f"{value:.2f}" if isinstance(value, float) else str(value)
    return f"{text} {unit}".rstrip()


@dataclass(frozen=True)
class Entity:
    """One thing in the knowledge base."""

    name: str
    """Unique name, e.g. ``"Zorvak lamp"``."""
    kind: str
    """``"product"``, ``"company"``, ``"city"`` or ``"person"``."""
    facts: Mapping[str, Any]
    """Attribute name to value, e.g. ``{"price": 42.5, "stock": 17}``."""

    def describe(self) -> str:
        """All facts on one line."""
        facts = "; ".join(
            f"{key.replace('_', ' ')}: {_format_value(key, value)}" for key, value in self.facts.items()
        )
        return f"{self.name} ({self.kind}) - {facts}"


class KnowledgeBase:
    """A seeded fictional world. Same seed, same facts; the names change with the seed.

    Args:
        seed: Any non-negative int.

    Example:
        >>> kb = KnowledgeBase(7)
        >>> product = kb.names("product")[0]
        >>> kb.lookup(product, "price") == kb.lookup(product.upper(), "cost")
        True
        >>> KnowledgeBase(7).names() == kb.names() and KnowledgeBase(8).names() != kb.names()
        True
    """

    def __init__(self, seed: int):
        if not isinstance(seed, int | np.integer) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"KnowledgeBase seed must be a non-negative int, got {seed!r}")
        self.seed = int(seed)
        rng = np.random.default_rng([self.seed, 0x6B62])
        self._used: set[str] = set()
        self.entities: dict[str, Entity] = {}
        self._generate(rng)
        self._by_norm = {_norm(name): name for name in self.entities}
        self._index = {
            e.name: (set(_norm(e.name).split()), set(_norm(" ".join(e.facts)).split()))
            for e in self.entities.values()
        }

    # --- generation -----------------------------------------------------------------------

    def _word(self, rng: np.random.Generator, syllables: int) -> str:
        while True:
            # One draw per word: integer indexing is much faster than rng.choice on tuples.
            picks = rng.integers(0, 1 << 30, size=2 * syllables + 1)
            parts = [
                _ONSETS[picks[2 * i] % len(_ONSETS)] + _VOWELS[picks[2 * i + 1] % len(_VOWELS)]
                for i in range(syllables)
            ]
            word = ("".join(parts) + _CODAS[picks[-1] % len(_CODAS)]).capitalize()
            if word not in self._used:
                self._used.add(word)
                return word

    def _add(self, name: str, kind: str, facts: dict[str, Any]) -> None:
        self.entities[name] = Entity(name, kind, facts)

    def _generate(self, rng: np.random.Generator) -> None:
        for index in rng.permutation(len(_PRODUCT_KINDS)):
            kind = _PRODUCT_KINDS[int(index)]
            price = round(float(rng.integers(200, 50_000)) / 100, 2)
            self._add(
                f"{self._word(rng, 2)} {kind}",
                "product",
                {"price": price, "stock": int(rng.integers(0, 500))},
            )
        for _ in range(8):
            name = f"{self._word(rng, 2)} {_COMPANY_SUFFIXES[int(rng.integers(len(_COMPANY_SUFFIXES)))]}"
            share = round(float(rng.integers(500, 90_000)) / 100, 2)
            self._add(name, "company", {"share_price": share, "employees": int(rng.integers(20, 20_000))})
        cities = [self._word(rng, 3) for _ in range(8)]
        # Planar coordinates keep the distances consistent (triangle inequality holds).
        coords = rng.uniform(0, 1500, size=(len(cities), 2))
        for i, city in enumerate(cities):
            facts: dict[str, Any] = {"population": int(rng.integers(5_000, 3_000_000))}
            for j, other in enumerate(cities):
                if i != j:
                    facts[f"distance to {other}"] = max(1, round(float(np.hypot(*(coords[i] - coords[j])))))
            self._add(city, "city", facts)
        for _ in range(10):
            name = f"{self._word(rng, 2)} {self._word(rng, 2)}"
            facts = {
                "age": int(rng.integers(19, 80)),
                "salary": int(rng.integers(24, 240)) * 1000,
                "city": cities[int(rng.integers(len(cities)))],
            }
            self._add(name, "person", facts)

    # --- queries --------------------------------------------------------------------------

    def names(self, kind: str | None = None) -> list[str]:
        """Entity names (of one ``kind`` if given), in generation order."""
        return [e.name for e in self.entities.values() if kind is None or e.kind == kind]

    def fact(self, entity: str, attribute: str) -> Any:
        """The raw value of a fact, for task generation (exact names; ``KeyError`` otherwise)."""
        return self.entities[entity].facts[attribute]

    def resolve(self, entity: str) -> Entity | None:
        """The entity an agent meant: exact name, case/space-insensitive, or a unique first word."""
        key = _norm(entity)
        if key in self._by_norm:
            return self.entities[self._by_norm[key]]
        first_word = [name for norm, name in self._by_norm.items() if key and norm.split(" ")[0] == key]
        return self.entities[first_word[0]] if len(first_word) == 1 else None

    def lookup(self, entity: str, attribute: str) -> str:
        """One fact as text, or an ``"Error: ..."`` text listing close names / valid attributes.

        Example:
            >>> kb = KnowledgeBase(0)
            >>> city, other = kb.names("city")[:2]
            >>> kb.lookup(city, f"distance to {other}") == f"{city} distance to {other}: {kb.fact(city, 'distance to ' + other)} km"
            True
            >>> kb.lookup("Nowhere", "price").startswith("Error: no entity named 'Nowhere'")
            True
        """
        found = self.resolve(entity)
        if found is None:
            close = difflib.get_close_matches(entity, self.names(), n=3, cutoff=0.5)
            hint = f" Close names: {', '.join(close)}." if close else " Use search to find names."
            return f"Error: no entity named {entity!r}.{hint}"
        wanted = _norm(attribute)
        wanted = _ATTRIBUTE_ALIASES.get(wanted, wanted)
        by_norm = {_norm(key): key for key in found.facts}
        key = by_norm.get(_norm(wanted))
        if key is None and wanted.startswith("distance"):
            target = self.resolve(
                wanted.removeprefix("distance").strip().removeprefix("to").removeprefix("from").strip()
            )
            key = (
                f"distance to {target.name}"
                if target is not None and f"distance to {target.name}" in found.facts
                else None
            )
        if key is None:
            attributes = [k for k in found.facts if not k.startswith("distance to ")]
            if found.kind == "city":
                attributes.append("distance to <city>")
            return f"Error: {found.name} has no attribute {attribute!r}. Available: {', '.join(attributes)}."
        return f"{found.name} {key.replace('_', ' ')}: {_format_value(key, found.facts[key])}"

    def search(self, query: str, limit: int = 3) -> str:
        """The best-matching entries as text (keyword scoring; ties broken by name).

        Example:
            >>> kb = KnowledgeBase(0)
            >>> name = kb.names("product")[0]
            >>> kb.search(name).splitlines()[0].startswith(name)
            True
            >>> kb.search("zzzz")
            "No results for 'zzzz'. Search for a name, or for: product, company, city, person."
        """
        words = set(_WORD.findall(query.lower()))
        # Near-misses of name words (typos) count for a little less than exact matches.
        vocabulary = {w for name_words, _ in self._index.values() for w in name_words}
        fuzzy = {
            w: set(difflib.get_close_matches(w, vocabulary, n=3, cutoff=0.8))
            for w in words
            if len(w) > 3 and w not in vocabulary
        }
        scored = []
        for entity in self.entities.values():
            name_words, fact_words = self._index[entity.name]
            score = 3.0 * len(words & name_words)
            score += 2.0 * sum(1 for matches in fuzzy.values() if matches & name_words)
            score += 1.0 * (
                entity.kind in words
                or f"{entity.kind}s" in words
                or (entity.kind == "company" and "companies" in words)
            )
            score += 0.5 * len(words & fact_words)
            if score > 0:
                scored.append((-score, entity.name))
        if not scored:
            return f"No results for {query!r}. Search for a name, or for: product, company, city, person."
        return "\n".join(self.entities[name].describe() for _, name in sorted(scored)[:limit])

    # --- tools ----------------------------------------------------------------------------

    def search_tool(self, arguments: dict[str, Any]) -> str:
        """The ``search`` tool function (arguments validated by the registry)."""
        return self.search(str(arguments["query"]))

    def lookup_tool(self, arguments: dict[str, Any]) -> str:
        """The ``lookup`` tool function (arguments validated by the registry)."""
        return self.lookup(str(arguments["entity"]), str(arguments["attribute"]))

    def tools(self) -> list[Tool]:
        """The ``search`` and ``lookup`` tools bound to this knowledge base."""
        return [
            Tool.from_schema(SEARCH_SCHEMA, self.search_tool),
            Tool.from_schema(LOOKUP_SCHEMA, self.lookup_tool),
        ]


@functools.lru_cache(maxsize=64)
def knowledge_base(seed: int) -> KnowledgeBase:
    """A cached :class:`KnowledgeBase` for ``seed`` (they are treated as immutable).

    Example:
        >>> knowledge_base(3) is knowledge_base(3)
        True
    """
    return KnowledgeBase(seed)
