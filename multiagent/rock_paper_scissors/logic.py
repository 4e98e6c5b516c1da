"""Rock-paper-scissors rules, apart from the env: which move beats which, and round payoffs."""

from __future__ import annotations

__all__ = ["ALIASES", "BEATS", "MOVES", "counter_move", "round_payoff"]

MOVES: tuple[str, ...] = ("rock", "paper", "scissors")
BEATS: dict[str, str] = {"rock": "scissors", "paper": "rock", "scissors": "paper"}
"""``BEATS[a] == b`` means ``a`` beats ``b``."""
ALIASES: dict[str, str] = {
    **{move: move for move in MOVES},
    "r": "rock",
    "p": "paper",
    "s": "scissors",
    "stone": "rock",
    "scissor": "scissors",
}
"""Accepted spellings (lower case) of each move."""


def round_payoff(move: str, other: str, win: float = 1.0, draw: float = 0.0, loss: float = -1.0) -> float:
    """The payoff of playing ``move`` against ``other``.

    Example:
        >>> round_payoff("rock", "scissors"), round_payoff("rock", "paper"), round_payoff("paper", "paper")
        (1.0, -1.0, 0.0)
    """
    if move not in BEATS or other not in BEATS:
        raise ValueError(f"Expected moves among {MOVES}, got {move!r} and {other!r}")
    if move == other:
        return draw
    return win if BEATS[move] == other else loss


def counter_move(move: str) -> str:
    """The move that beats ``move``.

    Example:
        >>> counter_move("rock")
        'paper'
    """
    for candidate, beaten in BEATS.items():
        if beaten == move:
            return candidate
    raise ValueError(f"Expected a move among {MOVES}, got {move!r}")
