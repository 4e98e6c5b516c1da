"""`League`: a pool of learning policies, frozen snapshots and bots that play rated rounds.

A league holds named members of three kinds:

* **learners** (``add(name, policy, frozen=False)``): the policies being trained. Their seats'
  experience comes back from :meth:`League.play_round` as trajectories.
* **snapshots** (``snapshot(name, policy)``): frozen copies of a learner at some point of
  training, kept as opponents so that the learner does not forget how to beat its past selves.
* **bots** (``add(name, policy)``; frozen is the default): fixed opponents such as heuristic
  bots.

Opponents are sampled per learner from three categories with configurable weights (default
``latest`` 0.5, ``snapshots`` 0.3, ``bots`` 0.2): ``latest`` is the learner itself (a mirror
match: both seats learn, the game is not rated), ``snapshots`` a uniformly chosen snapshot,
``bots`` a uniformly chosen bot. Empty categories are skipped and the weights renormalised.
Sampling uses the league's own seeded generator: same seed, same opponents.

Every pairing is played once from each seat with the same game seed, and all games of a round
are played together by :func:`multiagent.selfplay.play_matches`, so a batched learner answers
every game's decision in one call per step. Results update :class:`~multiagent.elo.EloRatings`
(see :mod:`multiagent.elo` for the ratings and their confidence intervals).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pettingzoo import AECEnv, ParallelEnv

from gym_tinker.trajectory import Trajectory
from multiagent.elo import EloRatings
from multiagent.selfplay import BatchPolicy, MatchReport, Policy, play_matches, rotated_lineups

__all__ = ["DEFAULT_WEIGHTS", "League", "LeagueRound", "Member"]

MemberKind = Literal["learner", "snapshot", "bot"]
DEFAULT_WEIGHTS: Mapping[str, float] = {"latest": 0.5, "snapshots": 0.3, "bots": 0.2}
_CATEGORIES = ("latest", "snapshots", "bots")


@dataclass(frozen=True)
class Member:
    """One policy of the league."""

    name: str
    policy: Policy | BatchPolicy
    kind: MemberKind
    parent: str | None = None
    """For a snapshot: the learner it was taken from."""

    @property
    def frozen(self) -> bool:
        return self.kind != "learner"


@dataclass(frozen=True)
class LeagueRound:
    """What :meth:`League.play_round` played."""

    trajectories: list[Trajectory]
    """Every learner seat's experience, ready for training."""
    report: MatchReport
    """All games of the round."""
    opponents: Mapping[str, list[str]]
    """Learner -> the opponents sampled for it, one per pairing."""


class League:
    """A pool of named policies with opponent sampling, Elo ratings and a results table.

    Args:
        env_fn: Makes a fresh two-player game (AEC or Parallel).
        seed: Seed of the league's generator (opponent sampling and game seeds).
        weights: Opponent-category weights, keys among ``latest``, ``snapshots``, ``bots``.
        elo: The ratings to update (a new :class:`~multiagent.elo.EloRatings` by default).

    Example:
        >>> from multiagent import rock_paper_scissors_v0
        >>> from multiagent.rock_paper_scissors.bots import ConstantBot, FrequencyBot
        >>> league = League(lambda: rock_paper_scissors_v0.parallel_env(rounds=5), seed=0)
        >>> _ = league.add("frequency", FrequencyBot(), frozen=False)
        >>> _ = league.add("rock", ConstantBot("rock"))
        >>> played = league.play_round(games=4)
        >>> len(played.trajectories) >= 4, league.table()[0]["name"]
        (True, 'frequency')
    """

    def __init__(
        self,
        env_fn: Callable[[], AECEnv | ParallelEnv],
        *,
        seed: int | None = 0,
        weights: Mapping[str, float] | None = None,
        elo: EloRatings | None = None,
    ):
        weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        unknown = sorted(set(weights) - set(_CATEGORIES))
        if unknown:
            raise ValueError(
                f"Unknown opponent categories {unknown}; expected keys among {list(_CATEGORIES)}"
            )
        for key, value in weights.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"Expected weight {key!r} to be a number >= 0, got {value!r}")
        if not sum(weights.values()) > 0:
            raise ValueError(f"Expected some weight > 0, got {weights}")
        self.env_fn = env_fn
        self.weights = {key: float(weights.get(key, 0.0)) for key in _CATEGORIES}
        self.elo = EloRatings() if elo is None else elo
        self.rng = np.random.default_rng(seed)
        self.rounds_played = 0
        self._members: dict[str, Member] = {}

    # --- members --------------------------------------------------------------------------

    def add(self, name: str, policy: Policy | BatchPolicy, frozen: bool = True) -> Member:
        """Add a bot (``frozen=True``, the default) or a learner (``frozen=False``)."""
        return self._add(Member(name, policy, "bot" if frozen else "learner"))

    def snapshot(self, name: str, policy: Policy | BatchPolicy, of: str | None = None) -> Member:
        """Add a frozen snapshot of learner ``of`` (the only learner when omitted).

        ``policy`` must not change afterwards (pass a copy, or a sampler pinned to a saved
        adapter). The snapshot starts at the learner's current rating.
        """
        learners = self.learners()
        if of is None:
            if len(learners) != 1:
                raise ValueError(f"Say which learner {name!r} is a snapshot of (`of=`); learners: {learners}")
            of = learners[0]
        if of not in learners:
            raise ValueError(f"{of!r} is not a learner of this league; learners: {learners}")
        member = self._add(Member(name, policy, "snapshot", parent=of))
        self.elo.add(name, rating=self.elo.rating(of))
        return member

    def _add(self, member: Member) -> Member:
        if not isinstance(member.name, str) or not member.name:
            raise ValueError(f"Expected a member name as a non-empty str, got {member.name!r}")
        if member.name in self._members:
            raise ValueError(f"The league already has a member named {member.name!r}")
        if not callable(member.policy):
            raise TypeError(
                f"Expected the policy of {member.name!r} to be callable, got {member.policy!r:.80}"
            )
        self._members[member.name] = member
        self.elo.add(member.name)
        return member

    def __contains__(self, name: object) -> bool:
        return name in self._members

    def __len__(self) -> int:
        return len(self._members)

    def __getitem__(self, name: str) -> Member:
        try:
            return self._members[name]
        except KeyError:
            raise KeyError(f"No member named {name!r}; members: {list(self._members)}") from None

    def learners(self) -> list[str]:
        return [m.name for m in self._members.values() if m.kind == "learner"]

    def snapshots(self) -> list[str]:
        return [m.name for m in self._members.values() if m.kind == "snapshot"]

    def bots(self) -> list[str]:
        return [m.name for m in self._members.values() if m.kind == "bot"]

    # --- playing --------------------------------------------------------------------------

    def sample_opponents(self, learner: str, n: int) -> list[str]:
        """Draw ``n`` opponents for ``learner`` (the learner's own name means a mirror match)."""
        if self[learner].kind != "learner":
            raise ValueError(f"{learner!r} is a {self[learner].kind}, not a learner")
        pools = {"latest": [learner], "snapshots": self.snapshots(), "bots": self.bots()}
        categories = [c for c in _CATEGORIES if pools[c] and self.weights[c] > 0]
        if not categories:
            raise ValueError(
                f"No opponents for {learner!r}: add bots or snapshots, or give 'latest' a weight (weights {self.weights})"
            )
        p = np.array([self.weights[c] for c in categories])
        picks = []
        for _ in range(n):
            pool = pools[categories[int(self.rng.choice(len(categories), p=p / p.sum()))]]
            picks.append(pool[int(self.rng.integers(len(pool)))])
        return picks

    def play_round(self, games: int = 8, learner: str | None = None) -> LeagueRound:
        """Play ``games`` games for each learner (or just ``learner``), update the ratings, and
        return the learners' trajectories.

        Each sampled pairing is played once from every seat, so ``games`` is rounded up to a
        multiple of the number of seats.
        """
        if not isinstance(games, int) or isinstance(games, bool) or games < 1:
            raise ValueError(f"Expected `games` to be an int >= 1, got {games!r}")
        learners = self.learners() if learner is None else [learner]
        if not learners:
            raise ValueError("The league has no learner; add one with add(name, policy, frozen=False)")
        probe = self.env_fn()
        agents = list(probe.possible_agents)
        probe.close()
        if len(agents) != 2:
            raise ValueError(f"A league needs a two-player game, got agents {agents}")
        pairings = math.ceil(games / 2)
        lineups: list[dict[str, str]] = []
        seeds: list[int] = []
        opponents: dict[str, list[str]] = {}
        base = int(self.rng.integers(2**31))
        for name in learners:
            opponents[name] = self.sample_opponents(name, pairings)
            for opponent in opponents[name]:
                seeds += [base + len(seeds) // 2] * 2
                lineups += rotated_lineups([name, opponent], agents, 2)
        policies = {name: self._members[name].policy for lineup in lineups for name in lineup.values()}
        report = play_matches(self.env_fn, policies, lineups=lineups, seeds=seeds)
        for result in report.results:
            a, b = (result.seats[agent] for agent in agents)
            if a != b:  # mirror matches say nothing about strength
                self.elo.record(a, b, result.score(agents[0]))
        self.rounds_played += 1
        learner_names = set(learners)
        return LeagueRound(report.trajectories(learner_names), report, opponents)

    # --- results --------------------------------------------------------------------------

    def table(self) -> list[dict[str, Any]]:
        """One row per member, best rating first: name, kind, rating, low, high, games, W/D/L."""
        rows = []
        for rating in self.elo.table():
            if rating.name not in self._members:
                continue
            rows.append(
                {
                    "name": rating.name,
                    "kind": self._members[rating.name].kind,
                    "rating": rating.rating,
                    "low": rating.low,
                    "high": rating.high,
                    "games": rating.games,
                    "wins": rating.wins,
                    "draws": rating.draws,
                    "losses": rating.losses,
                }
            )
        return rows

    def rich_table(self, title: str | None = None) -> Any:
        """The table as a :class:`rich.table.Table` (``rich.print(league)`` prints it too)."""
        from rich.table import Table

        pct = round(self.elo.confidence * 100)
        table = Table(title=title or f"League after {self.rounds_played} rounds")
        for column in ("name", "kind", "Elo", f"{pct}% interval", "games", "W", "D", "L"):
            table.add_column(column, justify="left" if column in ("name", "kind") else "right")
        for row in self.table():
            interval = "-" if math.isinf(row["low"]) else f"{row['low']:.0f} .. {row['high']:.0f}"
            table.add_row(
                row["name"],
                row["kind"],
                f"{row['rating']:.0f}",
                interval,
                str(row["games"]),
                str(row["wins"]),
                str(row["draws"]),
                str(row["losses"]),
            )
        return table

    def __rich__(self) -> Any:
        return self.rich_table()
