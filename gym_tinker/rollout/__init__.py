"""The batched rollout engine: many text envs or games, one policy call per turn, token-exact trajectories.

* :func:`rollout`: single-agent envs (a list of envs or a Gymnasium vector env), one episode
  per seed, every active conversation sampled in one batch per turn.
* :func:`rollout_groups`: GRPO groups, ``G`` rollouts of each seed.
* :func:`rollout_games`: PettingZoo text games from ``multiagent``, a policy per seat or one
  shared policy, per-agent trajectories.
* :func:`flatten` and :func:`to_dataset`: trajectories as training rows.
"""

from gym_tinker.rollout.dialogue import Dialogue, jsonable, messages_for_reply
from gym_tinker.rollout.engine import rollout, rollout_groups
from gym_tinker.rollout.export import (
    FlatTrajectory,
    flatten,
    to_dataset,
    to_messages,
    to_records,
    to_trl_batch,
)
from gym_tinker.rollout.games import rollout_games
from gym_tinker.rollout.results import RolloutGroups, RolloutResult, RolloutStats
from gym_tinker.rollout.sampling import PolicyCallError, PolicyRunner, is_token_sampler

__all__ = [
    "Dialogue",
    "FlatTrajectory",
    "PolicyCallError",
    "PolicyRunner",
    "RolloutGroups",
    "RolloutResult",
    "RolloutStats",
    "flatten",
    "is_token_sampler",
    "jsonable",
    "messages_for_reply",
    "rollout",
    "rollout_games",
    "rollout_groups",
    "to_dataset",
    "to_messages",
    "to_records",
    "to_trl_batch",
]
