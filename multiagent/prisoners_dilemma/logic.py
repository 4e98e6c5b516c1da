"""Prisoner's dilemma rules, apart from the env: the payoff matrix and how a reply is read."""

from __future__ import annotations

from dataclasses import dataclass

from multiagent.parsing import clip_message, tag_pattern

__all__ = ["ALIASES", "MOVES", "PayoffMatrix", "extract_message", "without_message"]

MOVES: tuple[str, ...] = ("cooperate", "defect")
ALIASES: dict[str, str] = {
    "cooperate": "cooperate",
    "cooperation": "cooperate",
    "coop": "cooperate",
    "c": "cooperate",
    "defect": "defect",
    "defection": "defect",
    "betray": "defect",
    "d": "defect",
}
"""Accepted spellings (lower case) of each move."""

_MESSAGE = tag_pattern("message")
_MOVE_TAG = tag_pattern("move")
_LONGEST_ALIAS = max(map(len, ALIASES))
_STRIP = " \t\r\n.,;:!?\"'`*()[]{}<>"


@dataclass(frozen=True)
class PayoffMatrix:
    """The four payoffs of the prisoner's dilemma (defaults: the classic 5, 3, 1, 0).

    Example:
        >>> m = PayoffMatrix()
        >>> m.payoff("defect", "cooperate"), m.payoff("cooperate", "cooperate"), m.is_dilemma
        (5.0, 3.0, True)
    """

    temptation: float = 5.0
    """Defect while the other cooperates."""
    reward: float = 3.0
    """Both cooperate."""
    punishment: float = 1.0
    """Both defect."""
    sucker: float = 0.0
    """Cooperate while the other defects."""

    def __post_init__(self) -> None:
        for name in ("temptation", "reward", "punishment", "sucker"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"Expected payoff `{name}` to be a number, got {value!r}")
            object.__setattr__(self, name, float(value))

    @property
    def is_dilemma(self) -> bool:
        """``T > R > P > S`` and ``2R > T + S``: defecting dominates, yet mutual cooperation pays most."""
        t, r, p, s = self.temptation, self.reward, self.punishment, self.sucker
        return t > r > p > s and 2 * r > t + s

    def payoff(self, move: str, other: str) -> float:
        """The payoff of ``move`` against ``other`` (each ``"cooperate"`` or ``"defect"``)."""
        if move not in MOVES or other not in MOVES:
            raise ValueError(f"Expected moves among {MOVES}, got {move!r} and {other!r}")
        if move == "cooperate":
            return self.reward if other == "cooperate" else self.sucker
        return self.temptation if other == "cooperate" else self.punishment


def extract_message(text: str, max_chars: int) -> str:
    """The cheap-talk message in a reply: the ``<message>`` tag's content if there is one, else
    the reply without its ``<move>`` tag; empty when that leaves only a move. Whitespace runs
    collapse to one space; the result is cut to ``max_chars``.

    Example:
        >>> extract_message("<message>Let's both cooperate.</message><move>cooperate</move>", 100)
        "Let's both cooperate."
        >>> extract_message("I trust you. <move>C</move>", 100), extract_message("defect", 100)
        ('I trust you.', '')
    """
    message = _MESSAGE.last(text)
    if message is None:
        message = _MOVE_TAG.sub(" ", text)
        bare = message.strip(_STRIP)
        # Lower-casing never shortens a string: a long reply is no bare move, skip copying it.
        if len(bare) <= _LONGEST_ALIAS and bare.lower() in ALIASES:
            return ""
    return clip_message(message, max_chars)


def without_message(text: str) -> str:
    """``text`` with its ``<message>`` tags removed, so that a move named in a message does not count.

    Example:
        >>> without_message("<message>I never defect</message> cooperate")
        '  cooperate'
    """
    return _MESSAGE.sub(" ", text)
