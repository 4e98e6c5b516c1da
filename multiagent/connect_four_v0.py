"""Connect four as a text game: an AEC environment for two players answering in free text.

Rules
    Two players, ``player_0`` (X, moves first) and ``player_1`` (O), take turns dropping a
    piece into one of 7 columns of a 6-row board; it falls to the lowest free cell. Four pieces
    in a line (horizontal, vertical or diagonal) win; a full board without one is a draw.

Observation
    A :class:`~gym_tinker.spaces.TextObservation` (a ``str``): the player's mark, the board
    (top row first, column numbers on top), the opponent's last move, whose turn it is, the
    legal columns, how to answer, and the reason the last answer was rejected, if it was.
    ``infos[agent]["legal_moves"]`` lists the open columns (1-7) as ints for the player to move.

Action
    Any string, read leniently: ``"4"``, ``"column 4"``, ``"<move>4</move>"``, ``"[4]"``. The
    parts of the answer are tried from the most explicit (tag, ``\\boxed{}``, brackets, then
    the whole text) and the last number of the first part that has one is the column; only
    ASCII digits count. An unreadable answer, a column outside 1-7 or a full
    column costs a retry; after ``max_retries`` retries in one turn the next bad answer forfeits.
    At most ``max_action_chars`` characters of an answer are read (default 32,768): a longer
    action is cut, with a note in the observation (``None``: no cap); only the cut text is
    parsed and kept. Parsing takes time linear in the answer's length.

Rewards
    Win +1, loss -1, draw 0. A forfeit gives the offender ``forfeit_penalty`` (default -1) and
    the opponent +1. Truncation after ``max_cycles`` cycles gives 0.

Parallel view
    ``parallel_env()`` is PettingZoo's turn-based conversion: each step every live agent sends
    an action and only the player to move is played; ``max_cycles`` counts parallel steps.

Versions
    * v0: first version.

Example:
    >>> from multiagent import connect_four_v0
    >>> env = connect_four_v0.env()
    >>> env.reset(seed=0)
    >>> env.step("Middle column: <move>4</move>")
    >>> print(env.observe("player_1"))
    Connect four. You are O (player_1).
     1 2 3 4 5 6 7
    |. . . . . . .|
    |. . . . . . .|
    |. . . . . . .|
    |. . . . . . .|
    |. . . . . . .|
    |. . . X . . .|
    X (player_0) dropped in column 4.
    Your turn. Legal moves: 1, 2, 3, 4, 5, 6, 7.
    Answer with a column number 1-7.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pettingzoo import AECEnv, ParallelEnv

from multiagent.connect_four.board import COLUMNS, Board
from multiagent.core import GameOver, TurnBasedTextGame, turn_based_env, turn_based_parallel_env
from multiagent.parsing import candidates, last_match

__all__ = ["env", "max_cycles", "parallel_env", "raw_env"]

#: Default ``max_cycles``: a full board is 21 cycles; the rest leaves room for retries.
max_cycles = 100

# A digit first, then "not after a digit": the regex engine skips to digits (same matches as a
# leading lookbehind).
_NUMBER = re.compile(r"[0-9](?<![0-9][0-9])[0-9]{0,8}(?![0-9])")
_EXACT = {str(c): c for c in range(1, COLUMNS + 1)}
_MARK = ("X", "O")
_INDEX = {"player_0": 0, "player_1": 1}


class raw_env(TurnBasedTextGame[int]):
    """Connect four, unwrapped. See the module docstring for rules, observations and rewards.

    Args:
        max_retries: Invalid answers allowed per turn before the next one forfeits (None: no limit).
        forfeit_penalty: Reward of a player that forfeits (its opponent gets +1).
        max_cycles: Cycles (one turn per player) before truncation.
        steps_per_cycle: See :class:`~multiagent.core.TurnBasedTextGame`.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        max_action_chars: Characters of an answer that are read (default 32,768); a longer
            action is cut, with a note in the observation (``None``: no cap).
    """

    metadata: ClassVar[dict[str, Any]] = {**TurnBasedTextGame.metadata, "name": "connect_four_v0"}
    players = ("player_0", "player_1")
    description = "Connect four: four in a line on a 6x7 board."
    default_max_cycles = max_cycles
    forfeit_opponent_reward = 1.0

    def _new_game(self, options: dict[str, Any] | None) -> str:
        self.board = Board()
        self._last_move = ""
        return "player_0"

    def _legal_moves(self, agent: str) -> list[int]:
        return self.board.legal_moves()

    def _interpret(self, agent: str, text: str) -> tuple[int | None, str]:
        column = _EXACT.get(text.strip())
        if column is None:
            column = next(
                (int(found.group()) for part in candidates(text) if (found := last_match(_NUMBER, part))),
                None,
            )
            if column is None:
                return None, "no column number found in it"
        if not 1 <= column <= COLUMNS:
            return None, f"{column} is not a column (columns are 1-{COLUMNS})"
        if not self.board.can_drop(column):
            return None, f"column {column} is full"
        return column, ""

    def _apply_move(self, agent: str, move: int) -> GameOver | None:
        index = _INDEX[agent]
        self.board.drop(move)
        self._last_move = f"{_MARK[index]} ({agent}) dropped in column {move}."
        if self.board.winner():
            other = self.possible_agents[1 - index]
            return GameOver({agent: 1.0, other: -1.0}, f"{_MARK[index]} ({agent}) wins with four in a line.")
        if self.board.is_full():
            return GameOver(dict.fromkeys(self.possible_agents, 0.0), "The board is full: a draw.")
        return None

    def _observation_text(self, agent: str) -> str:
        index = _INDEX[agent]
        head = f"Connect four. You are {_MARK[index]} ({agent}).\n{self.board.text()}\n"
        if self._last_move:
            head += self._last_move + "\n"
        if self.game_over:
            return head + "Game over. " + self.result
        if agent != self.agent_selection:
            return head + f"Waiting for {_MARK[1 - index]} ({self.agent_selection}) to move."
        moves = ", ".join(map(str, self.infos[agent]["legal_moves"]))
        return head + f"Your turn. Legal moves: {moves}.\nAnswer with a column number 1-{COLUMNS}."

    def _board_text(self) -> str:
        status = self.result if self.game_over else f"{self.agent_selection} to move."
        return f"{self.board.text()}\n{status}"


def env(**kwargs: Any) -> AECEnv:
    """Connect four with PettingZoo's order-enforcing wrapper; ``kwargs`` go to :class:`raw_env`."""
    return turn_based_env(raw_env, **kwargs)


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """The turn-based parallel view (only the player to move is played each step)."""
    return turn_based_parallel_env(raw_env, **kwargs)
