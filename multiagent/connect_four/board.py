"""Connect-four rules on a 6x7 board: drops, wins in four directions, draws, and the text form."""

from __future__ import annotations

__all__ = ["COLUMNS", "EMPTY", "MARKS", "ROWS", "WINDOWS", "Board"]

ROWS, COLUMNS = 6, 7
EMPTY = 0
#: How cells print: empty, first player, second player.
MARKS = (".", "X", "O")


def _windows() -> tuple[tuple[int, int, int, int], ...]:
    # Cell index = row * COLUMNS + column, row 0 at the bottom.
    found = []
    for r in range(ROWS):
        for c in range(COLUMNS):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + k * dr, c + k * dc) for k in range(4)]
                if all(0 <= rr < ROWS and 0 <= cc < COLUMNS for rr, cc in cells):
                    found.append(tuple(rr * COLUMNS + cc for rr, cc in cells))
    return tuple(found)  # type: ignore[arg-type]


#: Every line of four cells (69 of them): horizontal, vertical and both diagonals.
WINDOWS = _windows()
# Only windows through the last piece can have been completed by it.
_WINDOWS_THROUGH = tuple(tuple(w for w in WINDOWS if i in w) for i in range(ROWS * COLUMNS))
_HEADER = " " + " ".join(str(c + 1) for c in range(COLUMNS))


class Board:
    """A connect-four board: 7 columns (1-7, left to right) of 6 cells; pieces fall to the bottom.

    Example:
        >>> board = Board()
        >>> for column in [4, 4, 5, 5, 6, 6, 7]:
        ...     _ = board.drop(column)
        >>> board.winner(), board.legal_moves()
        (1, [])
        >>> print(board.text())
         1 2 3 4 5 6 7
        |. . . . . . .|
        |. . . . . . .|
        |. . . . . . .|
        |. . . . . . .|
        |. . . O O O .|
        |. . . X X X X|
    """

    __slots__ = ("_winner", "cells", "heights", "moves_played")

    def __init__(self) -> None:
        self.cells = [EMPTY] * (ROWS * COLUMNS)
        self.heights = [0] * COLUMNS
        self.moves_played = 0
        self._winner = EMPTY

    @classmethod
    def from_moves(cls, columns: list[int]) -> Board:
        """The board after dropping pieces in ``columns`` (1-7), players alternating, X first."""
        board = cls()
        for column in columns:
            board.drop(column)
        return board

    def to_move(self) -> int:
        """1 if X (the first player) drops next, else 2."""
        return 1 + self.moves_played % 2

    def can_drop(self, column: int) -> bool:
        """True if ``column`` (1-7) exists and is not full."""
        return 1 <= column <= COLUMNS and self.heights[column - 1] < ROWS

    def drop(self, column: int) -> int:
        """Drop the next player's piece in ``column`` (1-7); returns the cell index it lands on."""
        if self._winner or not self.can_drop(column):
            raise ValueError(f"Cannot drop in column {column!r} (columns are 1-{COLUMNS}, not full, game on)")
        c = column - 1
        index = self.heights[c] * COLUMNS + c
        mark = self.to_move()
        cells = self.cells
        cells[index] = mark
        self.heights[c] += 1
        self.moves_played += 1
        for a, b, d, e in _WINDOWS_THROUGH[index]:
            if cells[a] == cells[b] == cells[d] == cells[e]:
                self._winner = mark
                break
        return index

    def winner(self) -> int:
        """1 if X has four in a line, 2 if O has, else 0."""
        return self._winner

    def is_full(self) -> bool:
        """True when all 42 cells are taken."""
        return self.moves_played == ROWS * COLUMNS

    def legal_moves(self) -> list[int]:
        """Columns (1-7) that are not full, or none once someone has won."""
        if self._winner:
            return []
        return [c + 1 for c in range(COLUMNS) if self.heights[c] < ROWS]

    def text(self) -> str:
        """The board, top row first, with column numbers on top."""
        cells = self.cells
        lines = [_HEADER]
        for r in range(ROWS - 1, -1, -1):
            row = cells[r * COLUMNS : (r + 1) * COLUMNS]
            lines.append("|" + " ".join([MARKS[v] for v in row]) + "|")
        return "\n".join(lines)
