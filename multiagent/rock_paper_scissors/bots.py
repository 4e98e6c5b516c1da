"""Rock-paper-scissors bots: plain callables ``(observation, info) -> reply``.

They read ``info`` (``legal_moves``, and ``history`` as ``(own, opponent)`` pairs), not the
text, and answer ``""`` while their move is locked (the env ignores that reply anyway). The
random bot is :class:`multiagent.bots.RandomLegalBot`; every bot takes ``seed`` (these
deterministic ones ignore it) so that :func:`multiagent.bots.get_bot` can build them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from multiagent.rock_paper_scissors.logic import MOVES, counter_move

__all__ = ["ConstantBot", "FrequencyBot"]


class ConstantBot:
    """Always plays ``move``.

    Example:
        >>> ConstantBot("rock")("", {"legal_moves": ["rock", "paper", "scissors"]})
        'rock'
    """

    def __init__(self, move: str = "rock", seed: int | None = None):
        if move not in MOVES:
            raise ValueError(f"Expected a move among {MOVES}, got {move!r}")
        self.move = move

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        return self.move if info.get("legal_moves") else ""


class FrequencyBot:
    """Counts the opponent's moves so far and plays what beats the most frequent one.

    Ties go to the opponent's most recent move among the tied ones; with no history it
    plays ``opening``. Beats any fixed or biased opponent; is itself predictable.

    Example:
        >>> bot = FrequencyBot()
        >>> info = {"legal_moves": list(MOVES), "history": (("paper", "rock"), ("rock", "rock"), ("rock", "paper"))}
        >>> bot("", info)
        'paper'
    """

    def __init__(self, opening: str = "paper", seed: int | None = None):
        if opening not in MOVES:
            raise ValueError(f"Expected an opening move among {MOVES}, got {opening!r}")
        self.opening = opening

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        if not info.get("legal_moves"):
            return ""
        theirs = [other for _, other in info.get("history", ()) if other is not None]
        if not theirs:
            return self.opening
        counts = Counter(theirs)
        top = max(counts.values())
        # the most recent of the most frequent moves
        favourite = next(move for move in reversed(theirs) if counts[move] == top)
        return counter_move(favourite)
