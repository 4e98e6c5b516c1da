"""Negotiation rules, apart from the env: pools, private values, splits, and reading a reply.

A *split* is a tuple of counts, one per item kind, saying what the proposer takes; the other
player gets the rest of the pool.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from multiagent.parsing import TagMatch, clip_message, keyword_pattern, last_keyword, last_match, tag_pattern

__all__ = [
    "ITEMS",
    "Pool",
    "Reply",
    "all_splits",
    "draw_pool",
    "format_split",
    "parse_reply",
    "split_value",
]

ITEMS: tuple[str, ...] = ("books", "hats", "balls")
_SINGULAR = {"book": "books", "hat": "hats", "ball": "balls"}
_MAX_DIGITS = 9

_OFFER_TAG = tag_pattern("offer")
_MESSAGE_TAG = tag_pattern("message")
_MOVE_TAG = tag_pattern("move")
# The lookahead only makes the scan cheaper (most positions fail at once); same matches.
_PROPOSE = re.compile(r"(?=[pPoO])(?:propose|proposal|offer)\s*[:=]", re.IGNORECASE | re.ASCII)
_COUNT = re.compile(r"\b(books?|hats?|balls?)\b\s*[:=]\s*\"?([0-9]{1,9})(?![0-9])", re.IGNORECASE | re.ASCII)
_COUNT_BEFORE = re.compile(r"(?<![0-9])([0-9]{1,9})\s+(books?|hats?|balls?)\b", re.IGNORECASE | re.ASCII)
_JSON = re.compile(r"\{[^{}]{0,400}\}")
_DECISIONS = {
    "accept": "accept",
    "reject": "reject",
    "decline": "reject",
    "walk away": "walk",
    "walk": "walk",
}
_DECISION = keyword_pattern(_DECISIONS)


@dataclass(frozen=True)
class Pool:
    """The items on the table and each player's private value per item.

    Example:
        >>> pool = Pool(counts=(3, 2, 1), values=((1, 2, 3), (2, 0, 4)))
        >>> pool.worth(0), pool.worth(1)
        (10, 10)
    """

    counts: tuple[int, ...]
    """How many of each item kind (``ITEMS`` order)."""
    values: tuple[tuple[int, ...], ...]
    """``values[player][item]``: what one item is worth to that player (private)."""

    def worth(self, player: int) -> int:
        """What the whole pool is worth to ``player``."""
        return split_value(self.counts, self.values[player])


def draw_pool(rng: np.random.Generator, max_count: int = 4, max_value: int = 5) -> Pool:
    """Item counts in ``1..max_count`` and, per player, values in ``0..max_value`` (the pool is
    always worth something to each player).

    Example:
        >>> pool = draw_pool(np.random.default_rng(0))
        >>> len(pool.counts), all(pool.worth(p) > 0 for p in (0, 1))
        (3, True)
    """
    counts = tuple(int(c) for c in rng.integers(1, max_count + 1, size=len(ITEMS)))
    values = []
    for _ in range(2):
        row = [int(v) for v in rng.integers(0, max_value + 1, size=len(ITEMS))]
        if not any(row):
            row[int(rng.integers(len(ITEMS)))] = 1
        values.append(tuple(row))
    return Pool(counts, tuple(values))


def split_value(share: Sequence[int], values: Sequence[int]) -> int:
    """What ``share`` is worth at ``values``."""
    return sum(c * v for c, v in zip(share, values, strict=True))


def all_splits(counts: Sequence[int]) -> list[tuple[int, ...]]:
    """Every split of a pool: each share the proposer could take.

    Example:
        >>> all_splits((1, 2, 0))
        [(0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 0, 0), (1, 1, 0), (1, 2, 0)]
    """
    return list(itertools.product(*(range(c + 1) for c in counts)))


def format_split(share: Sequence[int]) -> str:
    """``"books=2 hats=0 balls=1"``."""
    return " ".join(f"{item}={count}" for item, count in zip(ITEMS, share, strict=True))


@dataclass(frozen=True)
class Reply:
    """What a reply asked for: ``kind`` and, for a proposal, the proposer's ``share``."""

    kind: Literal["propose", "accept", "reject", "walk"] | None
    """``None`` when no move was found."""
    share: tuple[int, ...] | None = None
    message: str = ""
    error: str = ""


def parse_reply(text: str, counts: Sequence[int], max_message_chars: int = 300) -> Reply:
    """Read a move and a message from free text. Never raises.

    Proposals (what the *speaker* takes): ``<offer>books=2 hats=0 balls=1</offer>``,
    ``propose: books=2, hats=0, balls=1``, ``propose: 2 books 1 ball``, JSON such as
    ``{"books": 2, "hats": 0, "balls": 1}`` (inside ``<offer>`` or alone); item names may be
    singular, items not named count 0, the last proposal in the reply counts. Otherwise a
    decision is read from the most explicit part of the reply (``<move>`` tag, brackets, else
    the whole reply), the last one named: ``accept``, ``reject``/``decline``, ``walk away``/``walk``. The message is the ``<message>`` tag's content, else the
    reply without its tags; text inside ``<message>`` never counts as a move.

    Example:
        >>> parse_reply("<offer>books=2 hats=0 balls=1</offer>", (3, 2, 1)).share
        (2, 0, 1)
        >>> r = parse_reply('Fine. {"books": 1, "hats": 2} <message>Last offer!</message>', (3, 2, 1))
        >>> r.kind, r.share, r.message
        ('propose', (1, 2, 0), 'Last offer!')
        >>> parse_reply("OK, I accept.", (3, 2, 1)).kind
        'accept'
        >>> parse_reply("propose: books=7", (3, 2, 1)).error
        'you asked for 7 books but the pool has 3'
    """
    # Each tag is looked for once, in one pass (see multiagent.parsing.TagPattern).
    messages = list(_MESSAGE_TAG.finditer(text))
    body = _cut_out(text, messages)
    offers = list(_OFFER_TAG.finditer(body))
    share, error = _find_share(body, counts, offers[-1].content if offers else None)
    if error:
        return Reply(None, error=error)
    said = messages[-1].content if messages else _MOVE_TAG.sub(" ", _cut_out(body, offers))
    message = clip_message(said, max_message_chars)
    if share is not None:
        return Reply("propose", share, message)
    word = last_keyword(_DECISION, body)
    kind = _DECISIONS.get(word) if word is not None else None
    if kind is None:
        if not text.strip():
            return Reply(None, error="it is empty")
        return Reply(None, error="no proposal or decision found in it")
    if message.strip(" .!").lower() == word:
        message = ""
    return Reply(kind, None, message)  # type: ignore[arg-type]


def _cut_out(text: str, tags: list[TagMatch]) -> str:
    """``text`` with each of ``tags`` (found in it) replaced by a space."""
    if not tags:
        return text
    pieces = [text[: tags[0].start]]
    for tag, after in zip(tags, [*tags[1:], None], strict=True):
        pieces += (" ", text[tag.end : after.start if after is not None else len(text)])
    return "".join(pieces)


def _find_share(body: str, counts: Sequence[int], offer: str | None) -> tuple[tuple[int, ...] | None, str]:
    """The proposed share in ``body`` (or None), or an error for a proposal that is not valid.

    ``offer`` is the content of the last ``<offer>`` tag in ``body``, which is the proposal if
    there is one.
    """
    part = offer
    if part is None:
        # Else the later of the last "propose:" (the 200 characters after it) and the last JSON
        # object; "propose:" wins a tie ("offer:{...}").
        said = last_match(_PROPOSE, body)  # both kinds of match never overlap: last_match applies
        data = last_match(_JSON, body) if "{" in body else None
        if said is not None and (data is None or said.end() >= data.start()):
            part = body[said.end() : said.end() + 200]
        elif data is not None:
            part = data.group(0)
        else:
            return None, ""
    amounts = _json_amounts(part)
    if amounts is None:
        amounts = {}
        for m in _COUNT_BEFORE.finditer(part):
            amounts[_item(m.group(2))] = int(m.group(1))
        for m in _COUNT.finditer(part):
            amounts[_item(m.group(1))] = int(m.group(2))
    if not amounts:
        return None, "the proposal names no items; write it as books=B hats=H balls=L"
    share = tuple(amounts.get(item, 0) for item in ITEMS)
    for item, asked, available in zip(ITEMS, share, counts, strict=True):
        if asked > available:
            return None, f"you asked for {asked} {item} but the pool has {available}"
    return share, ""


def _item(name: str) -> str:
    name = name.lower()
    return _SINGULAR.get(name, name)


def _json_amounts(part: str) -> dict[str, int] | None:
    start = part.find("{")
    if start < 0:
        return None
    end = part.find("}", start)
    try:
        data = json.loads(part[start : end + 1]) if end > start else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    amounts = {}
    for key, value in data.items():
        item = _item(str(key)) if str(key).isascii() else ""
        if (
            item in ITEMS
            and isinstance(value, int)
            and not isinstance(value, bool)
            and 0 <= value < 10**_MAX_DIGITS
        ):
            amounts[item] = value
    return amounts or None
