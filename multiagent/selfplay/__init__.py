"""Play matches between policies on any PettingZoo game (AEC or Parallel), many games at once.

A *policy* here is either a plain callable ``(observation, info) -> reply`` (every bot in
this package) or a :class:`BatchPolicy` ``(observations, infos) -> replies`` that answers
many decisions in one call (a sampler). :func:`play_matches` steps every game together: at
each step it gathers the pending decision of every game, calls each batch policy once with
all of its decisions, and applies the replies. A chat policy (:class:`gym_tinker.policy.ChatPolicy`)
becomes a batch policy through :func:`chat_batch_policy`; its completions' token ids and
log-probs are kept in the recorded turns.

Seats rotate: with ``n`` players and ``games`` a multiple of ``n``, each player plays each seat
equally often, and the ``n`` games of a rotation share a seed, so each deal (cards, valuations)
is played from every seat. Results count wins, draws and losses per player and per seat; a
player *wins* a game when its total reward is higher than every other player's.

Agents that have nothing to decide are not asked: where ``info["legal_moves"]`` is present and
empty (a locked move in a parallel game, a turn-based game's waiting player), the env gets
``""`` and no turn is recorded. Rewards are credited to the agent's last recorded turn.
"""

from multiagent.selfplay.matches import play_match, play_matches, rotated_lineups
from multiagent.selfplay.policies import BatchPolicy, Policy, as_batch_policy, batch_policy, chat_batch_policy
from multiagent.selfplay.results import MatchReport, MatchResult, Outcome, PolicyRecord

__all__ = [
    "BatchPolicy",
    "MatchReport",
    "MatchResult",
    "Outcome",
    "Policy",
    "PolicyRecord",
    "as_batch_policy",
    "batch_policy",
    "chat_batch_policy",
    "play_match",
    "play_matches",
    "rotated_lineups",
]
