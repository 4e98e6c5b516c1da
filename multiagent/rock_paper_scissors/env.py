"""The rock-paper-scissors env: :class:`RockPaperScissorsEnv`, a parallel-native iterated game."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from multiagent.parallel_core import IteratedTextGame
from multiagent.rock_paper_scissors.logic import ALIASES, MOVES, round_payoff

__all__ = ["RockPaperScissorsEnv"]


class RockPaperScissorsEnv(IteratedTextGame):
    """Iterated rock-paper-scissors with text moves; see :mod:`multiagent.rock_paper_scissors_v0`.

    Args:
        rounds: Rounds per game (default 10).
        win: Payoff of winning a round.
        draw: Payoff of a drawn round.
        loss: Payoff of losing a round.
        max_action_chars: Characters of an answer that are read (default 32,768); a longer
            action is cut, with a note in the observation (``None``: no cap).
        **kwargs: ``max_cycles``, ``max_retries``, ``forfeit_penalty``, ``history_window``,
            ``render_mode`` (see :class:`~multiagent.parallel_core.IteratedTextGame`).

    Example:
        >>> env = RockPaperScissorsEnv(rounds=3)
        >>> observations, infos = env.reset(seed=0)
        >>> infos["player_0"]["legal_moves"]
        ['rock', 'paper', 'scissors']
        >>> _, rewards, *_ = env.step({"player_0": "rock", "player_1": "I play scissors"})
        >>> rewards
        {'player_0': 1.0, 'player_1': -1.0}
    """

    metadata: ClassVar[dict[str, Any]] = {**IteratedTextGame.metadata, "name": "rock_paper_scissors_v0"}
    title = "Rock-paper-scissors"
    moves = MOVES
    aliases = ALIASES

    def __init__(
        self,
        *,
        rounds: int | None = None,
        win: float = 1.0,
        draw: float = 0.0,
        loss: float = -1.0,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
        **kwargs: Any,
    ):
        super().__init__(rounds=rounds, max_action_chars=max_action_chars, **kwargs)
        self.win, self.draw, self.loss = float(win), float(draw), float(loss)
        self.rules = (
            "Both players choose at once. Rock beats scissors, scissors beats paper, paper beats rock. "
            f"Each round: win {self.win:+g}, draw {self.draw:+g}, loss {self.loss:+g}."
        )

    def score_round(self, moves: Mapping[str, str]) -> dict[str, float]:
        a, b = moves["player_0"], moves["player_1"]
        return {
            "player_0": round_payoff(a, b, self.win, self.draw, self.loss),
            "player_1": round_payoff(b, a, self.win, self.draw, self.loss),
        }

    def score_forfeit(self, moves: Mapping[str, str | None]) -> dict[str, float]:
        # A forfeit loses the round: the other player scores a win.
        return {agent: self.forfeit_penalty if move is None else self.win for agent, move in moves.items()}
