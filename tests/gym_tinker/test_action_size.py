"""Actions of any size: every env's step is linear in the action's length, and long actions are cut."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gym_tinker
from gym_tinker.adversarial import (
    ADVERSARIAL_PATTERNS,
    AdversarialPattern,
    check_linear_step,
    check_linear_time,
)
from gym_tinker.envs.code.env import _fenced_blocks, extract_code
from gym_tinker.envs.guess_number import GuessNumberEnv
from gym_tinker.envs.math import MathEnv
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS, action_as_read, cap_action, check_max_action_chars
from gym_tinker.parsing import (
    _NUMBER,
    _answer_tag_content,
    extract_boxed,
    has_answer_tags,
    last_answer_or_box,
    last_number,
)
from gym_tinker.wrappers import ChatHistory, EpisodeRecorder

ENV_IDS = [entry.id for entry in gym_tinker.ENV_ENTRIES]
MEGABYTE = 1 << 20

# Pieces of the actions that break naive parsers; hypothesis strings them into a repeated unit.
TOKENS = [
    "<answer>", "</answer>", "<ANSWER>", "< answer >", "<tool_call>", "</tool_call>", "<move>", "</move>",
    "{", "}", "[", "]", "(", ")", '"', "'", "\\", ":", ",", ".", "-", "1", "42", "1,000", "\\boxed{",
    "\\frac{", "`", "```", "```python\n", "\n", " ", "\t", "é", "٣", "²", "🙂", "\u202e", "name",
    '"name": ', '"arguments": ', "def f(", "answer is ", "crane", "<", ">", "/",
]  # fmt: skip

units = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=6).map("".join)


# --- linear time ---------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_step_time_is_linear_on_every_adversarial_pattern(env_id):
    times = check_linear_step(env_id)
    assert set(times) == {p.name for p in ADVERSARIAL_PATTERNS}


@pytest.mark.parametrize("env_id", ENV_IDS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit=units)
def test_step_time_is_linear_on_generated_floods(env_id, unit):
    check_linear_step(env_id, patterns=[AdversarialPattern(f"flood of {unit!r}", unit)])


def test_the_linearity_check_catches_a_quadratic_parser():
    lazy = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
    floods = [p for p in ADVERSARIAL_PATTERNS if p.name == "open answer tags"]
    with pytest.raises(AssertionError, match=r"not linear.*open answer tags"):
        check_linear_time(lambda: lazy.search, patterns=floods, size=2_000)


# --- the linear parsers give the results of the patterns they replace ----------------------------

_FINAL = re.compile(r"<answer>(.*?)</answer>|\\boxed\{([^{}]*)\}", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_BOX_START = re.compile(r"\\(?:boxed|fbox)\s*\{")
pieces = st.lists(
    st.sampled_from([*TOKENS, "</ANSWER>", "\\boxed{2}", "ſ", "x", "```py x\n"]), max_size=14
).map("".join)


def _reference_final(text):
    last = None
    for last in _FINAL.finditer(text):  # noqa: B007
        pass
    return None if last is None else (last.group(1) if last.group(1) is not None else last.group(2))


def _reference_boxed(text):
    for match in list(_BOX_START.finditer(text))[-20:][::-1]:
        depth = 1
        for i in range(match.end(), len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                return text[match.end() : i]
    return None


@settings(max_examples=500, deadline=None)
@given(text=pieces)
def test_last_answer_or_box_matches_the_regex_it_replaces(text):
    assert last_answer_or_box(text) == _reference_final(text)


@settings(max_examples=500, deadline=None)
@given(text=pieces)
def test_fenced_blocks_match_the_regex_they_replace(text):
    assert _fenced_blocks(text) == _FENCE.findall(text)


@settings(max_examples=500, deadline=None)
@given(text=pieces)
def test_extract_boxed_matches_the_scan_from_every_box(text):
    assert extract_boxed(text) == _reference_boxed(text)


_OPEN_TAG = re.compile(r"<\s*answer\s*>", re.IGNORECASE)
_CLOSE_TAG = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)


@settings(max_examples=300, deadline=None)
@given(text=pieces, padding=st.sampled_from([0, 5_000]), at=st.sampled_from(["start", "end"]))
def test_answer_tags_read_from_the_tail_match_a_scan_of_every_tag(text, padding, at):
    text = " " * padding + text if at == "start" else text + " " * padding  # beyond the 4 KB tail or not
    opens = list(_OPEN_TAG.finditer(text))
    content, closed = None, False
    if opens:
        close = _CLOSE_TAG.search(text, opens[-1].end())
        content, closed = text[opens[-1].end() : close.start() if close else len(text)], close is not None
    assert _answer_tag_content(text) == content
    assert has_answer_tags(text) == bool(closed and content.strip())


numbers = st.lists(
    st.sampled_from(["1", "22", ",", "000", ".", "5", "/", "-", " ", "x", "3/4", "1,000.5"]), max_size=14
)


@settings(max_examples=300, deadline=None)
@given(parts=numbers, padding=st.sampled_from([0, 5_000]), filler=st.sampled_from([" ", "1", "1,000 "]))
def test_last_number_read_from_the_tail_matches_a_scan_of_every_number(parts, padding, filler):
    text = filler * padding + "".join(parts)
    every = _NUMBER.findall(text)
    assert last_number(text) == (every[-1] if every else None)


def test_extract_code_still_prefers_the_block_defining_the_entry_point():
    text = "```python\ndef f():\n    return 1\n```\n```python\nprint(2)\n```" + "`" * 100_000
    assert extract_code(text, "f") == "def f():\n    return 1\n"


# --- the action size cap -------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, True, 2.5, "100"])
def test_invalid_caps_are_refused_naming_the_value(value):
    with pytest.raises(ValueError, match=re.escape(repr(value))):
        check_max_action_chars(value)
    with pytest.raises(ValueError, match="max_action_chars"):
        MathEnv(max_action_chars=value)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_env_takes_the_cap_through_gym_make(env_id):
    assert gym.make(env_id).unwrapped.max_action_chars == DEFAULT_MAX_ACTION_CHARS
    assert gym.make(env_id, max_action_chars=100).unwrapped.max_action_chars == 100
    assert gym.make(env_id, max_action_chars=None).unwrapped.max_action_chars is None


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_megabyte_action_is_cut_with_a_note(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    observation, _, _, _, info = env.step("x" * MEGABYTE)
    assert observation.startswith(
        f"Your message was {MEGABYTE:,} characters long; only the first {DEFAULT_MAX_ACTION_CHARS:,} were read."
    )
    assert info["action_truncated"] is True


def test_an_answer_inside_the_cap_is_still_read_and_one_past_it_is_not():
    env = MathEnv()
    env.reset(seed=0)  # the answer is 63 (see MathEnv's docstring)
    _, reward, terminated, _, _ = env.step("<answer>63</answer>" + " " * MEGABYTE)
    assert (reward, terminated) == (1.0, True)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(" " * DEFAULT_MAX_ACTION_CHARS + "<answer>63</answer>")
    assert reward == 0.0 and info["action_truncated"]


def test_no_cap_reads_the_whole_action():
    env = MathEnv(max_action_chars=None)
    env.reset(seed=0)
    observation, reward, _, _, info = env.step(" " * MEGABYTE + "<answer>63</answer>")
    assert reward == 1.0 and "action_truncated" not in info and "characters long" not in observation


def test_an_action_within_the_cap_is_untouched():
    env = GuessNumberEnv(max_action_chars=20)
    env.reset(seed=0)
    observation, _, _, _, info = env.step("<answer>50</answer>")
    assert "action_truncated" not in info and "characters long" not in observation


def test_histories_keep_the_cut_action_only(tmp_path):
    path = tmp_path / "episodes.jsonl"
    env = EpisodeRecorder(ChatHistory(gym.make("tinker/Math-v0", render_mode="ansi")), path)
    env.reset(seed=0)
    messages, *_ = env.step("<answer>63</answer>" + "!" * MEGABYTE)
    assert [len(m["content"]) for m in messages if m["role"] == "assistant"] == [DEFAULT_MAX_ACTION_CHARS]
    recorded = json.loads(path.read_text())["turns"][0]["action"]
    assert len(recorded) == DEFAULT_MAX_ACTION_CHARS
    assert len(env.unwrapped.render()) < 2 * DEFAULT_MAX_ACTION_CHARS


def test_cap_helpers():
    assert cap_action("abc", None) == ("abc", "")
    assert cap_action("abcd", 2) == ("ab", "Your message was 4 characters long; only the first 2 were read.")
    assert action_as_read(MathEnv(max_action_chars=3), "abcdef") == "abc"
    assert action_as_read(MathEnv(max_action_chars=3), ["not", "text"]) == ["not", "text"]
