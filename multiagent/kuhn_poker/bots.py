"""Kuhn poker bots: the Nash equilibrium strategies (the one-parameter family for player 0)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from multiagent.kuhn_poker.game import CARDS

__all__ = ["NashBot", "nash_policy", "read_state"]

_CARD = re.compile(r"^Your card: ([JQK])\.$", re.MULTILINE)
_ME = re.compile(r"You are (player_[01])\.")
_BETTING = re.compile(r"^Betting so far: (.*)\.$", re.MULTILINE)
_ACTION = re.compile(r"\b(checks|bets|calls|folds)\b")


def read_state(observation: str) -> tuple[int, str, tuple[str, ...]]:
    """Position (0 or 1), own card and the betting so far, read from a Kuhn poker observation.

    Example:
        >>> from multiagent import kuhn_poker_v0
        >>> env = kuhn_poker_v0.env(); env.reset(options={"cards": ("J", "K")}); env.step("bet")
        >>> read_state(env.observe("player_1"))
        (1, 'K', ('bet',))
    """
    card, me, betting = _CARD.search(observation), _ME.search(observation), _BETTING.search(observation)
    if card is None or me is None or betting is None:
        raise ValueError(f"Not a Kuhn poker observation: {observation[:80]!r}")
    history = tuple(verb[:-1] for verb in _ACTION.findall(betting.group(1)))
    return int(me.group(1)[-1]), card.group(1), history


def nash_policy(position: int, card: str, history: tuple[str, ...], alpha: float = 1 / 6) -> dict[str, float]:
    """Probabilities of each legal action under the Nash equilibrium.

    Player 0 (first to act) with parameter ``alpha`` in [0, 1/3]: bets J with probability
    alpha, never bets Q, bets K with probability 3 alpha; facing a bet after checking, folds J,
    calls Q with probability alpha + 1/3, calls K. Player 1: facing a bet, folds J, calls Q with
    probability 1/3, calls K; after a check, bets J with probability 1/3, checks Q, bets K.
    Every equilibrium is worth -1/18 per hand to player 0.

    Example:
        >>> nash_policy(1, "Q", ("bet",))
        {'call': 0.3333333333333333, 'fold': 0.6666666666666667}
    """
    if not 0.0 <= alpha <= 1 / 3:
        raise ValueError(f"Expected alpha in [0, 1/3], got {alpha!r}")
    rank = CARDS.index(card)
    if position == 0 and history == ():
        p = (alpha, 0.0, 3 * alpha)[rank]
        return {"check": 1.0 - p, "bet": p}
    if position == 0 and history == ("check", "bet"):
        p = (0.0, alpha + 1 / 3, 1.0)[rank]
        return {"call": p, "fold": 1.0 - p}
    if position == 1 and history == ("bet",):
        p = (0.0, 1 / 3, 1.0)[rank]
        return {"call": p, "fold": 1.0 - p}
    if position == 1 and history == ("check",):
        p = (1 / 3, 0.0, 1.0)[rank]
        return {"check": 1.0 - p, "bet": p}
    raise ValueError(f"Player {position} does not act after {history!r}")


class NashBot:
    """Plays Kuhn poker's Nash equilibrium (see :func:`nash_policy`), sampling with its own rng.

    Args:
        alpha: Player 0's bluffing parameter, in [0, 1/3].
        seed: Seed of its generator.

    Example:
        >>> from multiagent import kuhn_poker_v0
        >>> env = kuhn_poker_v0.env(); env.reset(options={"cards": ("J", "K")}); env.step("bet")
        >>> NashBot(seed=0)(env.observe("player_1"), env.infos["player_1"])  # always calls with K
        'call'
    """

    def __init__(self, alpha: float = 1 / 6, seed: int | np.random.Generator | None = None):
        nash_policy(0, "J", (), alpha)  # validates alpha
        self.alpha = alpha
        self._rng = np.random.default_rng(seed)

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        if not info.get("legal_moves"):
            return ""
        position, card, history = read_state(observation)
        policy = nash_policy(position, card, history, self.alpha)
        draw, total = self._rng.random(), 0.0
        for action, p in policy.items():
            total += p
            if draw < total:
                return action
        return action
