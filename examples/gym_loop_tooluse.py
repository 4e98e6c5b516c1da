"""A plain Gymnasium loop on ``tinker/ToolUse-v0`` with a scripted policy: one tool call, then the answer.

The env is an ordinary ``gymnasium.Env[str, str]``: ``reset`` gives the question (and, in
``info``, the system prompt and the tools' JSON schemas), ``step`` takes the agent's message.
The scripted policy reads the question, calls ``lookup`` for the one fact an easy question needs,
then answers with the number in the tool's reply. Swap ``scripted_policy`` for a model and the
loop stays the same.

Run::

    python examples/gym_loop_tooluse.py                # 20 easy episodes, printed as they go
    python examples/gym_loop_tooluse.py --quick        # 3 episodes (what the test runs)
"""

from __future__ import annotations

import argparse
import json
import re

import gymnasium as gym

import gym_tinker  # noqa: F401  (registers the tinker/ envs)

# An easy question names one entity and one attribute; each pattern maps to a lookup call.
QUESTIONS = [
    (re.compile(r"What is the price of the (.+), in USD\?"), lambda m: (m[1], "price")),
    (re.compile(r"How many units of the (.+) are in stock\?"), lambda m: (m[1], "stock")),
    (re.compile(r"What is the share price of (.+), in USD\?"), lambda m: (m[1], "share_price")),
    (re.compile(r"How old is (.+)\?"), lambda m: (m[1], "age")),
    (re.compile(r"How far is (.+) from (.+), in km\?"), lambda m: (m[1], f"distance to {m[2]}")),
]


def scripted_policy(observation: str) -> str:
    """First turn: a ``lookup`` tool call for the question's fact; next turn: the number it returned."""
    if "<tool_response" in observation:
        numbers = re.findall(r":\s*(-?[\d.]+)", observation)
        return f"<answer>{numbers[-1] if numbers else 'unknown'}</answer>"
    for pattern, to_call in QUESTIONS:
        match = pattern.search(observation)
        if match:
            entity, attribute = to_call(match)
            call = {"name": "lookup", "arguments": {"entity": entity, "attribute": attribute}}
            return f"<tool_call>{json.dumps(call)}</tool_call>"
    return "<answer>I do not know</answer>"


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="3 episodes, for the test")
    args = parser.parse_args(argv)
    episodes = 3 if args.quick else args.episodes

    env = gym.make("tinker/ToolUse-v0", difficulty="easy")
    print("tools:", [tool["function"]["name"] for tool in env.reset(seed=0)[1]["tools"]])
    total = 0.0
    for seed in range(episodes):
        observation, info = env.reset(seed=seed)
        print(f"\nepisode {seed}: {observation.splitlines()[0]}")
        terminated = truncated = False
        while not (terminated or truncated):
            action = scripted_policy(observation)
            observation, reward, terminated, truncated, info = env.step(action)
            print(f"  agent: {action}\n  env:   " + observation.strip().replace("\n", "\n         "))
        total += float(reward)
        print(f"  reward {reward} after {info['turn']} turns")
    env.close()
    print(f"\nsolved {total:.0f} of {episodes} episodes")
    return total / episodes


if __name__ == "__main__":
    main()
