"""Write your own text env in about 30 lines, check it with gym-tinker's and Gymnasium's checkers, register it.

A :class:`gym_tinker.TextEnv` subclass implements ``_reset`` (the first observation, from
``self.np_random`` so the same seed gives the same task) and ``_step`` (observation, reward,
terminated, truncated, info). The base class does the rest: string actions only, turn counting
and truncation at ``max_turns``, ``ResetNeeded`` errors, rendering. ``check_text_env`` then runs
gym-tinker's conformance checks (determinism, seeds that differ, pickling, vector envs, hostile
actions such as a million characters or lone surrogates) and Gymnasium's own ``check_env``.

Run::

    python examples/custom_env.py            # checks, then a few episodes with a scripted agent
    python examples/custom_env.py --quick    # the same, fewer episodes (what the test runs)
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

from gym_tinker import TextEnv
from gym_tinker.core import StepResult
from gym_tinker.testing import check_text_env

WORDS = ("gymnasium", "token", "reward", "policy", "adapter", "scheduler", "rollout", "sampler")


class ReverseWordEnv(TextEnv):
    """Spell a seeded word backwards; three tries; reward 1 for the right answer."""

    description = "Spell a word backwards (three tries)."
    default_max_turns = 3

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        self.word = WORDS[int(self.np_random.integers(len(WORDS)))]
        return f"Spell '{self.word}' backwards, inside <answer></answer>.", {
            "system_prompt": "You are good at spelling."
        }

    def _step(self, action: str) -> StepResult:
        guess = action.split("<answer>")[-1].split("</answer>")[0].strip().lower()
        if guess == self.word[::-1]:
            return "Correct.", 1.0, True, False, {"correct": True}
        return f"No, '{guess[:40]}' is not '{self.word}' backwards. Try again.", 0.0, False, False, {}


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="2 episodes, for the test")
    args = parser.parse_args(argv)
    episodes = 2 if args.quick else args.episodes

    # 1. Check the class: every gym-tinker conformance check, then Gymnasium's checker.
    check_text_env(ReverseWordEnv, steps=20)
    check_env(ReverseWordEnv(), skip_render_check=True)
    print("check_text_env and gymnasium check_env: passed")

    # 2. Register it under an id of your own and make it like any other env.
    gym.register("mine/ReverseWord-v0", entry_point=ReverseWordEnv)
    env = gym.make("mine/ReverseWord-v0", render_mode="ansi")
    solved = 0.0
    for seed in range(episodes):
        observation, _ = env.reset(seed=seed)
        word = observation.split("'")[1]
        for attempt in (word, word[::-1]):  # a first wrong try, then the right one
            observation, reward, terminated, truncated, _ = env.step(f"<answer>{attempt}</answer>")
            if terminated or truncated:
                break
        solved += float(reward)
        print(str(env.render()).replace("\n", " | "))
    env.close()
    print(f"solved {solved:.0f} of {episodes} episodes of mine/ReverseWord-v0")
    return solved / episodes


if __name__ == "__main__":
    main()
