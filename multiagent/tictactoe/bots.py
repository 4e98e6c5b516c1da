"""Tic-tac-toe bots: perfect play by memoised minimax."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

import numpy as np

from multiagent.tictactoe.board import LINES

__all__ = ["MinimaxBot", "best_moves", "read_board"]

_ROW = re.compile(r"^ (\S) \| (\S) \| (\S)$", re.MULTILINE)
_ME = re.compile(r"You are ([XO]) ")


def read_board(observation: str) -> tuple[str, str]:
    """The board (9 characters of ``X``/``O``/``.``) and the reader's mark, from an observation.

    Example:
        >>> from multiagent import tictactoe_v0
        >>> env = tictactoe_v0.env(); env.reset(); env.step("1")
        >>> read_board(env.observe("player_1"))
        ('X........', 'O')
    """
    rows = _ROW.findall(observation)
    me = _ME.search(observation)
    if len(rows) != 3 or me is None:
        raise ValueError(f"Not a tic-tac-toe observation: {observation[:80]!r}")
    cells = "".join(c if c in "XO" else "." for row in rows for c in row)
    return cells, me.group(1)


def _winner(cells: str) -> str:
    for a, b, c in LINES:
        if cells[a] != "." and cells[a] == cells[b] == cells[c]:
            return cells[a]
    return ""


@cache
def _value(cells: str, to_move: str) -> int:
    """> 0 if the player to move wins with perfect play, 0 for a draw, < 0 for a loss.

    The size is 1 + the empty squares left at the end, so faster wins and slower losses score
    higher: a lost position is still defended (the bot blocks) and a won one is won quickly.
    """
    other = "O" if to_move == "X" else "X"
    empty = cells.count(".")
    if _winner(cells):  # the previous mover won
        return -(empty + 1)
    if not empty:
        return 0
    best = -100
    for i, c in enumerate(cells):
        if c == ".":
            best = max(best, -_value(cells[:i] + to_move + cells[i + 1 :], other))
    return best


def best_moves(cells: str, to_move: str) -> list[int]:
    """The squares (1-9) that keep the best minimax value for ``to_move``.

    Example:
        >>> best_moves("XX.OO....", "X")  # take the win
        [3]
        >>> best_moves("XX.O.....", "O")  # block
        [3]
    """
    if len(cells) != 9 or set(cells) - set("XO.") or to_move not in ("X", "O"):
        raise ValueError(f"Expected 9 cells of X, O or '.' and a mark X or O, got {cells!r} and {to_move!r}")
    other = "O" if to_move == "X" else "X"
    scored = [
        (-_value(cells[:i] + to_move + cells[i + 1 :], other), i + 1) for i, c in enumerate(cells) if c == "."
    ]
    if not scored:
        return []
    top = max(score for score, _ in scored)
    return [square for score, square in scored if score == top]


class MinimaxBot:
    """Perfect tic-tac-toe: never loses; picks at random (seeded) among the optimal moves.

    Args:
        seed: Seed of its generator for breaking ties.

    Example:
        >>> from multiagent import tictactoe_v0
        >>> env = tictactoe_v0.env(); env.reset(); env.step("1"); env.step("2"); env.step("5")
        >>> MinimaxBot(seed=0)(env.observe("player_1"), env.infos["player_1"])  # must block 9
        '9'
    """

    def __init__(self, seed: int | np.random.Generator | None = None):
        self._rng = np.random.default_rng(seed)

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        if not info.get("legal_moves"):
            return ""
        cells, me = read_board(observation)
        moves = best_moves(cells, me)
        return str(moves[int(self._rng.integers(len(moves)))])
