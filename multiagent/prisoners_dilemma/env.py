"""The prisoner's dilemma env: :class:`PrisonersDilemmaEnv`, parallel native, with cheap talk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS
from multiagent.parallel_core import IteratedTextGame, ParsedMove, RoundRecord
from multiagent.prisoners_dilemma.logic import ALIASES, MOVES, PayoffMatrix, extract_message, without_message

__all__ = ["PrisonersDilemmaEnv"]


class PrisonersDilemmaEnv(IteratedTextGame):
    """Iterated prisoner's dilemma with messages; see :mod:`multiagent.prisoners_dilemma_v0`.

    Args:
        rounds: Rounds per game (default 10).
        payoffs: A :class:`PayoffMatrix` or a mapping with keys ``temptation``, ``reward``,
            ``punishment``, ``sucker`` (defaults 5, 3, 1, 0).
        max_message_chars: Longest message passed on (longer ones are cut).
        max_action_chars: Characters of an answer that are read (default 32,768); a longer
            action is cut, with a note in the observation (``None``: no cap).
        **kwargs: ``max_cycles``, ``max_retries``, ``forfeit_penalty``, ``history_window``,
            ``render_mode`` (see :class:`~multiagent.parallel_core.IteratedTextGame`).

    Example:
        >>> env = PrisonersDilemmaEnv(rounds=2)
        >>> _ = env.reset(seed=0)
        >>> observations, rewards, *_ = env.step(
        ...     {"player_0": "<message>Trust me.</message> cooperate", "player_1": "defect"}
        ... )
        >>> rewards
        {'player_0': 0.0, 'player_1': 5.0}
        >>> 'The opponent said: "Trust me."' in observations["player_1"]
        True
    """

    metadata: ClassVar[dict[str, Any]] = {**IteratedTextGame.metadata, "name": "prisoners_dilemma_v0"}
    title = "Prisoner's dilemma"
    moves = MOVES
    aliases = ALIASES

    def __init__(
        self,
        *,
        rounds: int | None = None,
        payoffs: PayoffMatrix | Mapping[str, float] | None = None,
        max_message_chars: int = 300,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
        **kwargs: Any,
    ):
        super().__init__(rounds=rounds, max_action_chars=max_action_chars, **kwargs)
        if payoffs is None:
            payoffs = PayoffMatrix()
        elif isinstance(payoffs, Mapping):
            unknown = set(payoffs) - {"temptation", "reward", "punishment", "sucker"}
            if unknown:
                raise ValueError(
                    f"Unknown payoff key(s) {sorted(unknown)}; expected temptation, reward, punishment, sucker"
                )
            payoffs = PayoffMatrix(**payoffs)
        elif not isinstance(payoffs, PayoffMatrix):
            raise ValueError(f"Expected `payoffs` to be a PayoffMatrix or a mapping, got {payoffs!r}")
        if (
            not isinstance(max_message_chars, int)
            or isinstance(max_message_chars, bool)
            or max_message_chars < 0
        ):
            raise ValueError(f"Expected `max_message_chars` to be an int >= 0, got {max_message_chars!r}")
        self.payoffs = payoffs
        self.max_message_chars = max_message_chars
        m = payoffs
        self.rules = (
            "Both players choose at once: cooperate or defect. Payoffs per round: both cooperate "
            f"{m.reward:g} each; both defect {m.punishment:g} each; a defector against a cooperator gets "
            f"{m.temptation:g} and the cooperator {m.sucker:g}. You may add a message for the other "
            "player in <message>...</message>; they see it with your move after the round."
        )

    def move_example(self) -> str:
        return "<message>...</message><move>cooperate</move>"

    def parse_action(self, agent: str, text: str) -> tuple[ParsedMove, str]:
        parsed, _ = super().parse_action(agent, without_message(text))
        message = extract_message(text, self.max_message_chars) if parsed.move is not None else ""
        return parsed, message

    def score_round(self, moves: Mapping[str, str]) -> dict[str, float]:
        a, b = moves["player_0"], moves["player_1"]
        return {"player_0": self.payoffs.payoff(a, b), "player_1": self.payoffs.payoff(b, a)}

    def last_round_text(self, agent: str, record: RoundRecord) -> str:
        text = super().last_round_text(agent, record)
        said = record.messages.get(self._other(agent), "")
        return f'{text}\nThe opponent said: "{said}"' if said else text
