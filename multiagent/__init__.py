"""multiagent: PettingZoo text games for LLM agents, with bots and self-play.

Importing the package registers every game in PettingZoo's registry under the ``tinker``
namespace, so PettingZoo's own ``make`` builds them::

    >>> import pettingzoo
    >>> import multiagent
    >>> env = pettingzoo.make("aec", "tinker/tictactoe_v0")
    >>> env.reset(seed=0)
    >>> env.agent_selection
    'player_0'

Each game is also a module in PettingZoo style (``multiagent.tictactoe_v0.env()``,
``raw_env``, ``parallel_env()``, ``max_cycles``); its docstring documents the game.
"""

from __future__ import annotations

import importlib.util

import pettingzoo
from pettingzoo.env_registry.exceptions import PettingZooRegistryError

from multiagent.core import GameOver, TextGameWrapper, TurnBasedTextGame

__version__ = "0.1.0"

__all__ = [
    "GAMES",
    "GameOver",
    "TextGameWrapper",
    "TurnBasedTextGame",
    "__version__",
    "list_games",
    "register_all",
]

#: Every game: id -> (module, native API "aec" or "parallel", one-line description).
GAMES: dict[str, tuple[str, str, str]] = {
    "tictactoe_v0": ("multiagent.tictactoe_v0", "aec", "Tic-tac-toe: three in a row on a 3x3 grid."),
    "connect_four_v0": ("multiagent.connect_four_v0", "aec", "Connect four: four in a line on a 6x7 board."),
    "kuhn_poker_v0": (
        "multiagent.kuhn_poker_v0",
        "aec",
        "Kuhn poker: one hidden card each from J, Q, K and one betting round.",
    ),
    "negotiation_v0": (
        "multiagent.negotiation_v0",
        "aec",
        "Negotiation: split a pool of items with private values over alternating offers and messages.",
    ),
    "rock_paper_scissors_v0": (
        "multiagent.rock_paper_scissors_v0",
        "parallel",
        "Iterated rock-paper-scissors with the history of rounds.",
    ),
    "prisoners_dilemma_v0": (
        "multiagent.prisoners_dilemma_v0",
        "parallel",
        "Iterated prisoner's dilemma with a cheap-talk message each round.",
    ),
}


def _registered(kind: str, env_id: str) -> bool:
    try:
        pettingzoo.spec(kind, env_id)  # type: ignore[arg-type]
    except PettingZooRegistryError:
        return False
    return True


def register_all() -> None:
    """Register every game as ``tinker/<id>`` for both ``"aec"`` and ``"parallel"`` (idempotent).

    Entry points are strings (``"multiagent.tictactoe_v0:env"``), so a game's module is
    imported only when it is made. Native parallel games are turned into AEC by their module's
    ``env()`` (PettingZoo's ``parallel_to_aec``); turn-based AEC games get the turn-based
    parallel view from their ``parallel_env()``.
    """
    for game, (module, _, _) in GAMES.items():
        env_id = f"tinker/{game}"
        for kind, attr in (("aec", "env"), ("parallel", "parallel_env")):
            if not _registered(kind, env_id):
                pettingzoo.register(kind, env_id, entry_point=f"{module}:{attr}")  # type: ignore[call-overload]


def list_games() -> list[tuple[str, str]]:
    """``(id, description)`` of every game whose module is installed, for ``gym-tinker games``.

    Example:
        >>> dict(list_games())["tictactoe_v0"]
        'Tic-tac-toe: three in a row on a 3x3 grid.'
    """
    return [
        (game, description)
        for game, (module, _, description) in GAMES.items()
        if importlib.util.find_spec(module) is not None
    ]


register_all()
