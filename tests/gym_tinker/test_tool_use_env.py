"""ToolUse: the oracle solves every difficulty, and bad messages become feedback, not exceptions."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest

import gym_tinker  # noqa: F401  (registers the envs)
from gym_tinker.envs.tool_use import MAX_TOTAL_BONUS, TEMPLATES, ToolUseEnv, oracle
from gym_tinker.envs.tool_use.tasks import generate_task
from gym_tinker.tools.knowledge_base import knowledge_base


def _play(env, seed: int, policy=oracle):
    env.reset(seed=seed)
    actions, total = [], 0.0
    while True:
        action = policy(env)
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        if terminated or truncated:
            return actions, obs, reward, terminated, truncated, info, total


@pytest.mark.parametrize(("difficulty", "calls"), [("easy", {1}), ("medium", {3}), ("hard", {2, 3, 4})])
def test_oracle_solves_every_difficulty(difficulty, calls):
    env = gym.make("tinker/ToolUse-v0", difficulty=difficulty)
    seen_kinds = set()
    for seed in range(30):
        actions, obs, reward, terminated, truncated, _info, _ = _play(env, seed)
        assert (reward, terminated, truncated, obs) == (1.0, True, False, "Correct."), (seed, actions)
        assert len(actions) - 1 in calls
        seen_kinds.add(env.unwrapped.task.task_id.split("-")[2])
    assert seen_kinds == {kind.split("-")[0] for kind in TEMPLATES[difficulty]}


def test_hard_tasks_exercise_the_python_tool_through_the_sandbox():
    env = ToolUseEnv(difficulty="hard")
    for seed in range(40):
        env.reset(seed=seed)
        if any(call.name == "python" for call in env.task.plan):
            break
    else:
        pytest.fail("no hard task used the python tool in 40 seeds")
    for _ in env.task.plan:
        obs, *_rest, info = env.step(oracle(env))
        assert info["tool_results"][0]["ok"], obs
    assert obs.startswith('<tool_response name="python">')
    assert env.step(oracle(env))[1] == 1.0


def test_reset_info_and_system_prompt():
    env = ToolUseEnv(difficulty="medium")
    obs, info = env.reset(seed=5)
    assert obs.startswith(f"Question: {env.task.question}")
    assert info["difficulty"] == "medium" and info["task_id"] == env.task.task_id
    prompt = info["system_prompt"]
    for needle in ("<tool_call>", "</tool_call>", "<answer>", "lookup(entity, attribute)", "python(code)"):
        assert needle in prompt
    # The prompt and schemas do not depend on the task, and no other field holds the answer.
    for seed in range(10):
        _, other = env.reset(seed=seed)
        assert other["system_prompt"] == prompt and other["tools"] == info["tools"]
        fields = {k: v for k, v in other.items() if k not in ("system_prompt", "tools")}
        assert env.task.answer not in fields.values()
        assert str(env.task.answer) not in [str(v) for v in fields.values()]


def test_wrong_answer_scores_zero_and_boxed_answers_count():
    env = ToolUseEnv(difficulty="easy")
    env.reset(seed=1)
    wrong = float(env.task.answer) + 1
    obs, reward, terminated, _, info = env.step(f"<answer>{wrong}</answer>")
    assert (obs, reward, terminated, info["correct"]) == ("Incorrect.", 0.0, True, False)
    env.reset(seed=1)
    assert env.step(f"The answer is \\boxed{{{env.task.answer}}}")[1] == 1.0


def test_malformed_and_unknown_tool_calls_come_back_as_tool_errors():
    env = ToolUseEnv(difficulty="easy")
    env.reset(seed=2)
    cases = {
        '<tool_call>{"name": "lookup", "arguments": {"entity": "x"</tool_call>': "Error: Malformed tool call",
        '<tool_call>{"name": "teleport", "arguments": {}}</tool_call>': "Error: unknown tool 'teleport'",
        '<tool_call>{"name": "lookup", "arguments": {"entity": 3}}</tool_call>': "Error: bad arguments for tool 'lookup'",
        '<tool_call>{"name": "calculator", "arguments": {"expression": "1/0"}}</tool_call>': "Error:",
        "<tool_call>not json at all</tool_call>": "Error: Malformed tool call",
    }
    for action, start in cases.items():
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["observation_role"] == "tool"
        assert obs.startswith("<tool_response") and start in obs, (action, obs)
        assert (reward, terminated) == (0.0, False)
        assert not info["tool_results"][0]["ok"]
        if truncated:
            env.reset(seed=2)


def test_message_without_call_or_answer_gets_feedback():
    env = ToolUseEnv()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(
        "I think I should look something up first, maybe 3 things."
    )
    assert info["observation_role"] == "user"
    assert "<tool_call>" in obs and "<answer>" in obs
    assert (reward, terminated, truncated) == (0.0, False, False)


def test_several_calls_in_one_message_and_the_per_message_cap():
    env = ToolUseEnv(max_calls_per_turn=2)
    env.reset(seed=4)
    call = oracle(env)
    obs, _, _, _, info = env.step(call * 3)
    assert [r["ok"] for r in info["tool_results"]] == [True, True, False]
    assert obs.count("<tool_response") == 3
    assert "at most 2 tool calls" in info["tool_results"][2]["content"]


def test_turn_limit_truncates():
    env = gym.make("tinker/ToolUse-v0", max_turns=3)
    env.reset(seed=0)
    results = [env.step("hmm") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert not any(r[2] for r in results)
    with pytest.raises(gym.error.ResetNeeded):
        env.step("hmm")


def test_same_seed_same_episode_different_seed_different_task():
    first, second = ToolUseEnv(difficulty="hard"), ToolUseEnv(difficulty="hard")
    a = _play(first, 17)
    b = _play(second, 17)
    assert a[0] == b[0]
    assert first.task == second.task
    first.reset(seed=18)
    assert first.task != second.task
    assert generate_task(first.np_random, "easy") != generate_task(second.np_random, "easy")


def test_shaping_bonus_is_bounded_and_ignores_repeats_and_failures():
    env = ToolUseEnv(difficulty="medium", tool_call_bonus=0.1)
    _, _, reward, _, _, _, total = _play(env, 3)
    assert reward == 1.0 and total == pytest.approx(1.0 + 3 * 0.1)
    env = ToolUseEnv(difficulty="easy", tool_call_bonus=0.1, max_turns=8)
    env.reset(seed=3)
    call = oracle(env)
    rewards = [env.step(call)[1] for _ in range(2)]
    assert rewards == [0.1, 0.0]  # the repeat earns nothing
    assert env.step('<tool_call>{"name": "nope", "arguments": {}}</tool_call>')[1] == 0.0
    kb = knowledge_base(env.task.kb_seed)
    many = "".join(
        f'<tool_call>{{"name": "lookup", "arguments": {{"entity": "{name}", "attribute": "population"}}}}</tool_call>'
        for name in kb.names("city")[:4]
    )
    env.max_calls_per_turn = 4
    env.step(many)
    env.step(many.replace("population", "distance to " + kb.names("city")[5]))
    assert env.bonus_total == pytest.approx(MAX_TOTAL_BONUS)
    with pytest.raises(ValueError, match=r"tool_call_bonus.*\[0, 0.1\], got 0.5"):
        ToolUseEnv(tool_call_bonus=0.5)


def test_dataset_questions(tmp_path):
    kb = knowledge_base(0)
    product = kb.names("product")[1]
    rows = [{"question": f"Price of the {product}?", "answer": kb.fact(product, "price"), "kb_seed": 0}]
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    env = ToolUseEnv(dataset=str(path))
    obs, info = env.reset(seed=0)
    assert product in obs and info["kb_seed"] == 0
    lookup = f'<tool_call>{{"name": "lookup", "arguments": {{"entity": "{product}", "attribute": "price"}}}}</tool_call>'
    assert f"{kb.fact(product, 'price'):.2f}" in env.step(lookup)[0]
    assert env.step(oracle(env))[1] == 1.0
    with pytest.raises(ValueError, match="missing column"):
        ToolUseEnv(dataset=[{"question": "?"}])
    with pytest.raises(ValueError, match="kb_seed"):
        ToolUseEnv(dataset=[{"question": "?", "answer": 1, "kb_seed": "zero"}]).reset(seed=0)


def test_mid_episode_pickle_round_trip():
    env = ToolUseEnv(difficulty="medium")
    env.reset(seed=8)
    env.step(oracle(env))
    copy = pickle.loads(pickle.dumps(env))
    while True:
        a = env.step(oracle(env))
        b = copy.step(oracle(copy))
        assert a[:4] == b[:4]
        if a[2]:
            break
    assert a[1] == 1.0


def test_non_string_action_is_a_type_error():
    env = ToolUseEnv()
    env.reset(seed=0)
    with pytest.raises(TypeError, match="expects the action as a str"):
        env.step({"name": "lookup"})  # type: ignore[arg-type]
