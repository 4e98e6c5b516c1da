"""Tic-tac-toe as a text game: an AEC environment for two players answering in free text.

Rules
    Two players, ``player_0`` (X, moves first) and ``player_1`` (O), take turns putting their
    mark on an empty square of a 3x3 grid. Three marks in a row, column or diagonal win; a full
    board without a line is a draw.

Observation
    A :class:`~gym_tinker.spaces.TextObservation` (a ``str``): the player's mark, the grid
    (empty squares show their number), the opponent's last move, whose turn it is, the legal
    moves, how to answer, and the reason the player's last answer was rejected, if it was.
    ``infos[agent]["legal_moves"]`` lists the empty squares as ints for the player to move
    (empty for the other one).

Action
    Any string. Read leniently: ``"5"``, ``"I play 5"``, ``"<move>5</move>"``, ``"[5]"``, or a
    coordinate ``"b2"`` (columns a-c left to right, rows 1-3 top to bottom). The parts of the
    answer are tried from the most explicit (tag, then ``\\boxed{}``, then brackets, then the
    whole text); in the first that names a square, the last coordinate wins, else the last
    number not glued to a letter (``"d4"`` is neither). Only
    ASCII digits count. An unreadable answer or a taken square costs a retry; after
    ``max_retries`` retries in one turn (default 2) the next bad answer forfeits.
    At most ``max_action_chars`` characters of an answer are read (default 32,768): a longer
    action is cut, with a note in the observation (``None``: no cap); only the cut text is
    parsed and kept. Parsing takes time linear in the answer's length.

Rewards
    Win +1, loss -1, draw 0. A forfeit gives the offender ``forfeit_penalty`` (default -1) and
    the opponent +1. Truncation gives 0: ``max_cycles`` (default 100 cycles of one turn per
    player, invalid answers included) is only reached with ``max_retries=None``.

Parallel view
    ``parallel_env()`` is PettingZoo's turn-based conversion: each step every live agent sends
    an action and only the player to move is played (``infos[agent]["active_agent"]``).
    ``max_cycles`` then counts parallel steps. PettingZoo's plain ``aec_to_parallel`` does not
    apply (agents do not all act every cycle).

Versions
    * v0: first version.

Example:
    >>> from multiagent import tictactoe_v0
    >>> env = tictactoe_v0.env()
    >>> env.reset(seed=0)
    >>> env.step("I'll take the centre: <move>b2</move>")
    >>> print(env.observe("player_1"))
    Tic-tac-toe. You are O (player_1).
     1 | 2 | 3
    ---+---+---
     4 | X | 6
    ---+---+---
     7 | 8 | 9
    X (player_0) played 5.
    Your turn. Legal moves: 1, 2, 3, 4, 6, 7, 8, 9.
    Answer with a square number 1-9, or a coordinate such as b2 (columns a-c, rows 1-3).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pettingzoo import AECEnv, ParallelEnv

from multiagent.core import GameOver, TurnBasedTextGame, turn_based_env, turn_based_parallel_env
from multiagent.parsing import candidates, last_match
from multiagent.tictactoe.board import EMPTY, Board, square_of

__all__ = ["env", "max_cycles", "parallel_env", "raw_env"]

#: Default ``max_cycles``: far more than a game needs, so only endless retries reach it.
max_cycles = 100

# Each starts with the character it needs and then looks behind it ("not after a letter or a
# digit"), so the regex engine skips to candidates instead of trying every position.
_COORD = re.compile(r"([abcABC])(?<![A-Za-z0-9][abcABC])\s?([1-3])(?![0-9])")
# A digit glued to a letter ("d4", "x3") is a bad coordinate or a word, not a square number.
_NUMBER = re.compile(r"[0-9](?<![A-Za-z0-9][0-9])[0-9]{0,8}(?![0-9])")
# Exact answers skip the regexes (the common case for bots and well-behaved models).
_EXACT: dict[str, int] = {str(i): i for i in range(1, 10)}
_EXACT.update({f"{c}{r}": square_of(c, r) for c in "abcABC" for r in (1, 2, 3)})
_MARK = ("X", "O")
_INDEX = {"player_0": 0, "player_1": 1}
_HOW = "Answer with a square number 1-9, or a coordinate such as b2 (columns a-c, rows 1-3)."


def _read_square(text: str) -> int | None:
    """The square named in the first candidate part that names one: a coordinate, else a number."""
    for part in candidates(text):
        coord = last_match(_COORD, part)
        if coord is not None:
            column, row = coord.groups()
            return square_of(column, int(row))
        number = last_match(_NUMBER, part)
        if number is not None:
            return int(number.group())
    return None


class raw_env(TurnBasedTextGame[int]):
    """Tic-tac-toe, unwrapped. See the module docstring for rules, observations and rewards.

    Args:
        max_retries: Invalid answers allowed per turn before the next one forfeits (None: no limit).
        forfeit_penalty: Reward of a player that forfeits (its opponent gets +1).
        max_cycles: Cycles (one turn per player) before truncation.
        steps_per_cycle: See :class:`~multiagent.core.TurnBasedTextGame`.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an answer that are read (default 32,768); a longer
            action is cut, with a note in the observation (``None``: no cap).
    """

    metadata: ClassVar[dict[str, Any]] = {**TurnBasedTextGame.metadata, "name": "tictactoe_v0"}
    players = ("player_0", "player_1")
    description = "Tic-tac-toe: three in a row on a 3x3 grid."
    default_max_cycles = max_cycles
    forfeit_opponent_reward = 1.0

    def _new_game(self, options: dict[str, Any] | None) -> str:
        self.board = Board()
        self._last_move = ""
        return "player_0"

    def _legal_moves(self, agent: str) -> list[int]:
        return self.board.legal_moves()

    def _interpret(self, agent: str, text: str) -> tuple[int | None, str]:
        square = _EXACT.get(text.strip())
        if square is None:
            square = _read_square(text)
            if square is None:
                return None, "no square found in it"
        if not 1 <= square <= 9:
            return None, f"{square} is not a square (squares are 1-9)"
        if self.board.cells[square - 1] != EMPTY:
            return None, f"square {square} is already taken"
        return square, ""

    def _apply_move(self, agent: str, move: int) -> GameOver | None:
        index = _INDEX[agent]
        self.board.play(move, index + 1)
        self._last_move = f"{_MARK[index]} ({agent}) played {move}."
        if self.board.winner():
            other = self.possible_agents[1 - index]
            return GameOver({agent: 1.0, other: -1.0}, f"{_MARK[index]} ({agent}) wins with three in a row.")
        if self.board.is_full():
            return GameOver(dict.fromkeys(self.possible_agents, 0.0), "The board is full: a draw.")
        return None

    def _observation_text(self, agent: str) -> str:
        index = _INDEX[agent]
        head = f"Tic-tac-toe. You are {_MARK[index]} ({agent}).\n{self.board.text()}\n"
        if self._last_move:
            head += self._last_move + "\n"
        if self.game_over:
            return head + "Game over. " + self.result
        if agent != self.agent_selection:
            return head + f"Waiting for {_MARK[1 - index]} ({self.agent_selection}) to move."
        moves = ", ".join(map(str, self.infos[agent]["legal_moves"]))
        return head + f"Your turn. Legal moves: {moves}.\n{_HOW}"

    def _board_text(self) -> str:
        status = self.result if self.game_over else f"{self.agent_selection} to move."
        return f"{self.board.text()}\n{status}"


def env(**kwargs: Any) -> AECEnv:
    """Tic-tac-toe with PettingZoo's order-enforcing wrapper; ``kwargs`` go to :class:`raw_env`."""
    return turn_based_env(raw_env, **kwargs)


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """The turn-based parallel view (only the player to move is played each step)."""
    return turn_based_parallel_env(raw_env, **kwargs)
