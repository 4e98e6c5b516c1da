"""Lenient parsing of game moves from free text: tags, brackets, coordinates, numbers, keywords.

Players are language models, so a move arrives as ``"5"``, ``"I play 5"``, ``"<move>5</move>"``,
``"[5]"`` or a paragraph of reasoning that ends with the move. The helpers here list the parts of
an answer from the most explicit (:func:`candidates`: a tag, ``\\boxed{}``, brackets, then the
whole text) and read a number or a keyword from the first part that has one.

Rules every helper follows:

* Only ASCII digits are digits: ``"²".isdigit()`` is True but ``int("²")`` raises, and random
  unicode must never crash a game.
* Integers longer than :data:`MAX_INT_DIGITS` digits are not numbers (Python refuses to convert
  very long digit strings, and no game has such moves).
* Every pattern is compiled once, at import or on first use of a tag name, never per call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "MAX_INT_DIGITS",
    "ascii_ints",
    "candidates",
    "focus",
    "keyword_pattern",
    "last_keyword",
    "parse_int",
    "snippet",
    "tag_pattern",
]

#: Longest digit run read as an integer; longer runs are ignored.
MAX_INT_DIGITS = 9

_INT = re.compile(rf"(?<![0-9])[0-9]{{1,{MAX_INT_DIGITS}}}(?![0-9])")
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_BRACKET = re.compile(r"\[([^\[\]]{1,40})\]")


@lru_cache(maxsize=64)
def tag_pattern(tag: str) -> re.Pattern[str]:
    """The compiled pattern for ``<tag>...</tag>`` (case-insensitive, spaces allowed in the tags).

    Cached, so calling it per move costs a dictionary lookup, not a compilation.

    Example:
        >>> tag_pattern("move").findall("<move> 3 </move> then <MOVE>4</move>")
        [' 3 ', '4']
    """
    if not isinstance(tag, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", tag):
        raise ValueError(f"Expected a tag name such as 'move', got {tag!r}")
    return re.compile(rf"<\s*{tag}\s*>(.*?)<\s*/\s*{tag}\s*>", re.IGNORECASE | re.DOTALL)


def candidates(text: str, tag: str = "move") -> list[str]:
    """Where to look for the move, most explicit first.

    The content of the last ``<tag>...</tag>``, of the last ``\\boxed{...}``, of the last
    ``[...]`` (up to 40 characters), each if present, and always the whole text last. A parser
    takes the first candidate that holds a move, so ``"[thinking] I play 5"`` still reads 5.

    Example:
        >>> candidates("[draft] I'd say <move>5</move>")
        ['5', 'draft', "[draft] I'd say <move>5</move>"]
        >>> candidates("I play 7")
        ['I play 7']
    """
    found: list[str] = []
    if "<" in text:
        tagged = tag_pattern(tag).findall(text)
        if tagged:
            found.append(str(tagged[-1]))
    if "\\boxed" in text:
        boxed = _BOXED.findall(text)
        if boxed:
            found.append(str(boxed[-1]))
    if "[" in text:
        bracketed = _BRACKET.findall(text)
        if bracketed:
            found.append(str(bracketed[-1]))
    found.append(text)
    return found


def focus(text: str, tag: str = "move") -> str:
    """The most explicit part of an answer: the first of :func:`candidates`.

    Example:
        >>> focus("I think 3 is taken, so <move>5</move>")
        '5'
        >>> focus("my answer: [b2]"), focus("I play 7")
        ('b2', 'I play 7')
    """
    return candidates(text, tag)[0]


def ascii_ints(text: str) -> list[int]:
    """Every standalone run of ASCII digits in ``text``, as ints, in order.

    Example:
        >>> ascii_ints("row 2, col 3; x²=4; ٣ is not ASCII")
        [2, 3, 4]
    """
    return [int(m) for m in _INT.findall(text)]


def parse_int(text: str, tag: str = "move") -> int | None:
    """The last ASCII integer in the first of :func:`candidates` that has one, or None.

    The last one, because reasoning tends to end with the decision ("3 is taken, I play 5").

    Example:
        >>> parse_int("I play 5"), parse_int("<move>7</move> (not 8)"), parse_int("five")
        (5, 7, None)
        >>> parse_int("[thinking] I play 5")
        5
    """
    for part in candidates(text, tag):
        found = _INT.findall(part)
        if found:
            return int(found[-1])
    return None


def keyword_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """Compile a whole-word, case-insensitive pattern matching any of ``words`` (call at import).

    Longer words are tried first, so ``"all in"`` wins over ``"all"``.

    Example:
        >>> keyword_pattern(["bet", "check"]).findall("I check. No, BET!")
        ['check', 'BET']
    """
    ordered = sorted({w.strip() for w in words}, key=len, reverse=True)
    if not ordered or not all(ordered):
        raise ValueError(f"Expected a non-empty list of non-empty words, got {list(words)!r}")
    alternatives = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in ordered)
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)


def last_keyword(pattern: re.Pattern[str], text: str, tag: str = "move") -> str | None:
    """The last match of ``pattern`` in the first of :func:`candidates` that has one, lower-cased.

    Runs of whitespace inside the match are collapsed to one space. None if nothing matches.

    Example:
        >>> last_keyword(keyword_pattern(["call", "fold"]), "I won't fold. I CALL.")
        'call'
    """
    for part in candidates(text, tag):
        found = pattern.findall(part)
        if found:
            return " ".join(found[-1].lower().split())
    return None


def snippet(text: str, limit: int = 60) -> str:
    """``text`` shortened to ``limit`` characters for an error message, as a quoted repr.

    Example:
        >>> snippet("a" * 100, limit=10)
        "'aaaaaaaaaa'…"
    """
    return repr(text[:limit]) + ("…" if len(text) > limit else "")
