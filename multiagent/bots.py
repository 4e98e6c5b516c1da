"""Heuristic bots for every game, and `get_bot` to build one by game and name.

A bot is a plain callable ``bot(observation, info) -> action`` that reads what an agent sees
(its text observation and its ``infos[agent]``) and answers text, so it plays in any loop
written for PettingZoo and stands in for a model in self-play.

Games add their bots to :data:`BOTS`, one row per game: bot name -> ``"module:Class"``
(imported on first use). Every bot class takes ``seed`` as a keyword argument.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import numpy as np

__all__ = ["BOTS", "Bot", "RandomLegalBot", "get_bot"]

Bot: TypeAlias = Callable[[str, Mapping[str, Any]], str]
"""``bot(observation, info) -> action``."""

#: game id -> bot name -> "module:Class".
BOTS: dict[str, dict[str, str]] = {
    "tictactoe_v0": {
        "random": "multiagent.bots:RandomLegalBot",
        "minimax": "multiagent.tictactoe.bots:MinimaxBot",
    },
    "connect_four_v0": {
        "random": "multiagent.bots:RandomLegalBot",
        "alphabeta": "multiagent.connect_four.bots:AlphaBetaBot",
    },
    "kuhn_poker_v0": {
        "random": "multiagent.bots:RandomLegalBot",
        "nash": "multiagent.kuhn_poker.bots:NashBot",
    },
    "rock_paper_scissors_v0": {
        "random": "multiagent.bots:RandomLegalBot",
        "frequency": "multiagent.rock_paper_scissors.bots:FrequencyBot",
        "constant": "multiagent.rock_paper_scissors.bots:ConstantBot",
    },
    "prisoners_dilemma_v0": {
        "random": "multiagent.bots:RandomLegalBot",
        "tit_for_tat": "multiagent.prisoners_dilemma.bots:TitForTat",
        "always_cooperate": "multiagent.prisoners_dilemma.bots:AlwaysCooperate",
        "always_defect": "multiagent.prisoners_dilemma.bots:AlwaysDefect",
    },
    "negotiation_v0": {
        "random": "multiagent.bots:RandomLegalBot",
        "negotiator": "multiagent.negotiation.bots:ThresholdNegotiator",
    },
}


class RandomLegalBot:
    """Plays a uniformly random move from ``info["legal_moves"]`` (``""`` when there is none).

    Args:
        seed: Seed of its own generator (same seed, same moves).

    Example:
        >>> bot = RandomLegalBot(seed=0)
        >>> bot("any observation", {"legal_moves": [3, 7]}) in ("3", "7")
        True
        >>> bot("not my turn", {"legal_moves": []})
        ''
    """

    def __init__(self, seed: int | np.random.Generator | None = None):
        self._rng = np.random.default_rng(seed)

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        moves = info.get("legal_moves") or []
        if not moves:
            return ""
        # rng.random() is several times cheaper than rng.integers() per call.
        return str(moves[int(self._rng.random() * len(moves))])


def get_bot(game: str, name: str, seed: int | None = None, **kwargs: Any) -> Bot:
    """Build the bot ``name`` of ``game`` (a key of :data:`BOTS`, e.g. ``"tictactoe_v0"``).

    Example:
        >>> bot = get_bot("tictactoe_v0", "minimax", seed=0)
        >>> bot("", {"legal_moves": []})
        ''
        >>> get_bot("tictactoe_v0", "oracle")
        Traceback (most recent call last):
        ...
        KeyError: "No bot 'oracle' for 'tictactoe_v0'; its bots are ['random', 'minimax']"
    """
    if game not in BOTS:
        raise KeyError(f"No bots for game {game!r}; games with bots are {sorted(BOTS)}")
    if name not in BOTS[game]:
        raise KeyError(f"No bot {name!r} for {game!r}; its bots are {list(BOTS[game])}")
    module, _, attr = BOTS[game][name].partition(":")
    factory = getattr(importlib.import_module(module), attr)
    return factory(seed=seed, **kwargs)  # type: ignore[no-any-return]
