"""The self-play league: who plays the learner (:func:`pick_opponent`, :func:`snapshot_pool`), as
which policy (bot and snapshot seats), and how a game scores (:func:`outcome_score`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from executors.training.config import OPPONENT_CATEGORIES

if TYPE_CHECKING:
    from gym_tinker.trajectory import Trajectory

__all__ = [
    "LEARNER",
    "AdapterSeat",
    "BotSeat",
    "InfoTap",
    "forfeited",
    "game_name",
    "outcome_score",
    "pick_opponent",
    "snapshot_pool",
]

LEARNER = "learner"
"""The learner's name in the Elo table."""


def game_name(game: str) -> str:
    """The bare game id (a key of :data:`multiagent.GAMES`) of ``game``, with or without ``tinker/``.

    Raises:
        ValueError: not a known game.

    >>> game_name("tinker/tictactoe_v0"), game_name("kuhn_poker_v0")
    ('tictactoe_v0', 'kuhn_poker_v0')
    """
    from multiagent import GAMES

    name = game.removeprefix("tinker/")
    if name not in GAMES:
        raise ValueError(f"Unknown game {game!r}; expected one of {sorted(GAMES)} (optionally tinker/...)")
    return name


def pick_opponent(
    weights: Mapping[str, float],
    snapshots: Sequence[str],
    bots: Sequence[str],
    *,
    seed: int,
    step: int,
    group: int,
) -> tuple[str, str]:
    """Draw a group's opponent ``(category, name)``: the same for the same ``(seed, step, group)``.

    Empty categories are skipped and the weights renormalised (as in :class:`multiagent.league.League`);
    ``latest`` is named ``"learner"``.

    Raises:
        ValueError: every category with a positive weight is empty.

    >>> pick_opponent({"bots": 1.0}, [], ["random"], seed=0, step=3, group=7)
    ('bots', 'random')
    >>> a = pick_opponent({"latest": 1, "bots": 1}, [], ["random"], seed=0, step=3, group=7)
    >>> a == pick_opponent({"latest": 1, "bots": 1}, [], ["random"], seed=0, step=3, group=7)
    True
    """
    import numpy as np

    pools = {"latest": [LEARNER], "snapshots": list(snapshots), "bots": list(bots)}
    categories = [c for c in OPPONENT_CATEGORIES if pools[c] and weights.get(c, 0.0) > 0]
    if not categories:
        raise ValueError(
            f"No opponent to draw: weights {dict(weights)}, snapshots {list(snapshots)}, bots {list(bots)}"
        )
    rng = np.random.default_rng([int(seed), int(step), int(group)])
    p = np.array([weights[c] for c in categories], dtype=float)
    category = categories[int(rng.choice(len(categories), p=p / p.sum()))]
    pool = pools[category]
    return category, pool[int(rng.integers(len(pool)))]


def snapshot_pool(step: int, every: int, keep: int, existing: Sequence[int] | None = None) -> list[int]:
    """Snapshot steps in the opponent pool at global step ``step``: the last ``keep`` of ``0, every, 2*every, ...``.

    ``existing`` (steps with a saved snapshot) filters the schedule when given.

    >>> snapshot_pool(25, 10, 2), snapshot_pool(25, 10, 5, existing=[0, 20])
    ([10, 20], [0, 20])
    """
    scheduled = list(range(0, step + 1, every))
    if existing is not None:
        have = set(existing)
        scheduled = [s for s in scheduled if s in have]
    return scheduled[-keep:]


def outcome_score(trajectory: Trajectory, others: Sequence[Trajectory]) -> float:
    """The learner seat's game score: 1 win, 0.5 draw, 0 loss (see :mod:`executors.training.selfplay`).

    >>> from gym_tinker.trajectory import Trajectory, Turn
    >>> def seat(agent, reward): return Trajectory(turns=(Turn("o", "a", reward),), env_id="g", agent=agent)
    >>> outcome_score(seat("player_0", 1.0), [seat("player_1", -1.0)]), outcome_score(seat("player_0", -1.0), [])
    (1.0, 0.0)
    """
    if trajectory.stop_reason == "token_budget":
        return 0.0
    mine = float(trajectory.total_reward or 0.0)
    best = max(float(t.total_reward or 0.0) for t in others) if others else -mine
    return 1.0 if mine > best else 0.5 if mine == best else 0.0


def forfeited(trajectory: Trajectory) -> bool:
    return f"{trajectory.agent} forfeits" in str(trajectory.metadata.get("result", ""))


# --- seats: bots and snapshots as rollout_games policies ---------------------------------------


class InfoTap:
    """A game factory whose envs record ``infos[agent]`` by observation text, so that bots get their info."""

    def __init__(self, module: Any, game_kwargs: Mapping[str, Any], name: str) -> None:
        self.module, self.game_kwargs, self.__name__ = module, dict(game_kwargs), name
        self.infos: dict[str, dict[str, Any]] = {}

    def __call__(self) -> Any:
        return TappedGame(self.module.env(**self.game_kwargs), self.infos)


class TappedGame:
    def __init__(self, env: Any, infos: dict[str, dict[str, Any]]) -> None:
        self._env, self._infos = env, infos

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def observe(self, agent: str) -> Any:
        observation = self._env.observe(agent)
        self._infos[str(observation)] = dict(self._env.infos.get(agent, {}))
        return observation


class BotSeat:
    """A bot ``(observation, info) -> move`` as a rollout policy over conversations."""

    def __init__(self, bot: Any, tap: InfoTap) -> None:
        self.bot, self.tap = bot, tap

    def __call__(self, conversations: list[list[dict[str, Any]]]) -> list[str]:
        out = []
        for conversation in conversations:
            observation = str(conversation[-1]["content"])
            out.append(str(self.bot(observation, self.tap.infos.get(observation, {}))))
        return out


class AdapterSeat:
    """A token sampler that generates through one named LoRA adapter of an :class:`HFSampler`."""

    def __init__(self, sampler: Any, adapter: str) -> None:
        self.sampler, self.adapter, self.renderer = sampler, adapter, sampler.renderer

    def generate(self, prompt_ids: Any, params: Any) -> Any:
        return self.sampler.generate(prompt_ids, params, adapter=self.adapter)
