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
* Every helper takes time linear in the length of its input, whatever the input: a model's
  answer may be a megabyte of ``<move>`` tags. No regex here can rescan the rest of the text
  from each of many start positions (no lazy ``(.*?)`` up to a closing tag that may never
  come); tags are paired in one pass by :class:`TagPattern`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import NamedTuple

from gym_tinker.parsing import last_match

__all__ = [
    "MAX_INT_DIGITS",
    "TagMatch",
    "TagPattern",
    "ascii_ints",
    "candidates",
    "clip_message",
    "focus",
    "keyword_in",
    "keyword_pattern",
    "last_keyword",
    "last_match",
    "parse_int",
    "snippet",
    "tag_pattern",
]

#: Longest digit run read as an integer; longer runs are ignored.
MAX_INT_DIGITS = 9

# A digit first, then "not after a digit": the same matches as a leading lookbehind, but the
# regex engine can skip to the next digit instead of trying every position (7x faster on text
# without digits).
_INT = re.compile(rf"[0-9](?<![0-9][0-9])[0-9]{{0,{MAX_INT_DIGITS - 1}}}(?![0-9])")
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_BRACKET = re.compile(r"\[([^\[\]]{1,40})\]")
_SPACES = re.compile(r"\s+")


class TagMatch(NamedTuple):
    """One ``<tag>...</tag>`` found by :meth:`TagPattern.finditer`."""

    start: int
    """Where the opening tag starts."""
    end: int
    """Where the closing tag ends."""
    content: str
    """The text between the two tags."""


class TagPattern:
    """Finds ``<tag>...</tag>`` in one pass: linear in the text's length, whatever the text.

    Finds what ``re.compile(r"<\\s*tag\\s*>(.*?)<\\s*/\\s*tag\\s*>", re.I | re.S)`` finds
    (left to right, each opening tag paired with the first closing tag after it, the search
    going on after that closing tag), without that regex's cost: searched from every opening
    tag of a text full of them, the lazy ``(.*?)`` scans to the end of the text each time, so
    a 100 KB flood of ``<move>`` took seconds. Here the opening and closing tags are each
    found once, by small regexes that cannot run past the tag, and paired as they come.
    Use :func:`tag_pattern` to get one (cached per tag name).

    Example:
        >>> move = tag_pattern("move")
        >>> move.findall("<move> 3 </move> then <MOVE>4</move> and <move>5")
        [' 3 ', '4']
        >>> move.last("<move>1</move> no, <move>2</move>"), move.last("no tags")
        ('2', None)
        >>> move.sub("_", "a <move>1</move> b <move>2</ move >c")
        'a _ b _c'
    """

    __slots__ = ("_close", "_open", "tag")

    def __init__(self, tag: str):
        if not isinstance(tag, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", tag):
            raise ValueError(f"Expected a tag name such as 'move', got {tag!r}")
        self.tag = tag
        # Each starts with "<" and holds no other "<", so matches never overlap and a search
        # from any position stops at the end of the tag it is reading.
        self._open = re.compile(rf"<\s*{tag}\s*>", re.IGNORECASE)
        self._close = re.compile(rf"<\s*/\s*{tag}\s*>", re.IGNORECASE)

    def __repr__(self) -> str:
        return f"tag_pattern({self.tag!r})"

    def finditer(self, text: str) -> Iterator[TagMatch]:
        """Every ``<tag>...</tag>`` in ``text``, left to right."""
        if "<" not in text:
            return
        closers = self._close.finditer(text)
        closer: re.Match[str] | None = None
        position = 0
        while True:
            opener = self._open.search(text, position)
            if opener is None:
                return
            # The first closing tag after this opening tag; those before it can never pair.
            while closer is None or closer.start() < opener.end():
                closer = next(closers, None)
                if closer is None:
                    return
            yield TagMatch(opener.start(), closer.end(), text[opener.end() : closer.start()])
            position = closer.end()

    def findall(self, text: str) -> list[str]:
        """The content of every ``<tag>...</tag>`` in ``text``, in order."""
        return [match.content for match in self.finditer(text)]

    def last(self, text: str) -> str | None:
        """The content of the last ``<tag>...</tag>`` in ``text``, or None."""
        found = None
        for match in self.finditer(text):
            found = match
        return None if found is None else found.content

    def sub(self, replacement: str, text: str) -> str:
        """``text`` with every ``<tag>...</tag>`` (tags included) replaced by ``replacement``."""
        pieces: list[str] = []
        done = 0
        for match in self.finditer(text):
            pieces += (text[done : match.start], replacement)
            done = match.end
        if not pieces:
            return text
        pieces.append(text[done:])
        return "".join(pieces)


@lru_cache(maxsize=64)
def tag_pattern(tag: str) -> TagPattern:
    """The :class:`TagPattern` for ``<tag>...</tag>`` (case-insensitive, spaces allowed in the tags).

    Cached, so calling it per move costs a dictionary lookup, not a compilation.

    Example:
        >>> tag_pattern("move").findall("<move> 3 </move> then <MOVE>4</move>")
        [' 3 ', '4']
    """
    return TagPattern(tag)


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
        tagged = tag_pattern(tag).last(text)
        if tagged is not None:
            found.append(tagged)
    if "\\boxed" in text:
        boxed = last_match(_BOXED, text)
        if boxed is not None:
            found.append(boxed.group(1))
    if "[" in text:
        bracketed = last_match(_BRACKET, text)
        if bracketed is not None:
            found.append(bracketed.group(1))
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
        found = last_match(_INT, part)
        if found is not None:
            return int(found.group())
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
    # The lookahead on the first letters only makes the scan cheaper: at most positions it
    # fails at once, before the lookbehind and the alternatives are tried (4x faster on a
    # megabyte of punctuation). It accepts every letter a word may start with, so the
    # matches are the same.
    firsts = "".join(sorted({re.escape(w[0]) for w in ordered}))
    return re.compile(rf"(?=[{firsts}])(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)


def last_keyword(pattern: re.Pattern[str], text: str, tag: str = "move") -> str | None:
    """The last match of ``pattern`` in the first of :func:`candidates` that has one, lower-cased.

    Runs of whitespace inside the match are collapsed to one space. None if nothing matches.

    Example:
        >>> last_keyword(keyword_pattern(["call", "fold"]), "I won't fold. I CALL.")
        'call'
    """
    for part in candidates(text, tag):
        word = keyword_in(pattern, part)
        if word is not None:
            return word
    return None


def keyword_in(pattern: re.Pattern[str], text: str) -> str | None:
    """The last match of ``pattern`` in ``text`` itself (no :func:`candidates`), as :func:`last_keyword` gives it.

    Example:
        >>> keyword_in(keyword_pattern(["call", "fold"]), "<move>fold</move> I CALL")
        'call'
    """
    found = pattern.findall(text)
    return " ".join(found[-1].lower().split()) if found else None


def snippet(text: str, limit: int = 60) -> str:
    """``text`` shortened to ``limit`` characters for an error message, as a quoted repr.

    Example:
        >>> snippet("a" * 100, limit=10)
        "'aaaaaaaaaa'…"
    """
    return repr(text[:limit]) + ("…" if len(text) > limit else "")


def clip_message(text: str, max_chars: int) -> str:
    """``text`` as a message to pass on: whitespace runs made one space, stripped, and cut to
    ``max_chars`` (ending in ``"…"`` when cut).

    Reads only as much of ``text`` as the result needs, so a megabyte of text costs no more
    than a short one.

    Example:
        >>> clip_message("  Let's\\n\\n  both   cooperate. ", 100)
        "Let's both cooperate."
        >>> clip_message("word " * 100_000, 12)
        'word word w…'
    """
    if max_chars < 0:
        raise ValueError(f"Expected `max_chars` to be an int >= 0, got {max_chars!r}")
    # The collapsed form of a prefix is a prefix of the collapsed whole; once it is 2 longer
    # than the limit, the stripped whole is too long and starts with it.
    read = 4 * max_chars + 64
    while read < len(text):
        head = _SPACES.sub(" ", text[:read]).lstrip()
        if len(head) >= max_chars + 2:
            return head[: max(max_chars - 1, 0)] + "…"
        read *= 2
    message = _SPACES.sub(" ", text).strip()
    return message if len(message) <= max_chars else message[: max(max_chars - 1, 0)] + "…"
