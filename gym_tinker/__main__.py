"""``python -m gym_tinker``: list the envs and play an episode of each with its scripted oracle.

Examples::

    python -m gym_tinker                                  # list every env, play one episode each
    python -m gym_tinker --env tinker/Math-v0 --seed 3    # play one env
    python -m gym_tinker --list                           # only list
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence

import gymnasium as gym

import gym_tinker
from gym_tinker.oracles import OraclePolicy, play_episode
from gym_tinker.tasks import DIFFICULTIES

__all__ = ["main"]

_MAX_MESSAGE_CHARS = 400


def _compact(text: str, width: int = _MAX_MESSAGE_CHARS) -> str:
    text = text.strip()
    if len(text) > width:
        text = text[:width].rstrip() + f" ... [{len(text) - width} more chars]"
    return textwrap.indent(text, "      ").lstrip()


def play(env_id: str, *, seed: int, difficulty: str) -> float:
    """Play one oracle episode of ``env_id`` and print its transcript; return the total reward.

    Example:
        >>> play("tinker/GuessNumber-v0", seed=1, difficulty="easy")  # doctest: +ELLIPSIS
        == tinker/GuessNumber-v0  (difficulty easy, seed 1) ==
        env   I'm thinking of a whole number between 1 and 100 (inclusive)...
        agent <answer>...</answer>
        env   ... is correct! You found it in 1 guess.
        -> reward 1.0 in 1 turn(s), terminated
        1.0
    """
    env = gym.make(env_id, difficulty=difficulty)
    try:
        episode = play_episode(env, OraclePolicy(), seed=seed)
    finally:
        env.close()
    print(f"== {env_id}  (difficulty {difficulty}, seed {seed}) ==")
    print(f"env   {_compact(episode.observations[0])}")
    for action, observation in zip(episode.actions, episode.observations[1:], strict=True):
        print(f"agent {_compact(action)}")
        print(f"env   {_compact(observation)}")
    ending = "terminated" if episode.terminated else "truncated" if episode.truncated else "unfinished"
    print(f"-> reward {episode.total_reward:g} in {len(episode.actions)} turn(s), {ending}")
    return episode.total_reward


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the process exit status (1 when an env id is unknown).

    Example:
        >>> main(["--list"])  # doctest: +ELLIPSIS
        tinker/ToolUse-v0 ...
        tinker/GuessNumber-v0 ...
        0
    """
    parser = argparse.ArgumentParser(
        prog="python -m gym_tinker",
        description="List the gym_tinker envs and play them with a scripted oracle.",
    )
    parser.add_argument("--env", help="play only this env id, e.g. tinker/Math-v0")
    parser.add_argument("--seed", type=int, default=0, help="reset seed (default 0)")
    parser.add_argument(
        "--difficulty", choices=DIFFICULTIES, default="easy", help="task difficulty (default easy)"
    )
    parser.add_argument("--list", action="store_true", help="only list the envs")
    args = parser.parse_args(argv)

    rows = gym_tinker.list_envs()
    known = [env_id for env_id, _ in rows]
    if args.env is not None and args.env not in known:
        print(f"Unknown env {args.env!r}; expected one of: {', '.join(known)}", file=sys.stderr)
        return 1
    if args.env is None:
        width = max(len(env_id) for env_id in known)
        for env_id, description in rows:
            print(f"{env_id:<{width}}  {description}")
        if args.list:
            return 0
        print()
    for env_id in [args.env] if args.env else known:
        play(env_id, seed=args.seed, difficulty=args.difficulty)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
