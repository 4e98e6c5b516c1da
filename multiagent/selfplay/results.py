"""Results of self-play games: one game (`MatchResult`), a set of games (`MatchReport`), per-policy records."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from gym_tinker.trajectory import Trajectory, Turn

__all__ = ["MatchReport", "MatchResult", "Outcome", "PolicyRecord"]

Outcome: TypeAlias = Literal["win", "draw", "loss"]


@dataclass(frozen=True)
class MatchResult:
    """One finished game."""

    env_id: str
    """The game's ``metadata["name"]``."""
    seed: int | None
    seats: Mapping[str, str]
    """Agent (seat) -> name of the policy that played it."""
    rewards: Mapping[str, float]
    """Agent -> total reward."""
    stop_reason: Literal["terminated", "truncated"]
    steps: int
    """Env steps taken (dead steps included for AEC games)."""
    turns: Mapping[str, tuple[Turn, ...]] = field(repr=False)
    """Agent -> the decisions it made, with rewards credited."""
    index: int = 0
    """Position of this game in its :class:`MatchReport`."""

    def outcome(self, agent: str) -> Outcome:
        """``"win"`` if ``agent``'s reward beats every other agent's, ``"draw"`` if it ties the best."""
        mine = self.rewards[agent]
        best_other = max(reward for other, reward in self.rewards.items() if other != agent)
        return "win" if mine > best_other else "draw" if mine == best_other else "loss"

    def score(self, agent: str) -> float:
        """1 for a win, 0.5 for a draw, 0 for a loss (the Elo score)."""
        return {"win": 1.0, "draw": 0.5, "loss": 0.0}[self.outcome(agent)]

    def trajectory(self, agent: str, metadata: Mapping[str, Any] | None = None) -> Trajectory:
        """``agent``'s experience in this game as a :class:`~gym_tinker.trajectory.Trajectory`."""
        return Trajectory(
            turns=self.turns[agent],
            env_id=self.env_id,
            seed=self.seed,
            agent=agent,
            stop_reason=self.stop_reason,
            total_reward=self.rewards[agent],
            metadata={
                "policy": self.seats[agent],
                "opponents": {a: name for a, name in self.seats.items() if a != agent},
                "outcome": self.outcome(agent),
                "game_index": self.index,
                **(metadata or {}),
            },
        )


@dataclass(frozen=True)
class PolicyRecord:
    """Results of one policy over a :class:`MatchReport`."""

    name: str
    games: int
    wins: int
    draws: int
    losses: int
    mean_reward: float
    per_seat: Mapping[str, tuple[int, int, int]]
    """Seat -> (wins, draws, losses) in that seat."""


@dataclass(frozen=True)
class MatchReport:
    """Every game of a :func:`play_matches` call, and summaries of them."""

    results: tuple[MatchResult, ...]

    def __len__(self) -> int:
        return len(self.results)

    def summary(self) -> dict[str, PolicyRecord]:
        """Policy name -> its record over all games."""
        counts: dict[str, dict[str, list[int]]] = {}
        rewards: dict[str, list[float]] = {}
        for result in self.results:
            for agent, name in result.seats.items():
                seat = counts.setdefault(name, {}).setdefault(agent, [0, 0, 0])
                seat[("win", "draw", "loss").index(result.outcome(agent))] += 1
                rewards.setdefault(name, []).append(result.rewards[agent])
        records = {}
        for name, seats in counts.items():
            wins, draws, losses = (sum(seat[i] for seat in seats.values()) for i in range(3))
            records[name] = PolicyRecord(
                name,
                wins + draws + losses,
                wins,
                draws,
                losses,
                sum(rewards[name]) / len(rewards[name]),
                {agent: (w, d, lo) for agent, (w, d, lo) in sorted(seats.items())},
            )
        return records

    def trajectories(self, policies: Collection[str]) -> list[Trajectory]:
        """The trajectories of every seat played by one of ``policies`` (the learners)."""
        return [
            result.trajectory(agent)
            for result in self.results
            for agent, name in result.seats.items()
            if name in policies
        ]
