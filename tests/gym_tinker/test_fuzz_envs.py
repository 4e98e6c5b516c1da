"""Property-based fuzzing of every env's actions: any string gets an answer, never an exception."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gym_tinker
from gym_tinker.testing import ADVERSARIAL_ACTIONS

ENV_IDS = [entry.id for entry in gym_tinker.ENV_ENTRIES]
TOOL_NAMES = ["calculator", "python", "search", "lookup", "run_python", "final_answer", "", "calc ulator"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def near_miss_tool_calls(draw):
    """A tool call in one of the common formats, then damaged: cut short, tags or fences wrong."""
    arguments = draw(
        st.dictionaries(st.sampled_from(["expression", "code", "query", "key", "x"]), json_values, max_size=3)
        | json_values
    )
    payload = {"name": draw(st.sampled_from(TOOL_NAMES) | st.text(max_size=12)), "arguments": arguments}
    if draw(st.booleans()):
        payload = {
            "tool_calls": [{"type": "function", "function": {**payload, "arguments": json.dumps(arguments)}}]
        }
    body = json.dumps(payload)
    cut = draw(st.integers(0, len(body)))
    body = body[:cut] if draw(st.booleans()) else body
    wrap = draw(
        st.sampled_from(
            [
                "<tool_call>{}</tool_call>",
                "<tool_call>{}",
                "{}</tool_call>",
                "```json\n{}\n```",
                "```\n{}",
                "Let me call a tool: {} then answer.",
                "<tool_call><tool_call>{}</tool_call>",
                "{}",
            ]
        )
    )
    return wrap.replace("{}", body, 1)


answers = st.builds(
    lambda open_tag, inner, close_tag: open_tag + inner + close_tag,
    st.sampled_from(["<answer>", "\\boxed{", "<ANSWER>", "", "Final answer: "]),
    st.text(max_size=40)
    | st.integers().map(str)
    | st.floats().map(str)
    | st.sampled_from(["crane", "1/0", "2**99999"]),
    st.sampled_from(["</answer>", "}", "", "</answer></answer>"]),
)
huge = st.builds(lambda unit, n: unit * n, st.text(min_size=1, max_size=5), st.integers(10_000, 200_000))
actions = st.one_of(st.text(), near_miss_tool_calls(), answers, huge, st.sampled_from(ADVERSARIAL_ACTIONS))

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_fuzzed_actions_never_raise(env_id):
    env = gym.make(env_id)
    state = {"done": True, "seed": 0}

    @SETTINGS
    @given(action_list=st.lists(actions, min_size=1, max_size=3))
    def run(action_list):
        for action in action_list:
            if state["done"]:
                state["seed"] += 1
                env.reset(seed=state["seed"])
            observation, reward, terminated, truncated, info = env.step(action)
            assert isinstance(observation, str) and isinstance(info, dict)
            assert isinstance(float(reward), float)
            assert isinstance(terminated, bool) and isinstance(truncated, bool)
            state["done"] = terminated or truncated

    try:
        run()
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
@SETTINGS
@given(action=st.one_of(st.integers(), st.none(), st.binary(), st.lists(st.text(), max_size=2), st.floats()))
def test_non_string_actions_are_type_errors(env_id, action):
    env = gym.make(env_id)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="str"):
        env.step(action)
