"""MathEnv: seeded tasks per difficulty, dataset mode, lenient checking, shaping bounds, oracle."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gym_tinker
from gym_tinker.answers import parse_number
from gym_tinker.envs.math import MathEnv, generate_problem, oracle
from gym_tinker.tools.calculator import evaluate


def questions(env: MathEnv, seeds) -> list[str]:
    return [env.reset(seed=s)[0] for s in seeds]


def test_same_seed_same_task_different_seed_different_task():
    a, b = MathEnv(difficulty="medium"), MathEnv(difficulty="medium")
    assert questions(a, range(20)) == questions(b, range(20))
    assert len(set(questions(a, range(20)))) > 10
    assert a.reset(seed=1)[1]["task_id"] == b.reset(seed=1)[1]["task_id"]


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_oracle_solves_every_generated_task(difficulty):
    env = MathEnv(difficulty=difficulty)
    for seed in range(150):
        env.reset(seed=seed)
        _, reward, terminated, truncated, info = env.step(oracle(env))
        assert (reward, terminated, truncated, info["correct"]) == (1.0, True, False, True), env.question


def test_difficulty_changes_the_tasks():
    rng_seeds = range(100)
    easy, hard = MathEnv(difficulty="easy"), MathEnv(difficulty="hard")
    easy_answers = [
        abs(parse_number(generate_problem(np.random.default_rng(s), "easy")[1])) for s in rng_seeds
    ]
    hard_answers = [
        abs(parse_number(generate_problem(np.random.default_rng(s), "hard")[1])) for s in rng_seeds
    ]
    assert max(easy_answers) <= 144
    assert np.mean(hard_answers) > 10 * np.mean(easy_answers)
    assert all(q.startswith("What is") for q in questions(easy, range(30)))
    assert any("%" in q for q in questions(hard, range(60)))
    assert any(not q.startswith("What is") for q in questions(hard, range(60)))


def test_generated_expressions_agree_with_the_calculator():
    for seed in range(200):
        for difficulty in ("easy", "medium"):
            question, answer = generate_problem(np.random.default_rng(seed), difficulty)
            if question.startswith("What is "):
                assert evaluate(question[len("What is ") : -1]) == parse_number(answer)


def test_reset_info_follows_the_conventions_and_hides_the_answer():
    env = MathEnv()
    observation, info = env.reset(seed=5)
    assert {"system_prompt", "tools", "task_id", "difficulty"} <= info.keys()
    assert "<answer>" in info["system_prompt"] and "<answer>" in observation
    assert info["tools"] == [] and info["difficulty"] == "easy"
    assert env.answer not in info["task_id"].split("-")[:2]
    assert env.answer not in json.dumps({k: v for k, v in info.items() if k != "system_prompt"}).replace(
        info["task_id"], ""
    )


@pytest.mark.parametrize(
    ("action", "reward"),
    [
        ("<answer>{a}</answer>", 1.0),
        ("\\boxed{{{a}}}", 1.0),
        ("Let me see... the answer is {a}", 1.0),
        ("<answer>{a}.0</answer>", 1.0),
        ("<answer>{wrong}</answer>", 0.0),
        ("<answer></answer>", 0.0),
        ("", 0.0),
        ("I have no idea", 0.0),
    ],
)
def test_rewards(action, reward):
    env = MathEnv()
    env.reset(seed=0)
    answer = int(env.answer)
    _, got, terminated, _, info = env.step(action.format(a=answer, wrong=answer + 1))
    assert got == reward and terminated
    assert info["correct"] == (reward == 1.0)


def test_strict_mode_needs_tags_or_box():
    env = MathEnv(lenient=False)
    env.reset(seed=0)
    assert env.step(f"It is {env.answer}")[1] == 0.0
    env.reset(seed=0)
    assert env.step(f"<answer>{env.answer}</answer>")[1] == 1.0


def test_format_bonus_never_lets_a_wrong_answer_beat_a_right_one():
    env = MathEnv(format_bonus=0.49)
    rewards = {}
    for name, template in {
        "right_tags": "<answer>{a}</answer>",
        "right_plain": "{a}",
        "wrong_tags": "<answer>{w}</answer>",
        "wrong_plain": "{w}",
        "empty_tags": "<answer></answer>",
    }.items():
        env.reset(seed=3)
        a = parse_number(env.answer)
        rewards[name] = env.step(template.format(a=env.answer, w=a + 1))[1]
    assert rewards["right_tags"] == 1.0
    assert rewards["right_plain"] > rewards["wrong_tags"] > rewards["wrong_plain"] == 0.0
    assert rewards["empty_tags"] == 0.0


@pytest.mark.parametrize("bonus", [-0.1, 0.5, 1.0, True, "0.1", float("nan")])
def test_bad_format_bonus(bonus):
    with pytest.raises(ValueError, match="format_bonus"):
        MathEnv(format_bonus=bonus)


def test_bad_difficulty():
    with pytest.raises(ValueError, match="difficulty"):
        MathEnv(difficulty="extreme")


def test_dataset_from_list_of_dicts():
    rows = [
        {"question": "What is 6 times 7?", "answer": 42, "task_id": "q42"},
        {"question": "Capital of France?", "answer": "Paris"},
    ]
    env = MathEnv(dataset=rows)
    observation, info = env.reset(seed=0, options={"task_index": 1})
    assert observation.startswith("Capital of France?") and info["task_id"] == "Math-dataset-1"
    assert env.step("<answer>paris</answer>")[1] == 1.0
    observation, info = env.reset(options={"task_index": 0})
    assert info["task_id"] == "q42"
    assert env.step("42.0")[1] == 1.0
    picked = {env.reset(seed=s)[1]["task_id"] for s in range(30)}
    assert picked == {"q42", "Math-dataset-1"}


def test_dataset_from_jsonl_file(tmp_path):
    path = tmp_path / "math.jsonl"
    path.write_text(
        "\n".join(json.dumps({"question": f"What is {i} + {i}?", "answer": 2 * i}) for i in range(5)) + "\n"
    )
    env = MathEnv(dataset=str(path))
    for seed in range(10):
        env.reset(seed=seed)
        assert env.step(oracle(env))[1] == 1.0
    env.reset(options={"task_index": 3})
    assert env.question == "What is 3 + 3?" and env.step("6")[1] == 1.0


def test_bad_datasets(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing\.jsonl"):
        MathEnv(dataset=str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "a", "answer": 1}\n{not json\n')
    with pytest.raises(ValueError, match="line 2"):
        MathEnv(dataset=str(bad))
    with pytest.raises(ValueError, match="answer"):
        MathEnv(dataset=[{"question": "What?"}])
    with pytest.raises(ValueError, match=r"row 1.*question"):
        MathEnv(dataset=[{"question": "ok", "answer": 1}, {"question": "", "answer": 1}])
    with pytest.raises(ValueError, match=r"row 0.*answer"):
        MathEnv(dataset=[{"question": "ok", "answer": None}])
    with pytest.raises(ValueError, match="task_index"):
        MathEnv(dataset=[{"question": "ok", "answer": 1}]).reset(options={"task_index": 5})


def test_registered_and_single_turn():
    env = gym.make("tinker/Math-v0", difficulty="hard")
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step(oracle(env))
    assert reward == 1.0 and terminated and not truncated
    with pytest.raises(gym.error.ResetNeeded):
        env.step("again")
    assert MathEnv.default_max_turns == next(e.max_turns for e in gym_tinker.ENV_ENTRIES if e.name == "Math")


def test_pickles_mid_episode():
    env = MathEnv(difficulty="medium")
    env.reset(seed=11)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.step(oracle(clone))[1] == 1.0
    assert env.step(oracle(env))[1] == 1.0


def test_oracle_rejects_other_envs():
    from gym_tinker.envs.countdown import CountdownEnv

    with pytest.raises(TypeError, match="MathEnv"):
        oracle(CountdownEnv())


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_a_legal_action(text):
    env = MathEnv(format_bonus=0.2)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(text)
    assert 0.0 <= reward <= 1.0 and terminated and isinstance(info["correct"], bool)
