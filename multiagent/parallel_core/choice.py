"""Reading one move among named choices (``rock``, ``cooperate``...) from free text, leniently."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from multiagent.parsing import candidates, keyword_in, keyword_pattern, last_keyword

__all__ = ["ParsedMove", "choice_pattern", "parse_choice"]

_STRIP = " \t\r\n.,;:!?\"'`*()[]{}<>"


@dataclass(frozen=True)
class ParsedMove:
    """What a reply said: a legal move, or why it is not one."""

    move: str | None
    """The canonical legal move, or ``None`` when the reply was not understood."""
    error: str = ""
    """Why the reply was not understood (empty when ``move`` is set)."""


def choice_pattern(aliases: Mapping[str, str]) -> re.Pattern[str]:
    """The compiled whole-word pattern of the spellings in ``aliases`` longer than one letter.

    Compile it once per game (at import), not per move.
    """
    return keyword_pattern(name for name in aliases if len(name) > 1)


def parse_choice(text: str, aliases: Mapping[str, str], pattern: re.Pattern[str]) -> ParsedMove:
    """Find the move in free text, leniently, the way every game in this package does.

    ``aliases`` maps every accepted spelling (lower case, ASCII) to its canonical move and
    ``pattern`` is :func:`choice_pattern` of it. The move is read from the most explicit part
    of the reply (:func:`multiagent.parsing.focus`: a ``<move>`` tag, ``\\boxed{}``, ``[...]``,
    else the whole text): that part being a spelling (``"R"``, ``"Rock."``), else the *last*
    move named in it as a whole word, since reasoning tends to end with the decision.
    Never raises.

    Example:
        >>> aliases = {"rock": "rock", "r": "rock", "paper": "paper", "p": "paper"}
        >>> pattern = choice_pattern(aliases)
        >>> parse_choice("<move>Paper</move>", aliases, pattern).move
        'paper'
        >>> parse_choice("Not paper; I play rock.", aliases, pattern).move
        'rock'
        >>> parse_choice("pass", aliases, pattern).error
        'no move found in it; expected one of paper, rock'
    """
    parts = candidates(text)
    part = parts[0]
    whole = part.strip(_STRIP)
    # Lower-casing never shortens a string, so a long part is no spelling: skip copying it.
    move = aliases.get(whole.lower()) if len(whole) <= max(map(len, aliases), default=0) else None
    if move is not None:
        return ParsedMove(move)
    # A lone candidate is the whole text, already known to hold no tag, box or brackets.
    word = last_keyword(pattern, part) if len(parts) > 1 else keyword_in(pattern, part)
    move = aliases.get(word) if word is not None else None
    if move is not None:
        return ParsedMove(move)
    expected = ", ".join(sorted(set(aliases.values())))
    if not text.strip():
        return ParsedMove(None, f"it is empty; expected one of {expected}")
    return ParsedMove(None, f"no move found in it; expected one of {expected}")
