"""The scripted oracle solves every env, at every difficulty, through `gym.make` (wrappers included)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import gym_tinker
from gym_tinker import TextEnv
from gym_tinker.oracles import OraclePolicy, oracle_action, play_episode
from gym_tinker.tasks import DIFFICULTIES

ENV_IDS = [entry.id for entry in gym_tinker.ENV_ENTRIES]
SEEDS = (0, 1, 2, 3)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_gets_full_reward(env_id, difficulty):
    env = gym.make(env_id, difficulty=difficulty)
    policy = OraclePolicy()
    try:
        for seed in SEEDS:
            episode = play_episode(env, policy, seed=seed)
            transcript = "\n".join(episode.observations)
            assert episode.terminated and not episode.truncated, (
                f"seed {seed}: not solved\n{transcript[-2000:]}"
            )
            assert episode.total_reward == pytest.approx(1.0), (
                f"seed {seed}: rewards {episode.rewards}\n{transcript[-2000:]}"
            )
            assert len(episode.actions) <= env.unwrapped.max_turns
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_is_deterministic_and_hidden_task_dependent(env_id):
    """The oracle reads the task: same seed, same actions; the episode's actions vary over seeds."""
    env = gym.make(env_id)
    try:
        first = [play_episode(env, seed=seed).actions for seed in range(6)]
        again = [play_episode(env, seed=seed).actions for seed in range(6)]
    finally:
        env.close()
    assert first == again
    assert len({tuple(actions) for actions in first}) > 3


def test_oracle_action_needs_an_oracle_function():
    class NoOracle(TextEnv):
        def _reset(self, options):
            return "hi", {}

        def _step(self, action):
            return "bye", 0.0, True, False, {}

    env = NoOracle()
    env.reset(seed=0)
    with pytest.raises(
        TypeError, match=r"No oracle for NoOracle: expected a function `oracle\(env\) -> str`"
    ):
        oracle_action(env)


def test_oracle_found_through_subclass():
    from gym_tinker.envs.guess_number import GuessNumberEnv

    class Renamed(GuessNumberEnv):
        pass

    env = Renamed(difficulty="hard")
    episode = play_episode(env, OraclePolicy(), seed=4)
    assert episode.total_reward == 1.0 and episode.actions == [f"<answer>{env.secret}</answer>"]


def test_demo_plays_every_env(capsys):
    from gym_tinker.__main__ import main

    assert main([]) == 0
    out = capsys.readouterr().out
    for env_id in ENV_IDS:
        assert f"== {env_id}  (difficulty easy, seed 0) ==" in out
    assert out.count("-> reward 1 in ") == len(ENV_IDS)
    assert main(["--env", "tinker/Math-v0", "--seed", "3", "--difficulty", "hard"]) == 0
    assert "== tinker/Math-v0  (difficulty hard, seed 3) ==" in capsys.readouterr().out
    assert main(["--env", "tinker/Nope-v0"]) == 1
    assert "Unknown env 'tinker/Nope-v0'" in capsys.readouterr().err


def test_demo_runs_as_a_module():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "gym_tinker", "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert [line.split()[0] for line in result.stdout.splitlines()] == ENV_IDS


def test_throughput_benchmark_replays_the_oracle_faithfully(tmp_path):
    """The benchmark's oracle replay stays in step with the recorded episodes (return 1.0)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parents[2] / "bench" / "env_throughput.py"
    output = tmp_path / "out.json"
    command = [
        sys.executable,
        str(script),
        "--env",
        "tinker/Wordle-v0",
        "--seconds",
        "0.05",
        "--output",
        str(output),
    ]
    subprocess.run(command, capture_output=True, text=True, timeout=240, check=True)
    rows = json.loads(output.read_text())["rows"]
    assert {(r["policy"], r["mode"]) for r in rows} == {
        (policy, mode)
        for policy in ("random", "oracle")
        for mode in ("unwrapped", "gym.make", "sync x4", "async x4")
    }
    for row in rows:
        assert row["steps"] > 0 and row["steps_per_s"] > 0
        if row["policy"] == "oracle":
            assert row["mean_return"] == 1.0, row


@pytest.mark.parametrize("env_id", ["tinker/ToolUse-v0", "tinker/GuessNumber-v0"])
def test_oracle_trajectories_are_the_conversation_a_rollout_sees(env_id):
    """Demonstrations render to the same chat messages and tools as a rollout of the same actions."""
    from gym_tinker.oracles import oracle_trajectories
    from gym_tinker.rollout import rollout, to_messages

    [demo] = oracle_trajectories(env_id, [5], difficulty="easy")
    assert demo.total_reward > 0 and demo.stop_reason == "terminated"
    actions = iter(turn.action for turn in demo.turns)
    [replayed] = rollout(
        gym.make(env_id, difficulty="easy"), lambda conversations: [next(actions)], seeds=[5]
    )
    assert to_messages(demo) == to_messages(replayed)
    assert demo.metadata["tools"] == replayed.metadata["tools"]
    assert [t.reward for t in demo.turns] == [t.reward for t in replayed.turns]
