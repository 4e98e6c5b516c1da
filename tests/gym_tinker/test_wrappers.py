"""Wrappers: the chat-conversation view, format shaping, and the JSONL episode recorder."""

from __future__ import annotations

import json
import os
import pickle
from typing import Any

import gymnasium as gym
import pytest

import gym_tinker  # noqa: F401  (registers the envs)
from gym_tinker.core import StepResult, TextEnv
from gym_tinker.envs.countdown import CountdownEnv
from gym_tinker.envs.math import MathEnv
from gym_tinker.envs.math import oracle as math_oracle
from gym_tinker.parsing import parse_tool_calls
from gym_tinker.tools.calculator import CALCULATOR_SCHEMA, calculator_tool
from gym_tinker.wrappers import (
    OBSERVATION_ROLE,
    TOOL_RESULTS,
    ChatHistory,
    ChatSpace,
    EpisodeRecorder,
    FormatReward,
)


class CalculatorQuiz(TextEnv):
    """Multi-turn test env: tool calls get calculator output (tool role), then an answer ends it."""

    default_max_turns = 4

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        return "What is 123 * 45?", {
            "system_prompt": "Use tools.",
            "tools": [CALCULATOR_SCHEMA],
            "task_id": "quiz-1",
        }

    def _step(self, action: str) -> StepResult:
        calls, errors = parse_tool_calls(action)
        if calls or errors:
            output = calculator_tool(calls[0].arguments) if calls else errors[0]
            info = {
                OBSERVATION_ROLE: "tool",
                "tool_call_id": calls[0].id if calls else "",
                "tool_name": "calculator",
            }
            return output, 0.0, False, False, info
        done = "5535" in action
        return ("" if done else "Try again."), float(done), done, False, {}


CALL = '<tool_call>{"name": "calculator", "arguments": {"expression": "123 * 45"}}</tool_call>'


# --- ChatHistory ------------------------------------------------------------------------------


def test_chat_history_builds_the_conversation_with_tool_messages():
    env = ChatHistory(CalculatorQuiz())
    messages, _ = env.reset(seed=0)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert (
        messages[0]["content"].startswith("Use tools.") and '"name": "calculator"' in messages[0]["content"]
    )
    assert "<tool_call>" in messages[0]["content"] and messages[1]["content"] == "What is 123 * 45?"
    assert env.tools == [CALCULATOR_SCHEMA]

    messages, *_ = env.step(CALL)
    assert messages[-2] == {"role": "assistant", "content": CALL}
    assert messages[-1] == {"role": "tool", "content": "5535", "name": "calculator"}

    messages, *_ = env.step("hmm")
    assert messages[-1] == {"role": "user", "content": "Try again."}

    messages, reward, terminated, truncated, _ = env.step("<answer>5535</answer>")
    assert reward == 1.0 and terminated and not truncated
    # The final empty observation adds no message.
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert env.observation_space.contains(messages)


def test_chat_history_observations_are_independent_copies():
    env = ChatHistory(CalculatorQuiz())
    messages, _ = env.reset(seed=0)
    messages[0]["content"] = "tampered"
    messages.append({"role": "user", "content": "injected"})
    later, *_ = env.step("hmm")
    assert later[0]["content"] != "tampered" and len(later) == 4


def test_chat_history_reset_starts_over():
    env = ChatHistory(CalculatorQuiz())
    env.reset(seed=0)
    env.step("hmm")
    messages, _ = env.reset(seed=1)
    assert len(messages) == 2


def test_chat_history_options():
    env = ChatHistory(CalculatorQuiz(), system_prompt="Be exact.", tools_in_system_prompt=False)
    messages, _ = env.reset(seed=0)
    assert messages[0] == {"role": "system", "content": "Be exact."}
    assert env.tools == [CALCULATOR_SCHEMA]
    env = ChatHistory(CalculatorQuiz(), system_prompt="", tools_in_system_prompt=False)
    assert [m["role"] for m in env.reset(seed=0)[0]] == ["user"]
    with pytest.raises(TypeError, match="system_prompt"):
        ChatHistory(CalculatorQuiz(), system_prompt=3)  # type: ignore[arg-type]


def test_chat_history_over_a_registered_env():
    env = ChatHistory(gym.make("tinker/Math-v0"))
    messages, info = env.reset(seed=0)
    assert messages[0]["content"] == info["system_prompt"]  # no tools, no tool section
    messages, reward, *_ = env.step(math_oracle(env))
    assert reward == 1.0 and messages[-1] == {"role": "user", "content": "Correct."}


def test_chat_history_passes_errors_through():
    env = ChatHistory(MathEnv())
    with pytest.raises(gym.error.ResetNeeded):
        env.step("too early")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="str"):
        env.step(42)  # type: ignore[arg-type]
    assert len(env.messages) == 2


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ([], True),
        ([{"role": "system", "content": ""}, {"role": "user", "content": "ü"}], True),
        ([{"role": "assistant", "content": "", "tool_calls": []}], True),
        ([{"role": "tool", "content": "4", "tool_call_id": "c", "name": "calculator"}], True),
        ([{"role": "robot", "content": "x"}], False),
        ([{"role": "user"}], False),
        ([{"role": "user", "content": 3}], False),
        ([{"role": "user", "content": "x", "extra": 1}], False),
        ([{"role": "tool", "content": "x", "name": 5}], False),
        ([{"role": "assistant", "content": "x", "tool_calls": "no"}], False),
        (({"role": "user", "content": "x"},), False),
        ("text", False),
        ([["user", "x"]], False),
    ],
)
def test_chat_space_contains(value, ok):
    assert ChatSpace().contains(value) is ok


def test_chat_space_sample_equality_and_pickle():
    space = ChatSpace(seed=3)
    assert all(space.contains(space.sample()) for _ in range(50))
    assert space == ChatSpace() and space != gym.spaces.Discrete(2)
    assert pickle.loads(pickle.dumps(space)) == space
    with pytest.raises(ValueError, match="max_sample_messages"):
        ChatSpace(max_sample_messages=-1)


# --- FormatReward -----------------------------------------------------------------------------


def test_format_reward_final_step_only_by_default():
    env = FormatReward(CalculatorQuiz(), bonus=0.2, penalty=0.1)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(CALL)  # a tool turn is not judged
    assert reward == 0.0 and "format_ok" not in info
    _, reward, terminated, _, info = env.step("<answer>5535</answer>")
    assert terminated and reward == pytest.approx(1.2) and info["format_ok"] and info["format_reward"] == 0.2


def test_format_reward_penalty_and_every_step():
    env = FormatReward(MathEnv(), bonus=0.0, penalty=0.25)
    env.reset(seed=0)
    assert env.step("63")[1] == pytest.approx(0.75)
    env = FormatReward(CalculatorQuiz(), penalty=0.5, when="every")
    env.reset(seed=0)
    _, reward, _, _, info = env.step("hmm")
    assert reward == -0.5 and info["format_ok"] is False


def test_format_reward_applies_on_truncation():
    env = FormatReward(CalculatorQuiz(max_turns=1), penalty=0.3)
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step("hmm")
    assert truncated and not terminated and reward == pytest.approx(-0.3)


def has_final_word(text: str) -> bool:
    return text.strip().endswith("done")


def test_format_reward_custom_check_and_validation():
    env = FormatReward(MathEnv(), has_final_word, bonus=0.1)
    env.reset(seed=0)
    assert env.step("63 done")[1] == pytest.approx(1.1)
    assert pickle.loads(pickle.dumps(env)).check is has_final_word
    for kwargs, fragment in [
        ({"bonus": 1.5}, "bonus"),
        ({"penalty": -0.1}, "penalty"),
        ({"bonus": float("nan")}, "bonus"),
        ({"when": "sometimes"}, "when"),
    ]:
        with pytest.raises(ValueError, match=fragment):
            FormatReward(MathEnv(), **kwargs)
    with pytest.raises(TypeError, match="callable"):
        FormatReward(MathEnv(), "tags")  # type: ignore[arg-type]


# --- EpisodeRecorder --------------------------------------------------------------------------


def read_lines(path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_recorder_writes_one_line_per_finished_episode(tmp_path):
    path = tmp_path / "nested" / "dir" / "episodes.jsonl"
    env = EpisodeRecorder(gym.make("tinker/Math-v0"), path)
    assert path.exists() and read_lines(path) == []
    env.reset(seed=7)
    env.step(math_oracle(env))
    assert env.episodes_written == 1
    (record,) = read_lines(path)  # on disk as soon as the episode ended
    assert record["env_id"] == "tinker/Math-v0" and record["seed"] == 7
    assert record["task_id"].startswith("Math-easy-") and record["difficulty"] == "easy"
    assert record["initial_observation"].startswith("What is")
    (turn,) = record["turns"]
    assert (turn["action"], turn["observation"], turn["reward"], turn["terminated"]) == (
        math_oracle(env),
        "Correct.",
        1.0,
        True,
    )
    assert record["num_turns"] == 1 and record["total_reward"] == 1.0 and record["terminated"]

    env.reset()
    env.step("wrong")
    second = read_lines(path)[1]
    assert second["seed"] is None and second["total_reward"] == 0.0


def test_recorder_multi_turn_truncation_and_abandoned_episode(tmp_path):
    path = tmp_path / "quiz.jsonl"
    env = EpisodeRecorder(CalculatorQuiz(max_turns=2), path, include_info=True)
    env.reset(seed=0)
    env.step("hmm")  # abandoned: reset before the end
    env.reset(seed=1)
    env.step(CALL)
    env.step("hmm")
    (record,) = read_lines(path)
    assert record["env_id"] == "CalculatorQuiz" and record["seed"] == 1
    assert record["num_turns"] == 2 and record["truncated"] and not record["terminated"]
    assert (
        record["turns"][0]["observation"] == "5535" and record["turns"][0]["info"][OBSERVATION_ROLE] == "tool"
    )


def test_recorder_appends_and_unicode(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"earlier": true}\n')
    env = EpisodeRecorder(CountdownEnv(), path)
    env.reset(seed=0)
    env.step("ünïcode → 答案")
    lines = read_lines(path)
    assert lines[0] == {"earlier": True} and lines[1]["turns"][0]["action"] == "ünïcode → 答案"


def test_recorder_over_chat_history(tmp_path):
    path = tmp_path / "chat.jsonl"
    env = EpisodeRecorder(ChatHistory(CalculatorQuiz()), path)
    env.reset(seed=0)
    env.step(CALL)
    env.step("<answer>5535</answer>")
    record = read_lines(path)[0]
    assert record["initial_observation"][0]["role"] == "system"
    assert record["turns"][0]["observation"][-1]["role"] == "tool"


def test_recorder_unwritable_paths(tmp_path):
    with pytest.raises(ValueError, match="cannot write"):
        EpisodeRecorder(MathEnv(), tmp_path)  # a folder
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="cannot write"):
        EpisodeRecorder(MathEnv(), blocker / "sub" / "e.jsonl")  # parent is a file
    with pytest.raises(ValueError, match="path"):
        EpisodeRecorder(MathEnv(), 3)  # type: ignore[arg-type]
    if os.geteuid() != 0:  # root ignores permissions
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(ValueError, match="cannot write"):
            EpisodeRecorder(MathEnv(), locked / "e.jsonl")


def test_recorder_pickles_mid_episode(tmp_path):
    path = tmp_path / "p.jsonl"
    env = EpisodeRecorder(MathEnv(), path)
    env.reset(seed=2)
    clone = pickle.loads(pickle.dumps(env))
    clone.step(math_oracle(clone))
    assert read_lines(path)[0]["total_reward"] == 1.0


class TwoToolsPerTurn(TextEnv):
    """Answers two calls in one step and lists them in info["tool_results"]."""

    default_max_turns = 2

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        return "Go.", {"system_prompt": "", "tools": [CALCULATOR_SCHEMA]}

    def _step(self, action: str) -> StepResult:
        results = [
            {"name": "calculator", "tool_call_id": "a", "content": "1", "ok": True},
            {"name": "calculator", "tool_call_id": "", "content": "Error: x", "ok": False},
        ]
        observation = "\n".join(f"<tool_response>{r['content']}</tool_response>" for r in results)
        return observation, 0.0, False, False, {OBSERVATION_ROLE: "tool", TOOL_RESULTS: results}


def test_chat_history_one_tool_message_per_listed_result():
    env = ChatHistory(TwoToolsPerTurn())
    messages, _ = env.reset(seed=0)
    assert messages[0]["content"].startswith("# Tools")  # tools only, no base prompt
    messages, *_ = env.step("two calls")
    assert messages[-2:] == [
        {"role": "tool", "content": "1", "tool_call_id": "a", "name": "calculator"},
        {"role": "tool", "content": "Error: x", "name": "calculator"},
    ]


def test_chat_history_over_tool_use_env():
    from gym_tinker.envs.tool_use import ToolUseEnv
    from gym_tinker.envs.tool_use import oracle as tool_oracle

    env = ChatHistory(ToolUseEnv(difficulty="easy"))
    env.reset(seed=0)
    messages, *_ = env.step(tool_oracle(env))
    assert messages[-1]["role"] == "tool" and env.observation_space.contains(messages)
    messages, reward, terminated, *_ = env.step(tool_oracle(env))
    assert reward == 1.0 and terminated
