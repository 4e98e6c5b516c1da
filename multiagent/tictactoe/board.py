"""Tic-tac-toe rules on a 3x3 board: moves, wins, draws, and the text form of the board."""

from __future__ import annotations

__all__ = ["CROSS", "EMPTY", "LINES", "MARKS", "NOUGHT", "Board", "square_of"]

#: Cell values: empty, then the marks of the first and second player.
EMPTY, CROSS, NOUGHT = 0, 1, 2
MARKS = (".", "X", "O")
#: The eight winning lines, as 0-based cell indices.
LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2), (3, 4, 5), (6, 7, 8),  # rows
    (0, 3, 6), (1, 4, 7), (2, 5, 8),  # columns
    (0, 4, 8), (2, 4, 6),  # diagonals
)  # fmt: skip
# Only the lines through the last move can have been completed by it.
_LINES_THROUGH = tuple(tuple(line for line in LINES if i in line) for i in range(9))
_GRID = " {} | {} | {}\n---+---+---\n {} | {} | {}\n---+---+---\n {} | {} | {}"
_CELL_TEXT = tuple((str(i + 1), "X", "O") for i in range(9))


def square_of(column: str, row: int) -> int:
    """The square number (1-9) of a coordinate: columns ``a``-``c`` left to right, rows 1-3 top down.

    Example:
        >>> square_of("a", 1), square_of("b", 2), square_of("C", 3)
        (1, 5, 9)
    """
    col = "abc".find(column.lower())
    if col < 0 or len(column) != 1 or not 1 <= row <= 3:
        raise ValueError(f"Expected a column in a-c and a row in 1-3, got {column!r}{row!r}")
    return (row - 1) * 3 + col + 1


class Board:
    """A tic-tac-toe board. Squares are numbered 1-9, left to right, top to bottom.

    Example:
        >>> board = Board()
        >>> for square, mark in [(1, CROSS), (5, NOUGHT), (2, CROSS), (9, NOUGHT), (3, CROSS)]:
        ...     board.play(square, mark)
        >>> board.winner(), board.legal_moves()
        (1, [])
        >>> print(board.text())
         X | X | X
        ---+---+---
         4 | O | 6
        ---+---+---
         7 | 8 | O
    """

    __slots__ = ("_empty", "_shown", "_winner", "cells", "moves_played")

    def __init__(self, cells: str | None = None):
        """An empty board, or one given as 9 characters of ``.``/``X``/``O`` (e.g. ``"X.O......"``)."""
        self.cells = [EMPTY] * 9
        self.moves_played = 0
        self._winner = EMPTY
        if cells is not None:
            if len(cells) != 9 or any(c not in "XO." for c in cells.upper()):
                raise ValueError(f"Expected 9 characters of X, O or '.', got {cells!r}")
            self.cells = [MARKS.index(c) for c in cells.upper()]
            self.moves_played = 9 - self.cells.count(EMPTY)
            for a, b, c in LINES:
                if self.cells[a] != EMPTY and self.cells[a] == self.cells[b] == self.cells[c]:
                    self._winner = self.cells[a]
        # What each square shows in text(), kept up to date by play() so rendering is one format.
        self._shown = [_CELL_TEXT[i][v] for i, v in enumerate(self.cells)]
        self._empty = [i + 1 for i, v in enumerate(self.cells) if v == EMPTY]

    def play(self, square: int, mark: int) -> None:
        """Put ``mark`` (1 for X, 2 for O) on ``square`` (1-9), which must be empty."""
        i = square - 1
        if not 0 <= i < 9 or self.cells[i] != EMPTY:
            raise ValueError(f"Square {square!r} is not an empty square 1-9")
        if mark not in (CROSS, NOUGHT):
            raise ValueError(f"Expected mark 1 (X) or 2 (O), got {mark!r}")
        cells = self.cells
        cells[i] = mark
        self._shown[i] = MARKS[mark]
        self._empty.remove(square)
        self.moves_played += 1
        for a, b, c in _LINES_THROUGH[i]:
            if cells[a] == cells[b] == cells[c]:
                self._winner = mark
                return

    def is_empty(self, square: int) -> bool:
        """True if ``square`` (1-9) is on the board and free."""
        return 1 <= square <= 9 and self.cells[square - 1] == EMPTY

    def winner(self) -> int:
        """1 if X has three in a row, 2 if O has, else 0."""
        return self._winner

    def is_full(self) -> bool:
        """True when all nine squares are taken."""
        return self.moves_played == 9

    def legal_moves(self) -> list[int]:
        """The empty squares (1-9), or none once someone has won."""
        if self._winner:
            return []
        return self._empty[:]

    def text(self) -> str:
        """The board as a grid; empty squares show their number."""
        return _GRID.format(*self._shown)

    def compact(self) -> str:
        """The board as 9 characters of ``X``, ``O`` and ``.``."""
        return "".join(MARKS[v] for v in self.cells)
