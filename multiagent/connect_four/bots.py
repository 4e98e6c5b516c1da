"""Connect-four bots: a few-ply alpha-beta search with a window-counting heuristic."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from multiagent.connect_four.board import COLUMNS, EMPTY, ROWS, WINDOWS

__all__ = ["AlphaBetaBot", "evaluate", "read_board", "search"]

_ROW = re.compile(r"^\|([.XO ]+)\|$", re.MULTILINE)
_ME = re.compile(r"You are ([XO]) ")
_ORDER = (3, 2, 4, 1, 5, 0, 6)  # centre columns first: better moves first, more cut-offs
_WIN = 1_000_000
_CENTRE = tuple(r * COLUMNS + COLUMNS // 2 for r in range(ROWS))


def read_board(observation: str) -> tuple[list[int], int]:
    """The cells (row 0 at the bottom; 0 empty, 1 X, 2 O) and the reader's mark, from an observation.

    Example:
        >>> from multiagent import connect_four_v0
        >>> env = connect_four_v0.env(); env.reset(); env.step("4")
        >>> cells, me = read_board(env.observe("player_1"))
        >>> cells[3], me
        (1, 2)
    """
    rows = _ROW.findall(observation)
    me = _ME.search(observation)
    if len(rows) != ROWS or me is None:
        raise ValueError(f"Not a connect-four observation: {observation[:80]!r}")
    cells: list[int] = []
    for row in reversed(rows):
        cells.extend(".XO".index(c) for c in row.split())
    return cells, 1 if me.group(1) == "X" else 2


def evaluate(cells: list[int], me: int) -> int:
    """Heuristic value of a position for ``me``: open threes and twos, and centre control.

    Example:
        >>> cells = [0] * 42
        >>> cells[3] = 1
        >>> evaluate(cells, 1) > 0 > evaluate(cells, 2)
        True
    """
    opp = 3 - me
    score = 0
    for a, b, c, d in WINDOWS:
        window = (cells[a], cells[b], cells[c], cells[d])
        mine, theirs = window.count(me), window.count(opp)
        if mine and theirs:
            continue
        if mine == 3:
            score += 5
        elif mine == 2:
            score += 2
        elif theirs == 3:
            score -= 4
        elif theirs == 2:
            score -= 1
    for i in _CENTRE:
        if cells[i] == me:
            score += 3
        elif cells[i] == opp:
            score -= 3
    return score


def _wins(cells: list[int], index: int) -> bool:
    mark = cells[index]
    return any(cells[a] == cells[b] == cells[c] == cells[d] == mark for a, b, c, d in _THROUGH[index])


_THROUGH = tuple(tuple(w for w in WINDOWS if i in w) for i in range(ROWS * COLUMNS))


def _negamax(cells: list[int], heights: list[int], me: int, depth: int, alpha: int, beta: int) -> int:
    if depth == 0:
        return evaluate(cells, me)
    any_move = False
    best = -_WIN * 10
    for c in _ORDER:
        h = heights[c]
        if h == ROWS:
            continue
        any_move = True
        index = h * COLUMNS + c
        cells[index] = me
        heights[c] = h + 1
        if _wins(cells, index):
            value = _WIN + depth  # sooner wins score higher
        else:
            value = -_negamax(cells, heights, 3 - me, depth - 1, -beta, -alpha)
        cells[index] = EMPTY
        heights[c] = h
        if value > best:
            best = value
        if best > alpha:
            alpha = best
        if alpha >= beta:
            break
    return best if any_move else 0  # a full board is a draw


def search(cells: list[int], me: int, depth: int) -> dict[int, int]:
    """The alpha-beta value of every legal column (1-7) for ``me`` to move, ``depth`` plies deep.

    Example:
        >>> from multiagent.connect_four.board import Board
        >>> board = Board.from_moves([1, 1, 2, 2, 3, 3])  # X to move, 4 wins
        >>> values = search(board.cells, 1, depth=2)
        >>> max(values, key=values.get)
        4
    """
    cells = list(cells)
    heights = [sum(1 for r in range(ROWS) if cells[r * COLUMNS + c] != EMPTY) for c in range(COLUMNS)]
    values: dict[int, int] = {}
    for c in _ORDER:
        h = heights[c]
        if h == ROWS:
            continue
        index = h * COLUMNS + c
        cells[index] = me
        heights[c] = h + 1
        if _wins(cells, index):
            values[c + 1] = _WIN + depth
        else:
            values[c + 1] = -_negamax(cells, heights, 3 - me, depth - 1, -_WIN * 10, _WIN * 10)
        cells[index] = EMPTY
        heights[c] = h
    return values


class AlphaBetaBot:
    """Searches ``depth`` plies with alpha-beta pruning; ties are broken at random (seeded).

    Args:
        depth: Plies to search (4 by default: about 10-50 ms a move).
        seed: Seed of its generator for breaking ties.

    Example:
        >>> from multiagent import connect_four_v0
        >>> env = connect_four_v0.env(); env.reset()
        >>> for column in "121212":
        ...     env.step(column)
        >>> AlphaBetaBot(depth=2, seed=0)(env.observe("player_0"), env.infos["player_0"])  # win at 1
        '1'
    """

    def __init__(self, depth: int = 4, seed: int | np.random.Generator | None = None):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"Expected `depth` to be an int >= 1, got {depth!r}")
        self.depth = depth
        self._rng = np.random.default_rng(seed)

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        if not info.get("legal_moves"):
            return ""
        cells, me = read_board(observation)
        values = search(cells, me, self.depth)
        top = max(values.values())
        best = sorted(c for c, v in values.items() if v == top)
        return str(best[int(self._rng.integers(len(best)))])
