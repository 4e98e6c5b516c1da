"""CountdownEnv: solvable seeded tasks, safe expression checking, number accounting, datasets, oracle."""

from __future__ import annotations

import json
import pickle
import time
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gym_tinker
from gym_tinker.envs.countdown import CountdownEnv, check_expression, generate_task, oracle, solve
from gym_tinker.tools.calculator import CalculatorError, evaluate


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_generated_tasks_are_solvable_and_in_range(difficulty):
    low, high = {"easy": (2, 100), "medium": (10, 250), "hard": (100, 999)}[difficulty]
    count = {"easy": 3, "medium": 4, "hard": 6}[difficulty]
    for seed in range(100):
        numbers, target, solution = generate_task(np.random.default_rng(seed), difficulty)
        assert len(numbers) == count and all(isinstance(n, int) and n > 0 for n in numbers)
        value, used = check_expression(solution, numbers)
        assert value == target and evaluate(solution) == target
        assert not Counter(used) - Counter(numbers)
        assert target not in numbers or target == sum(numbers)
        assert low <= target <= high or target == sum(numbers)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_oracle_gets_reward_one(difficulty):
    env = CountdownEnv(difficulty=difficulty)
    for seed in range(60):
        env.reset(seed=seed)
        _, reward, terminated, truncated, info = env.step(oracle(env))
        assert (reward, terminated, truncated, info["correct"]) == (1.0, True, False, True)


def test_seeded_determinism_and_variety():
    a, b = CountdownEnv(difficulty="hard"), CountdownEnv(difficulty="hard")
    obs_a = [a.reset(seed=s)[0] for s in range(20)]
    assert obs_a == [b.reset(seed=s)[0] for s in range(20)]
    assert len(set(obs_a)) == 20


def test_difficulty_changes_the_tasks():
    easy, hard = CountdownEnv(difficulty="easy"), CountdownEnv(difficulty="hard")
    easy.reset(seed=0)
    hard.reset(seed=0)
    assert len(easy.numbers) == 3 and len(hard.numbers) == 6
    assert any(n in (25, 50, 75, 100) for n in hard.numbers) and hard.target >= 100


def _env_with(numbers, target, **kwargs):
    env = CountdownEnv(dataset=[{"numbers": numbers, "target": target}], **kwargs)
    env.reset(seed=0)
    return env


@pytest.mark.parametrize(
    ("action", "reward"),
    [
        ("<answer>(3 + 5) * 2</answer>", 1.0),
        ("<answer>(3 + 5) * 2 = 16</answer>", 1.0),
        ("<answer>16 = 2 * (5 + 3)</answer>", 1.0),
        ("\\boxed{(3+5)*2}", 1.0),
        ("I try 7 + 5 first, no. Then (3 + 5) * 2 = 16 works.", 1.0),  # lenient: last expression
        ("<answer>(3 × 5) + 7 − 6</answer>", 0.0),  # 6 is not given
        ("<answer>7 * 2 + 3 - 5 + 7</answer>", 0.0),  # 7 used twice
        ("<answer>2 ** 4</answer>", 0.0),
        ("<answer>-3 + 19</answer>", 0.0),
        ("<answer>16</answer>", 0.0),
        ("<answer>(3 + 5) * 7</answer>", 0.0),  # valid but wrong
        ("<answer>7 / (5 - 5)</answer>", 0.0),
        ("<answer>__import__('os')</answer>", 0.0),
        ("<answer></answer>", 0.0),
        ("", 0.0),
        ("no idea", 0.0),
    ],
)
def test_rewards(action, reward):
    env = _env_with([2, 3, 5, 7], 16)
    _, got, terminated, truncated, info = env.step(action)
    assert got == reward and terminated and not truncated
    assert info["correct"] == (reward == 1.0)


def test_feedback_explains_the_problem():
    env = _env_with([2, 3, 5, 7], 16)
    assert "6 is not one of the numbers" in env.step("<answer>6 + 10</answer>")[0]
    env.reset(seed=0)
    assert "used 2 times" in env.step("<answer>7 + 7 + 2</answer>")[0]
    env.reset(seed=0)
    assert "not 16" in env.step("<answer>2 + 3</answer>")[0]


def test_duplicate_numbers_may_be_used_as_often_as_given():
    env = _env_with([4, 4, 1], 16)
    assert env.step("<answer>4 * 4</answer>")[1] == 1.0
    env.reset(seed=0)
    assert env.step("<answer>4 * 4 * 1</answer>")[1] == 1.0


def test_fractions_in_intermediate_steps_are_allowed():
    env = _env_with([1, 3, 4, 6], 24)
    assert env.step("<answer>6 / (1 - 3 / 4)</answer>")[1] == 1.0


def test_strict_mode_needs_tags():
    env = _env_with([2, 3, 5, 7], 16, lenient=False)
    assert env.step("(3 + 5) * 2")[1] == 0.0


def test_partial_credit_is_bounded_and_off_by_default():
    assert _env_with([2, 3, 5, 7], 16).step("<answer>3 * 5</answer>")[1] == 0.0
    env = _env_with([2, 3, 5, 7], 16, partial_credit=0.5)
    near = env.step("<answer>3 * 5</answer>")[1]
    env.reset(seed=0)
    far = env.step("<answer>2 + 3</answer>")[1]
    env.reset(seed=0)
    invalid = env.step("<answer>99</answer>")[1]
    assert 0.5 > near > far > 0.0 == invalid
    for bad in (-0.1, 1.0, "x", True):
        with pytest.raises(ValueError, match="partial_credit"):
            CountdownEnv(partial_credit=bad)


def test_check_expression_refuses_unsafe_and_foreign_syntax():
    for expression, fragment in [
        ("2 ** 3", "**"),
        ("7 // 2", "//"),
        ("abs(2)", "Call"),
        ("(2).real", "Attribute"),
        ("2.5 + 3", "whole numbers"),
        ("-2 + 3", "signs"),
    ]:
        with pytest.raises(CalculatorError) as info:
            check_expression(expression, [2, 3, 7])
        assert fragment in str(info.value)


def test_solver():
    assert evaluate(solve([2, 3, 5, 7], 16)) == 16
    assert evaluate(solve([25, 50, 75, 100, 3, 6], 952)) == 952
    assert solve([1, 1], 50) is None


def test_dataset_modes(tmp_path):
    rows = [{"numbers": [1, 2, 3], "target": 9, "task_id": "nine"}, {"numbers": [10, 10, 5, 2], "target": 40}]
    path = tmp_path / "countdown.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for source in (rows, str(path)):
        env = CountdownEnv(dataset=source)
        for index, task_id in ((0, "nine"), (1, "Countdown-dataset-1")):
            observation, info = env.reset(seed=0, options={"task_index": index})
            assert info["task_id"] == task_id and f"Target: {rows[index]['target']}" in observation
            assert env.step(oracle(env))[1] == 1.0


@pytest.mark.parametrize(
    ("rows", "fragment"),
    [
        ([{"numbers": [1, 2]}], "target"),
        ([{"numbers": "1 2", "target": 3}], "numbers"),
        ([{"numbers": [1, -2], "target": 3}], "positive"),
        ([{"numbers": [1, 2, 3, 4, 5, 6, 7], "target": 3}], "1 to 6"),
        ([{"numbers": [1, 2], "target": 3.5}], "target"),
        ([{"numbers": [1, True], "target": 3}], "numbers"),
    ],
)
def test_bad_dataset_rows(rows, fragment):
    with pytest.raises(ValueError, match=fragment):
        CountdownEnv(dataset=rows)


def test_missing_dataset_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        CountdownEnv(dataset=tmp_path / "nope.jsonl")


def test_oracle_on_unsolvable_dataset_task_still_sends_a_valid_try():
    env = _env_with([1, 1], 50)
    _, reward, terminated, _, info = env.step(oracle(env))
    assert reward == 0.0 and terminated and info["expression"] == "1 + 1"


def test_registered_pickles_and_reset_info():
    env = gym.make("tinker/Countdown-v0", difficulty="medium")
    _, info = env.reset(seed=4)
    assert {"system_prompt", "tools", "task_id", "difficulty"} <= info.keys() and info[
        "difficulty"
    ] == "medium"
    assert env.unwrapped.solution not in json.dumps(info)
    clone = pickle.loads(pickle.dumps(env.unwrapped))
    assert clone.step(oracle(clone))[1] == 1.0
    assert CountdownEnv.default_max_turns == next(
        e.max_turns for e in gym_tinker.ENV_ENTRIES if e.name == "Countdown"
    )


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_a_legal_action(text):
    env = _env_with([2, 3, 5, 7], 16)
    _, reward, terminated, _, _ = env.step(text)
    assert reward in (0.0, 1.0) and terminated


def test_pathological_action_stays_fast():
    env = _env_with([2, 3, 5, 7], 16)
    start = time.perf_counter()
    env.step("(" * 100_000 + "1," * 50_000)
    assert time.perf_counter() - start < 2.0
