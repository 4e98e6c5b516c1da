"""The iterated prisoner's dilemma with cheap talk: a Parallel text environment for two players.

Rules
    Every round ``player_0`` and ``player_1`` choose at once to cooperate or defect, and may
    send a message. Payoffs per round (configurable; classic defaults): both cooperate
    ``reward`` (3) each, both defect ``punishment`` (1) each, a defector against a cooperator
    gets ``temptation`` (5) and the cooperator ``sucker`` (0). A game lasts ``rounds`` rounds
    (default 10); players are told the horizon.

Cheap talk
    An answer may carry a message: the content of ``<message>...</message>``, or without that
    tag the rest of the answer (minus a ``<move>`` tag; nothing when the answer is only a
    move), read from the answer as cut to ``max_action_chars``. Messages are cut to
    ``max_message_chars`` (default 300) and shown to the other player with the moves once the
    round is resolved, i.e. in its next observation. Words inside a ``<message>`` tag never
    count as the move.

Observation
    A :class:`~gym_tinker.spaces.TextObservation` (a ``str``): the rules and payoffs, the round,
    the score, the earlier rounds from the player's point of view, last round's moves and the
    other player's message, the reason the player's last answer was rejected if it was, and the
    legal moves. ``infos[agent]`` has ``legal_moves`` (empty while locked or after the game),
    ``retries_left``, ``round``, ``rounds``, ``locked``, ``history`` (a tuple of ``(own move,
    opponent's move)``, ``None`` for a forfeited round) and ``error`` after a rejected answer.

Action
    Any string. The move is read leniently from the most explicit part of the answer outside
    ``<message>`` (a ``<move>`` tag, then ``\\boxed{}``, then brackets, then the whole text):
    ``cooperate``/``defect``, ``C``/``D`` alone, ``coop``, ``cooperation``, ``defection``,
    ``betray``; when several are named, the last counts. An answer naming no move costs a retry
    (``max_retries``, default 2 per round); a player whose move is in waits, locked, until the
    other's is. A player out of retries forfeits the round, not the game.
    At most ``max_action_chars`` characters of an answer are read (default 32,768): a longer
    action is cut, with a note in the observation (``None``: no cap); only the cut text is
    parsed and kept. Parsing takes time linear in the answer's length.

Rewards
    Each round's payoff, on the step that resolves it. A forfeited round gives the offender
    ``forfeit_penalty`` (default -1) and the other player 0. The game ends (``terminations``)
    after ``rounds`` rounds; ``max_cycles`` (steps, retries included; default
    ``rounds * (max_retries + 1)``, which never cuts a game) truncates it earlier.

API
    Parallel native. ``env()`` is the AEC form built by PettingZoo's ``parallel_to_aec``, with
    the order-enforcing wrapper; ``raw_env()`` is the same without the wrapper. ``render_mode``
    ``"ansi"`` returns every round so far.

Arguments
    ``rounds=10, payoffs=None`` (a ``PayoffMatrix`` or a dict with keys ``temptation``,
    ``reward``, ``punishment``, ``sucker``), ``max_message_chars=300, max_cycles=None,
    max_retries=2, forfeit_penalty=-1.0, history_window=10, render_mode=None,
    max_action_chars=32768`` (a longer action is cut, with a note in the observation; None: no
    cap).

Versions
    * v0: first version.

Example:
    >>> from multiagent import prisoners_dilemma_v0
    >>> env = prisoners_dilemma_v0.parallel_env(rounds=3, payoffs={"temptation": 4})
    >>> _ = env.reset(seed=0)
    >>> _, rewards, *_ = env.step({"player_0": "D", "player_1": "I cooperate."})
    >>> rewards
    {'player_0': 4.0, 'player_1': 0.0}
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv

from multiagent.parallel_core import aec_from_parallel
from multiagent.prisoners_dilemma.env import PrisonersDilemmaEnv

__all__ = ["env", "max_cycles", "parallel_env", "raw_env"]

max_cycles = 30
"""Default step limit: 10 rounds, each with up to 3 replies."""


def parallel_env(**kwargs: Any) -> PrisonersDilemmaEnv:
    """The native parallel env; keyword arguments as in the module documentation."""
    return PrisonersDilemmaEnv(**kwargs)


def raw_env(**kwargs: Any) -> AECEnv:
    """The AEC form without the order-enforcing wrapper."""
    from pettingzoo.utils import parallel_to_aec

    return parallel_to_aec(PrisonersDilemmaEnv(**kwargs))


def env(**kwargs: Any) -> AECEnv:
    """The AEC form (what PettingZoo's ``env()`` returns for its parallel games)."""
    return aec_from_parallel(PrisonersDilemmaEnv(**kwargs))
