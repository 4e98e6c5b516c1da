"""Vector envs: ``gym.make_vec`` (in process and with worker processes) with a scripted policy, then the rollout engine over one.

Part 1 steps a Gymnasium vector env of ``tinker/GuessNumber-v0`` by hand: observations come as a
tuple of strings, actions go in as a list of strings, and a binary search per slot reads
``info["feedback"]``. It runs four ways: ``gym.make_vec(id, num_envs=N)`` (the env's vector
entry point: our ``TextVectorEnv``, Gymnasium's sync API, in this process),
``gym.make_vec(id, num_envs=N, workers=2)`` (our ``ProcessTextVectorEnv``: the envs split over 2
worker processes), ``info_format="list"`` (each env's own info dict, what Gymnasium's
``DictInfoToList`` gives) and Gymnasium's own ``vectorization_mode="async"`` (one process per env). Part 2 hands a vector env to :func:`gym_tinker.rollout.rollout`, which runs
one episode per seed, asks the policy once per turn for every active conversation, and returns
trajectories. The policy here is a plain function of the chat conversations; a model sampler
(``executors.sampling.HFSampler``) plugs into the same place.

Run::

    python examples/vector_rollout.py                # 8 envs, 32 rollout episodes
    python examples/vector_rollout.py --quick        # 2 envs, 4 episodes (what the test runs)
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import gymnasium as gym

import gym_tinker  # noqa: F401  (registers the tinker/ envs)
from gym_tinker.rollout import rollout

ENV_ID = "tinker/GuessNumber-v0"


MODES: dict[str, dict[str, Any]] = {
    "default": {},  # the vector entry point, in this process
    "workers": {"workers": 2},  # the envs split over 2 worker processes
    "list": {"info_format": "list"},  # each env's own info dict, in a list (as DictInfoToList)
    "async": {"vectorization_mode": "async"},  # Gymnasium's AsyncVectorEnv, a process per env
}


def vector_loop(num_envs: int, mode: str, seed: int = 0) -> list[float]:
    """Step a ``gym.make_vec`` env until every slot has finished one episode; return each slot's return."""
    envs = gym.make_vec(ENV_ID, num_envs=num_envs, **MODES[mode])
    envs.reset(seed=seed)
    low, high = [1] * num_envs, [100] * num_envs  # easy: the secret is in 1..100
    returns: list[float | None] = [None] * num_envs
    running = [0.0] * num_envs
    while any(r is None for r in returns):
        guesses = [(lo + hi) // 2 for lo, hi in zip(low, high, strict=True)]
        _, rewards, terminated, truncated, infos = envs.step([f"<answer>{g}</answer>" for g in guesses])
        for i in range(num_envs):
            # Gymnasium's infos are a dict of arrays (None where an env did not report the key);
            # info_format="list" gives each env's own dict.
            feedback = infos[i].get("feedback") if isinstance(infos, list) else infos["feedback"][i]
            if feedback == "higher":
                low[i] = guesses[i] + 1
            elif feedback == "lower":
                high[i] = guesses[i] - 1
            running[i] += float(rewards[i])
            if terminated[i] or truncated[i]:
                if returns[i] is None:
                    returns[i] = running[i]
                # Gymnasium's default (next-step) autoreset starts slot i's new episode on the next step.
                low[i], high[i], running[i] = 1, 100, 0.0
    envs.close()
    return [float(r) for r in returns if r is not None]


def bisect_from_conversation(conversations: list[list[dict[str, Any]]]) -> list[str]:
    """The rollout engine's policy: read each conversation's guesses and feedback, guess the middle."""
    replies = []
    for messages in conversations:
        low, high = 1, 100
        guess = None
        for message in messages:
            if message["role"] == "assistant":
                guess = int(re.findall(r"\d+", message["content"])[-1])
            elif message["role"] == "user" and guess is not None:
                if "higher" in message["content"]:
                    low = guess + 1
                elif "lower" in message["content"]:
                    high = guess - 1
        replies.append(f"<answer>{(low + high) // 2}</answer>")
    return replies


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--episodes", type=int, default=32, help="episodes for the rollout engine")
    parser.add_argument("--quick", action="store_true", help="2 envs and 4 episodes, for the test")
    args = parser.parse_args(argv)
    num_envs, episodes = (2, 4) if args.quick else (args.num_envs, args.episodes)

    out: dict[str, Any] = {}
    for mode in MODES:
        returns = vector_loop(num_envs, mode)
        out[mode] = returns
        print(f"make_vec {mode:<7}: {num_envs} envs, first-episode returns {[round(r, 2) for r in returns]}")

    envs = gym.make_vec(ENV_ID, num_envs=num_envs)
    result = rollout(envs, bisect_from_conversation, seeds=range(episodes))
    envs.close()
    solved = sum((t.total_reward or 0.0) > 0 for t in result)
    print(
        f"rollout engine: {len(result)} episodes on {num_envs} envs, solved {solved}, "
        f"mean turns {sum(len(t) for t in result) / len(result):.1f}, dropped {result.stats.dropped}"
    )
    first = result[0]
    print(f"episode seed {first.seed}: " + " | ".join(turn.action for turn in first.turns))
    out["rollout"] = result
    return out


if __name__ == "__main__":
    main()
