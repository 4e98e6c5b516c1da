"""GuessNumberEnv: parsing, feedback, reward, turn budget, difficulty ranges and datasets."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import gym_tinker  # noqa: F401 (registers the envs)
from gym_tinker.envs.guess_number import (
    DIFFICULTY_RANGES,
    DIFFICULTY_TURNS,
    GuessNumberEnv,
    oracle,
    parse_guess,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50", 50),
        ("  7\n", 7),
        ("<answer>42</answer>", 42),
        ("<ANSWER> 42 </ANSWER>", 42),
        ("between 1 and 100, I guess <answer>42</answer> not 99", 42),
        ("\\boxed{64}", 64),
        ("I think 30 is too low, so 45", 45),
        ("My guess: 1,250", 1250),
        ("50.0", 50),
        ("-3", -3),
        ("guess -3", -3),
        ("x-7", 7),
        ("007", 7),
        ("2.5", None),
        ("no number here", None),
        ("", None),
        ("²³ ٣٤", None),
        ("<answer>nothing</answer> 12", None),
        ("9" * 1_000_000, 10**18),
        ("-" + "9" * 100, -(10**18)),
    ],
)
def test_parse_guess(text, expected):
    assert parse_guess(text) == expected


def _env(secret=37, **kwargs):
    return GuessNumberEnv(dataset=[{"secret": secret}], **kwargs)


def test_feedback_says_higher_lower_and_correct():
    env = _env(37)
    observation, info = env.reset(seed=0)
    assert "between 1 and 100" in observation and "10 guesses" in observation
    obs, reward, terminated, truncated, info = env.step("20")
    assert "20 is too low" in obs and "higher" in obs and "9 guesses left" in obs
    assert (reward, terminated, truncated, info["feedback"]) == (0.0, False, False, "higher")
    obs, reward, terminated, truncated, info = env.step("<answer>60</answer>")
    assert "60 is too high" in obs and "lower" in obs and info["feedback"] == "lower"
    obs, reward, terminated, truncated, info = env.step("37")
    assert "correct" in obs and terminated and not truncated and info["feedback"] == "correct"
    assert reward == pytest.approx(1 - 2 / 10)


@pytest.mark.parametrize(("turn", "expected"), [(1, 1.0), (2, 0.9), (5, 0.6), (10, 0.1)])
def test_reward_favours_fewer_turns(turn, expected):
    env = _env(37)
    env.reset(seed=0)
    for _ in range(turn - 1):
        assert env.step("1")[1] == 0.0
    assert env.step("37")[1] == pytest.approx(expected)


def test_invalid_and_out_of_range_guesses_get_feedback_and_cost_a_turn():
    env = _env(37, max_turns=3)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("no idea")
    assert "couldn't find a whole number" in obs and info == {"feedback": "invalid", "turn": 1}
    obs, reward, terminated, truncated, info = env.step("1000")
    assert "1000 is out of range" in obs and info["feedback"] == "out_of_range" and info["turn"] == 2
    obs, reward, terminated, truncated, info = env.step("0")
    assert (reward, terminated, truncated) == (0.0, False, True)


def test_turn_limit_truncates_with_zero_reward():
    env = _env(37)
    env.reset(seed=0)
    results = [env.step("50") for _ in range(10)]
    assert [r[3] for r in results] == [False] * 9 + [True]
    assert all(r[1] == 0.0 and not r[2] for r in results)
    assert results[-2][0] == "50 is too high. The number is lower. 1 guess left."
    assert results[-1][0] == "50 is too high. The number is lower. Out of guesses. The number was 37."


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_difficulty_sets_range_and_turns(difficulty):
    low, high = DIFFICULTY_RANGES[difficulty]
    env = GuessNumberEnv(difficulty=difficulty)
    assert env.max_turns == DIFFICULTY_TURNS[difficulty]
    secrets = set()
    for seed in range(40):
        observation, info = env.reset(seed=seed)
        assert f"between {low} and {high}" in observation
        assert info["difficulty"] == difficulty and info["tools"] == []
        assert low <= env.secret <= high
        secrets.add(env.secret)
    assert len(secrets) > 30
    assert GuessNumberEnv(difficulty=difficulty, max_turns=3).max_turns == 3


def _bisect(env, observation):
    """Plays from the feedback text alone; returns (reward, turns)."""
    low, high, max_turns = env.unwrapped.low, env.unwrapped.high, env.unwrapped.max_turns
    for turn in range(1, max_turns + 1):
        guess = (low + high) // 2
        observation, reward, terminated, truncated, _ = env.step(f"My guess: <answer>{guess}</answer>")
        if terminated:
            return reward, turn
        if "higher" in observation:
            low = guess + 1
        elif "lower" in observation:
            high = guess - 1
        else:
            raise AssertionError(f"unexpected feedback {observation!r}")
        assert not truncated or turn == max_turns
    return 0.0, max_turns


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_binary_search_always_wins_within_the_budget(difficulty):
    env = gym.make("tinker/GuessNumber-v0", difficulty=difficulty)  # wrappers must not cut the budget
    assert env.unwrapped.max_turns == DIFFICULTY_TURNS[difficulty]
    for seed in range(25):
        observation, _ = env.reset(seed=seed)
        reward, turns = _bisect(env, observation)
        assert reward == pytest.approx(1 - (turns - 1) / DIFFICULTY_TURNS[difficulty]) and reward > 0


def test_bisection_edges_lowest_and_highest_secret():
    for secret in (1, 100):
        env = _env(secret)
        reward, _ = _bisect(env, env.reset(seed=0)[0])
        assert reward > 0


def test_same_seed_same_secret_and_task_id_hides_it():
    a, b = GuessNumberEnv(difficulty="hard"), GuessNumberEnv(difficulty="hard")
    assert a.reset(seed=5)[1]["task_id"] == b.reset(seed=5)[1]["task_id"]
    assert a.secret == b.secret
    ids = {a.reset(seed=s)[1]["task_id"] for s in range(20)}
    assert len(ids) == 20
    assert not any(str(a.secret) in value for value in a.reset(seed=5)[1].values() if isinstance(value, str))


def test_oracle_wins_first_turn_through_gym_make():
    env = gym.make("tinker/GuessNumber-v0", difficulty="medium")
    env.reset(seed=3)
    assert env.step(oracle(env))[1:3] == (1.0, True)
    with pytest.raises(TypeError, match="GuessNumberEnv"):
        oracle(gym.make("tinker/Wordle-v0"))


def test_dataset_rows_and_task_index(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [{"secret": 5, "low": 1, "high": 10}, {"secret": 77}]))
    env = GuessNumberEnv(dataset=str(path), difficulty="medium")
    observation, info = env.reset(seed=0, options={"task_index": 0})
    assert "between 1 and 10" in observation and info["task_id"] == "GuessNumber-row0" and env.secret == 5
    observation, info = env.reset(seed=0, options={"task_index": 1})
    assert "between 1 and 1000" in observation and env.secret == 77


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"secret": 500}], r"row 0: expected low <= secret <= high, got 1, 500, 100"),
        ([{"secret": "7"}], r"row 0: expected `secret` to be an int, got '7'"),
        ([{"secret": 3, "low": 5}], r"expected low <= secret <= high"),
        ([{"number": 3}], r"missing column\(s\) \['secret'\]"),
    ],
)
def test_bad_dataset_rows_are_clear_errors(rows, message):
    with pytest.raises(ValueError, match=message):
        GuessNumberEnv(dataset=rows)


def test_bad_arguments():
    with pytest.raises(ValueError, match="difficulty"):
        GuessNumberEnv(difficulty="impossible")
    with pytest.raises(ValueError, match="max_turns"):
        GuessNumberEnv(max_turns=0)
