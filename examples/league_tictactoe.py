"""A tic-tac-toe league: a learner, its frozen snapshots and two bots play rated rounds.

Each round the learner plays opponents sampled from the league (itself, past snapshots, bots),
the Elo ratings are updated, and the learner's seats come back as trajectories. Here the
learner is a stand-in that plays minimax with probability ``1 - epsilon`` and a random move
otherwise, and "training" just lowers epsilon; a real run would update a model from
``played.trajectories`` (for example with GRPO) and snapshot the new weights. After every
round the learner is snapshotted, so later rounds can meet earlier versions of it.

Run::

    python examples/league_tictactoe.py --rounds 5 --games 16
    python examples/league_tictactoe.py --rounds 2 --games 4 --out trajectories.jsonl
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import numpy as np
from rich.console import Console

from gym_tinker.trajectory import save_jsonl
from multiagent import tictactoe_v0
from multiagent.bots import get_bot
from multiagent.league import League


class EpsilonMinimax:
    """Minimax with probability ``1 - epsilon``, else a uniformly random legal move."""

    def __init__(self, epsilon: float, seed: int = 0):
        self.epsilon = epsilon
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.minimax = get_bot("tictactoe_v0", "minimax")

    def __call__(self, observation: str, info: Mapping[str, Any]) -> str:
        moves = info.get("legal_moves") or []
        if moves and self.rng.random() < self.epsilon:
            return str(moves[int(self.rng.integers(len(moves)))])
        return self.minimax(observation, info)

    def frozen_copy(self) -> EpsilonMinimax:
        return EpsilonMinimax(self.epsilon, seed=self.seed + 1000)


def main(argv: list[str] | None = None) -> League:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="league rounds to play")
    parser.add_argument("--games", type=int, default=16, help="games per round for the learner")
    parser.add_argument("--seed", type=int, default=0, help="seed of the league and the bots")
    parser.add_argument("--out", default=None, help="save the learner's trajectories to this JSONL file")
    args = parser.parse_args(argv)

    league = League(tictactoe_v0.env, seed=args.seed, weights={"latest": 0.2, "snapshots": 0.4, "bots": 0.4})
    learner = EpsilonMinimax(epsilon=0.9, seed=args.seed)
    league.add("learner", learner, frozen=False)
    league.add("random", get_bot("tictactoe_v0", "random", seed=args.seed))
    league.add("minimax", get_bot("tictactoe_v0", "minimax"))

    console = Console()
    trajectories = []
    for round_number in range(1, args.rounds + 1):
        played = league.play_round(games=args.games)
        trajectories += played.trajectories
        mean = sum(t.total_reward or 0.0 for t in played.trajectories) / max(len(played.trajectories), 1)
        console.print(
            f"round {round_number}: epsilon {learner.epsilon:.2f}, {len(played.report)} games, "
            f"{len(played.trajectories)} learner trajectories, mean learner reward {mean:+.2f}, "
            f"opponents {sorted(set(played.opponents['learner']))}"
        )
        learner.epsilon *= 0.5  # stands in for a training step on played.trajectories
        league.snapshot(f"learner@{round_number}", learner.frozen_copy())
    console.print(league.rich_table(title=f"Tic-tac-toe league after {league.rounds_played} rounds"))
    if args.out:
        count = save_jsonl(args.out, trajectories)
        console.print(f"saved {count} trajectories to {args.out}")
    return league


if __name__ == "__main__":
    main()
