"""Prisoner's dilemma bots: plain callables ``(observation, info) -> reply``.

They read ``info`` (``legal_moves``, and ``history`` as ``(own, opponent)`` pairs, ``None``
for a forfeited round), and answer ``""`` while their move is locked. The random bot is
:class:`multiagent.bots.RandomLegalBot`; every bot takes ``seed`` (these deterministic ones
ignore it) so that :func:`multiagent.bots.get_bot` can build them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["AlwaysCooperate", "AlwaysDefect", "TitForTat"]


class TitForTat:
    """Cooperates first, then does what the opponent did last round (a forfeit counts as defect).

    Example:
        >>> bot = TitForTat()
        >>> bot("", {"legal_moves": ["cooperate", "defect"], "history": ()})
        '<message>I cooperate as long as you do.</message><move>cooperate</move>'
        >>> bot("", {"legal_moves": ["cooperate", "defect"], "history": (("cooperate", "defect"),)})
        '<message>You defected, so I defect.</message><move>defect</move>'
    """

    def __init__(self, seed: int | None = None):
        """``seed`` is accepted for :func:`~multiagent.bots.get_bot`; the bot is deterministic."""

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        if not info.get("legal_moves"):
            return ""
        history = info.get("history", ())
        if history and history[-1][1] != "cooperate":
            return "<message>You defected, so I defect.</message><move>defect</move>"
        return "<message>I cooperate as long as you do.</message><move>cooperate</move>"


class AlwaysCooperate:
    """Always cooperates.

    Example:
        >>> AlwaysCooperate()("", {"legal_moves": ["cooperate", "defect"]})
        'cooperate'
    """

    def __init__(self, seed: int | None = None):
        """``seed`` is accepted for :func:`~multiagent.bots.get_bot`; the bot is deterministic."""

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        return "cooperate" if info.get("legal_moves") else ""


class AlwaysDefect:
    """Always defects.

    Example:
        >>> AlwaysDefect()("", {"legal_moves": ["cooperate", "defect"]})
        'defect'
    """

    def __init__(self, seed: int | None = None):
        """``seed`` is accepted for :func:`~multiagent.bots.get_bot`; the bot is deterministic."""

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        return "defect" if info.get("legal_moves") else ""
