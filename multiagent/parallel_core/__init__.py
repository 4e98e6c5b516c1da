"""`IteratedTextGame`: the base of parallel-native iterated two-player text games.

Every round both players answer at once; when both have a legal move the round is scored and
revealed. A game says what the moves are and how a round scores; this base does the rest:

* **Retries and forfeits.** An answer that is not a legal move is never an exception: the
  player sees why in its next observation and answers again (``max_retries`` times per
  round). A player whose legal move is in is *locked* (``infos[agent]["locked"]``): its
  answers are ignored until the round resolves, so it cannot change its mind after seeing the
  other's mistake. Out of retries, a player forfeits the round (``forfeit_penalty``), not the
  game: a game always lasts ``rounds`` rounds unless ``max_cycles`` cuts it.
* **Limits.** ``rounds`` ends the game by its rules (``terminations``); ``max_cycles`` counts
  ``step`` calls, retries included, and cuts the game (``truncations``). By default it is
  ``rounds * (max_retries + 1)``, the most steps a game can take.
* **Observations** are :class:`~gym_tinker.spaces.TextObservation` strings: round, score,
  earlier rounds from the player's side, last round, any error, legal moves. ``infos[agent]``
  has ``legal_moves`` (empty while locked and after the game), ``retries_left``, ``round``,
  ``rounds``, ``locked``, ``history`` (``(own move, opponent's move)`` pairs, ``None`` for a
  forfeit) and ``error`` after a rejected answer; shared keys mean what they mean in
  :class:`~multiagent.core.TurnBasedTextGame`.
* **Rewards** are each round's payoffs, on the step that resolves the round.
"""

from multiagent.parallel_core.choice import ParsedMove, choice_pattern, parse_choice
from multiagent.parallel_core.game import IteratedTextGame, ParallelStep, RoundRecord, aec_from_parallel

__all__ = [
    "IteratedTextGame",
    "ParallelStep",
    "ParsedMove",
    "RoundRecord",
    "aec_from_parallel",
    "choice_pattern",
    "parse_choice",
]
