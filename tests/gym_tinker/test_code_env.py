"""Code: hidden tests in the sandbox, reward = pass rate, broken code contained with reward 0."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest

import gym_tinker  # noqa: F401  (registers the envs)
from gym_tinker.envs.code import FAMILIES, CodeEnv, extract_code, oracle
from gym_tinker.tools.sandbox import SandboxLimits

FAST = SandboxLimits(wall_seconds=2.0, cpu_seconds=2)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_oracle_passes_every_family(difficulty):
    env = gym.make("tinker/Code-v0", difficulty=difficulty)
    entry_points = set()
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        assert info["entry_point"] in obs
        obs, reward, terminated, _truncated, info = env.step(oracle(env))
        # (gym.make's TimeLimit also sets truncated on the last allowed step: only 1 here.)
        assert (reward, terminated) == (1.0, True), (seed, obs)
        assert info["passed"] == info["total"] == {"easy": 8, "medium": 10, "hard": 12}[difficulty]
        entry_points.add(env.unwrapped.task.entry_point)
    assert entry_points == {family.entry_point for family in FAMILIES[difficulty]}


def test_partly_right_solution_gets_a_fractional_reward():
    env = CodeEnv(dataset=[_row()], limits=FAST)
    env.reset(seed=0)
    partial = "```python\ndef double(x):\n    return x * 2 if x < 3 else x\n```"
    obs, reward, _, _, info = env.step(partial)
    assert reward == pytest.approx(0.5)
    assert (info["passed"], info["total"]) == (2, 4)
    assert obs.startswith("2/4 tests passed. First failure (test 2): returned 3, expected 6")


def test_generated_task_rewards_a_wrong_constant_below_one():
    env = CodeEnv(difficulty="medium", limits=FAST)
    for seed in range(6):
        env.reset(seed=seed)
        _, reward, *_ = env.step(f"def {env.task.entry_point}(*args):\n    return []")
        assert 0.0 <= reward < 1.0


@pytest.mark.parametrize(
    ("reply", "feedback"),
    [
        ("```python\ndef double(x)\n    return x * 2\n```", "The code could not be loaded: SyntaxError"),
        ("```python\ndef double(x):\n    while True:\n        pass\n```", "not run (timed out after 1 s)"),
        ("```python\ndef double(x):\n    return [0] * 10**10\n```", "raised MemoryError"),
        ("```python\nimport os\nos._exit(9)\n```", "not run (exit code 9)"),
        ("```python\ndef triple(x):\n    return 3 * x\n```", "does not define a function named double"),
        ("", "The code could not be loaded"),
        ("I don't know.", "The code could not be loaded: SyntaxError"),
    ],
)
def test_broken_code_is_contained_with_reward_zero(reply, feedback):
    env = CodeEnv(dataset=[_row()], limits=SandboxLimits(wall_seconds=1.0, cpu_seconds=5))
    env.reset(seed=0)
    obs, reward, terminated, truncated, _info = env.step(reply)
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert feedback in obs, obs


def test_printing_solution_still_passes_and_cannot_fake_results():
    env = CodeEnv(dataset=[_row()], limits=FAST)
    env.reset(seed=0)
    noisy = "```python\ndef double(x):\n    print('@@gym-tinker-', x)\n    return 2 * x\n```"
    assert env.step(noisy)[1] == 1.0


def test_extract_code_prefers_the_block_defining_the_function():
    text = (
        "First a helper:\n```python\ndef helper():\n    pass\n```\n"
        "Then:\n```python\ndef solve(x):\n    return x\n```\nAnd a test:\n```python\nassert solve(1) == 1\n```"
    )
    assert extract_code(text, "solve") == "def solve(x):\n    return x\n"
    assert extract_code(text).startswith("assert solve")
    assert extract_code("```\ndef f(): pass") == "def f(): pass"  # unclosed fence at the end


def test_dataset_rows_and_errors(tmp_path):
    path = tmp_path / "code.jsonl"
    row = _row()
    row["tests"] = json.dumps(row["tests"])  # tests may also be given as JSON text
    path.write_text(json.dumps(row) + "\n")
    env = CodeEnv(dataset=str(path), limits=FAST)
    obs, info = env.reset(seed=0)
    assert obs == "Write double(x)." and info["entry_point"] == "double"
    assert env.step(oracle(env))[1] == 1.0  # no solution column: the oracle uses the tests
    with pytest.raises(ValueError, match="test 0 must be"):
        CodeEnv(dataset=[{**_row(), "tests": [[1, 2]]}]).reset(seed=0)
    with pytest.raises(ValueError, match="entry_point"):
        CodeEnv(dataset=[{**_row(), "entry_point": "not a name"}]).reset(seed=0)
    with pytest.raises(ValueError, match="missing column"):
        CodeEnv(dataset=[{"prompt": "x"}])


def test_seeded_determinism_and_pickle():
    a, b = CodeEnv(difficulty="hard"), CodeEnv(difficulty="hard")
    assert a.reset(seed=3) == b.reset(seed=3)
    assert a.task == b.task
    assert a.reset(seed=4)[0] != b.reset(seed=3)[0]
    copy = pickle.loads(pickle.dumps(a))
    assert copy.step(oracle(copy))[1] == 1.0


def _row() -> dict:
    return {
        "prompt": "Write double(x).",
        "entry_point": "double",
        "tests": [
            {"args": [1], "expected": 2},
            {"args": [2], "expected": 4},
            {"args": [3], "expected": 6},
            {"args": [4], "expected": 8},
        ],
    }
