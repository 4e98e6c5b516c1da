"""Rock-paper-scissors as an iterated text game: a Parallel environment for two players.

Rules
    Every round ``player_0`` and ``player_1`` choose rock, paper or scissors at once. Rock beats
    scissors, scissors beats paper, paper beats rock; the same move is a draw. A game lasts
    ``rounds`` rounds (default 10).

Observation
    A :class:`~gym_tinker.spaces.TextObservation` (a ``str``): the round, the score, the
    earlier rounds from the player's point of view (the last ``history_window``, default 10),
    last round's moves and result, the reason the player's last answer was rejected if it was,
    and the legal moves. ``infos[agent]`` has ``legal_moves`` (empty while the player's move is
    locked in or after the game), ``retries_left``, ``round``, ``rounds``, ``locked``,
    ``history`` (a tuple of ``(own move, opponent's move)``, ``None`` for a forfeited round) and
    ``error`` after a rejected answer.

Action
    Any string. The move is read leniently from the most explicit part of the answer (a
    ``<move>`` tag, then ``\\boxed{}``, then brackets, then the whole text): the whole part
    being a spelling (``"rock"``, ``"R"``, ``"Paper."``), else the last move named in it as a
    word (``"Not rock again; I'll go with paper."`` plays paper). An answer naming no move
    costs a retry (``max_retries``, default 2 per round) and the player answers again; a player
    whose move is in waits, locked, until the other's is. A player out of retries forfeits the
    round, not the game. At most ``max_action_chars`` characters of an answer are read
    (default 32,768): a longer action is cut, with a note in the observation (``None``: no
    cap); only the cut text is parsed and kept. Parsing takes time linear in the answer's length.

Rewards
    Per round: win ``+1``, draw ``0``, loss ``-1`` (``win``/``draw``/``loss``), on the step that
    resolves the round. A forfeited round gives the offender ``forfeit_penalty`` (default -1)
    and the other player a win. The game ends (``terminations``) after ``rounds`` rounds;
    ``max_cycles`` (steps, retries included; default ``rounds * (max_retries + 1)``, which never
    cuts a game) truncates it earlier.

API
    Parallel native. ``env()`` is the AEC form built by PettingZoo's ``parallel_to_aec`` (as
    PettingZoo's own parallel games do), with the order-enforcing wrapper; ``raw_env()``
    is the same without the wrapper. ``render_mode`` ``"ansi"`` returns every round so far.

Arguments
    ``rounds=10, win=1.0, draw=0.0, loss=-1.0, max_cycles=None, max_retries=2,
    forfeit_penalty=-1.0, history_window=10, render_mode=None, max_action_chars=32768`` (a
    longer action is cut, with a note in the observation; None: no cap).

Versions
    * v0: first version.

Example:
    >>> from multiagent import rock_paper_scissors_v0
    >>> env = rock_paper_scissors_v0.parallel_env(rounds=2)
    >>> observations, infos = env.reset(seed=1)
    >>> _, rewards, terminations, _, _ = env.step({"player_0": "<move>paper</move>", "player_1": "rock"})
    >>> rewards["player_0"], terminations["player_0"]
    (1.0, False)
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv

from multiagent.parallel_core import aec_from_parallel
from multiagent.rock_paper_scissors.env import RockPaperScissorsEnv

__all__ = ["env", "max_cycles", "parallel_env", "raw_env"]

max_cycles = 30
"""Default step limit: 10 rounds, each with up to 3 replies."""


def parallel_env(**kwargs: Any) -> RockPaperScissorsEnv:
    """The native parallel env; keyword arguments as in the module documentation."""
    return RockPaperScissorsEnv(**kwargs)


def raw_env(**kwargs: Any) -> AECEnv:
    """The AEC form without the order-enforcing wrapper."""
    from pettingzoo.utils import parallel_to_aec

    return parallel_to_aec(RockPaperScissorsEnv(**kwargs))


def env(**kwargs: Any) -> AECEnv:
    """The AEC form (what PettingZoo's ``env()`` returns for its parallel games)."""
    return aec_from_parallel(RockPaperScissorsEnv(**kwargs))
