"""Tests for the rollout engine with scripted policies (no torch): batching, limits, groups, failures, games."""

from __future__ import annotations

import itertools
import re
import threading
import time
from typing import Any

import gymnasium as gym
import pytest

import gym_tinker
from gym_tinker.core import TextEnv
from gym_tinker.envs.tool_use import oracle
from gym_tinker.policy import Completion, SamplingParams
from gym_tinker.rollout import (
    flatten,
    rollout,
    rollout_games,
    rollout_groups,
    to_messages,
    to_records,
)
from gym_tinker.trajectory import load_jsonl, save_jsonl

gym.register_envs(gym_tinker)

# --- scripted policies ------------------------------------------------------------------------


class BinarySearch:
    """Plays GuessNumber by bisection from the conversation alone; records every batch it gets."""

    def __init__(self):
        self.batches: list[list[list[dict[str, Any]]]] = []

    def guess(self, conversation) -> int:
        low, high = 1, 100
        for message, reply in itertools.pairwise(conversation):
            if message["role"] != "assistant":
                continue
            guess = int(re.findall(r"\d+", message["content"])[-1])
            if "higher" in reply["content"].lower():
                low = guess + 1
            elif "lower" in reply["content"].lower():
                high = guess - 1
        return (low + high) // 2

    def __call__(self, conversations, *, tools=None, params=None):
        self.batches.append([list(c) for c in conversations])
        return [Completion(f"<answer>{self.guess(c)}</answer>") for c in conversations]


def constant(text: str):
    return lambda conversations: [text] * len(conversations)


def make_envs(env_id: str, n: int, **kwargs: Any) -> list[gym.Env]:
    return [gym.make(env_id, **kwargs) for _ in range(n)]


# --- the batched loop -------------------------------------------------------------------------


def test_guess_number_is_solved_with_one_batch_per_turn():
    policy = BinarySearch()
    result = rollout(make_envs("tinker/GuessNumber-v0", 4), policy, seeds=[0, 1, 2, 3])
    assert [t.seed for t in result] == [0, 1, 2, 3]
    assert all(t.stop_reason == "terminated" for t in result)
    assert all(t.total_reward > 0 and t.turns[-1].reward == t.total_reward for t in result)
    # One call per turn with every active conversation; finished episodes drop out.
    sizes = [len(batch) for batch in policy.batches]
    assert sizes[0] == 4
    assert sizes == sorted(sizes, reverse=True)
    assert len(policy.batches) == max(len(t) for t in result)
    assert sum(sizes) == sum(len(t) for t in result)
    assert result.stats.policy_calls == len(policy.batches)
    assert (result.stats.completed, result.stats.dropped, result.stats.retried) == (4, 0, 0)


def test_conversation_is_built_from_reset_info_and_observations():
    policy = BinarySearch()
    env = gym.make("tinker/GuessNumber-v0")
    _, info = env.reset(seed=5)
    result = rollout([env], policy, seeds=[5], max_turns=3)
    last = policy.batches[-1][0]
    assert last[0] == {"role": "system", "content": info["system_prompt"]}
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    trajectory = result[0]
    assert [turn.observation for turn in trajectory.turns] == [
        m["content"] for m in last if m["role"] == "user"
    ]
    assert [turn.action for turn in trajectory.turns][:2] == [
        m["content"] for m in last if m["role"] == "assistant"
    ]
    assert trajectory.metadata["task_id"] == info["task_id"]
    assert trajectory.metadata["system_prompt"] == info["system_prompt"]
    assert trajectory.env_id == "tinker/GuessNumber-v0"


def test_more_seeds_than_envs_reuses_slots_and_is_deterministic():
    seeds = [7, 3, 11, 3, 0]
    pooled = rollout(make_envs("tinker/GuessNumber-v0", 2), BinarySearch(), seeds=seeds)
    assert [t.seed for t in pooled] == seeds
    for trajectory in pooled:
        alone = rollout(make_envs("tinker/GuessNumber-v0", 1), BinarySearch(), seeds=[trajectory.seed])[0]
        assert alone.turns == trajectory.turns
    assert pooled[1].turns == pooled[3].turns  # same seed, same episode


def test_stop_reasons_terminated_and_truncated():
    math_result = rollout(make_envs("tinker/Math-v0", 2), constant("<answer>0</answer>"), seeds=[0, 1])
    assert [t.stop_reason for t in math_result] == ["terminated", "terminated"]
    turn_limit = rollout(
        make_envs("tinker/GuessNumber-v0", 2), constant("<answer>1</answer>"), seeds=[0, 1], max_turns=2
    )
    assert [(t.stop_reason, len(t)) for t in turn_limit] == [("truncated", 2), ("truncated", 2)]
    env_limit = rollout(
        make_envs("tinker/GuessNumber-v0", 1, max_episode_steps=3), constant("<answer>1</answer>"), seeds=[4]
    )
    assert (env_limit[0].stop_reason, len(env_limit[0])) == ("truncated", 3)


def test_token_budget_with_a_text_policy_that_reports_tokens():
    def counted(conversations, *, tools=None, params=None):
        # A chat endpoint reporting 10 tokens per answer, honouring max_tokens.
        n = min(10, params.max_tokens)
        return [Completion("<answer>1</answer>", token_ids=tuple(range(n))) for _ in conversations]

    result = rollout(make_envs("tinker/GuessNumber-v0", 1), counted, seeds=[3], token_budget=25)
    trajectory = result[0]
    assert trajectory.stop_reason == "token_budget"
    assert [len(t.completion_ids) for t in trajectory.turns] == [10, 10, 5]


def test_tool_observations_become_tool_messages_on_tool_use():
    envs = make_envs("tinker/ToolUse-v0", 3)
    seen: list[list[dict[str, Any]]] = []

    def tool_oracle(conversations, *, tools=None, params=None):
        seen.extend(conversations)
        assert tools is not None and all(
            t and {s["function"]["name"] for s in t} >= {"lookup", "calculator"} for t in tools
        )
        answers = []
        for conversation in conversations:
            env = next(e for e in envs if e.unwrapped.task.question in conversation[1]["content"])
            answers.append(oracle(env.unwrapped))
        return answers

    result = rollout(envs, tool_oracle, seeds=[0, 1, 2])
    assert all(t.stop_reason == "terminated" and t.total_reward == 1.0 for t in result)
    assert all(len(t) >= 2 for t in result)
    for trajectory in result:
        # The conversation the policy saw at this episode's second turn.
        question = trajectory.turns[0].observation
        conversation = next(c for c in seen if len(c) >= 4 and c[1]["content"] == question)
        assert conversation[2] == {"role": "assistant", "content": trajectory.turns[0].action}
        assert "<tool_call>" in trajectory.turns[0].action
        tool_messages = conversation[3:]
        results = trajectory.turns[0].info["tool_results"]
        assert [m["role"] for m in tool_messages] == ["tool"] * len(results)
        assert [m["content"] for m in tool_messages] == [r["content"] for r in results]
        assert all(m["content"] in trajectory.turns[1].observation for m in tool_messages)


@pytest.mark.parametrize(
    "make_vec_kwargs",
    [
        {"vectorization_mode": "sync"},
        {},
        {"workers": 2},
        {"autoreset_mode": "SameStep", "workers": 2},
        {"info_format": "list"},
        {"autoreset_mode": "SameStep", "info_format": "list"},
    ],
    ids=[
        "SyncVectorEnv",
        "TextVectorEnv",
        "ProcessTextVectorEnv",
        "ProcessTextVectorEnv-SameStep",
        "TextVectorEnv-list",
        "TextVectorEnv-SameStep-list",
    ],
)
def test_vector_env_matches_a_list_of_envs(make_vec_kwargs):
    seeds = [1, 2, 3, 4, 5]
    listed = rollout(make_envs("tinker/GuessNumber-v0", 3), BinarySearch(), seeds=seeds)
    vector = gym.make_vec("tinker/GuessNumber-v0", num_envs=3, **make_vec_kwargs)
    try:
        vectored = rollout(vector, BinarySearch(), seeds=seeds)
    finally:
        vector.close()
    assert vectored.stats.failures == []
    assert [t.turns for t in vectored] == [t.turns for t in listed]
    assert [t.metadata["task_id"] for t in vectored] == [t.metadata["task_id"] for t in listed]


@pytest.mark.parametrize("mode", ["SameStep", "Disabled"])
def test_vector_env_autoreset_modes(mode):
    from gymnasium.vector import AutoresetMode

    vector = gym.make_vec(
        "tinker/GuessNumber-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode(mode)},
    )
    try:
        result = rollout(vector, BinarySearch(), seeds=[1, 2, 3])
    finally:
        vector.close()
    expected = rollout(make_envs("tinker/GuessNumber-v0", 1), BinarySearch(), seeds=[1, 2, 3])
    assert result.stats.failures == []
    assert [t.turns for t in result] == [t.turns for t in expected]
    assert [t.metadata["final_observation"] for t in result] == [
        t.metadata["final_observation"] for t in expected
    ]


def test_async_vector_env():
    vector = gym.make_vec("tinker/GuessNumber-v0", num_envs=2, vectorization_mode="async")
    try:
        result = rollout(vector, BinarySearch(), seeds=[8, 9, 10])
    finally:
        vector.close()
    expected = rollout(make_envs("tinker/GuessNumber-v0", 1), BinarySearch(), seeds=[8, 9, 10])
    assert result.stats.failures == []
    assert [t.turns for t in result] == [t.turns for t in expected]


# --- GRPO groups ------------------------------------------------------------------------------


def test_groups_share_their_seed_and_task():
    first_prompts: list[str] = []

    def record(conversations):
        first_prompts.extend(c[1]["content"] for c in conversations if len(c) == 2)
        return ["<answer>0</answer>"] * len(conversations)

    groups = rollout_groups("tinker/Math-v0", record, seeds=[10, 11, 12], group_size=4)
    assert [len(g) for g in groups] == [4, 4, 4]
    for number, group in enumerate(groups):
        assert {t.seed for t in group} == {[10, 11, 12][number]}
        assert len({t.metadata["task_id"] for t in group}) == 1
        assert len({t.turns[0].observation for t in group}) == 1
        assert sorted(t.metadata["member"] for t in group) == [0, 1, 2, 3]
        assert {t.metadata["group"] for t in group} == {number}
    assert len({g[0].metadata["task_id"] for g in groups}) == 3  # different seeds, different tasks
    assert len(first_prompts) == 12


def test_groups_with_fewer_envs_than_rollouts():
    groups = rollout_groups("tinker/GuessNumber-v0", BinarySearch(), seeds=[1, 2], group_size=3, num_envs=2)
    assert [[t.turns for t in g] for g in groups] == [[g[0].turns] * 3 for g in groups]


# --- failures ---------------------------------------------------------------------------------


def test_a_failing_policy_call_restarts_its_episodes_from_their_seeds():
    inner = BinarySearch()
    calls = {"n": 0}

    def flaky(conversations, *, tools=None, params=None):
        calls["n"] += 1
        if calls["n"] == 2:
            raise ConnectionError("server went away")
        return inner(conversations)

    result = rollout(make_envs("tinker/GuessNumber-v0", 3), flaky, seeds=[0, 1, 2], retries=1)
    assert result.stats.retried == 3 and result.stats.dropped == 0
    assert all("ConnectionError: server went away" in line for line in result.stats.failures)
    clean = rollout(make_envs("tinker/GuessNumber-v0", 3), BinarySearch(), seeds=[0, 1, 2])
    assert [t.turns for t in result] == [t.turns for t in clean]
    assert [t.metadata["attempt"] for t in result] == [1, 1, 1]


def test_a_persistently_failing_episode_is_dropped_and_counted():
    def poisoned(conversations, *, tools=None, params=None):
        out = []
        for conversation in conversations:
            bad = "between 1 and 100" in conversation[1]["content"] and len(conversation) >= 4
            out.append(
                Completion("", finish_reason="error", metadata={"error": "boom"}) if bad else Completion("1")
            )
        return out

    result = rollout(
        [gym.make("tinker/GuessNumber-v0"), gym.make("tinker/Math-v0")],
        poisoned,
        seeds=[0, 1, 2, 3],
        retries=2,
    )
    # Every GuessNumber-style episode fails at its second turn; the Math ones finish.
    assert result.stats.dropped + result.stats.completed == 4
    assert result.stats.dropped >= 1
    assert result.stats.retried == 2 * result.stats.dropped
    assert len(result) == result.stats.completed
    assert all("boom" in line for line in result.stats.failures)
    metrics = result.stats.metrics()
    assert metrics["rollout/dropped"] == result.stats.dropped


class ExplodingEnv(TextEnv):
    """Raises on its second step for odd seeds; the others finish at turn 2."""

    default_max_turns = 5

    def _reset(self, options):
        self.odd = self._seed % 2 == 1
        return "Say anything.", {"system_prompt": "Test env."}

    def reset(self, *, seed=None, options=None):
        self._seed = seed
        return super().reset(seed=seed, options=options)

    def _step(self, action):
        if self.turn == 2:
            if self.odd:
                raise RuntimeError("env crashed")
            return "Done.", 1.0, True, False, {}
        return "Again.", 0.0, False, False, {}


def test_env_step_failures_are_retried_then_dropped_and_kept_on_request():
    result = rollout([ExplodingEnv(), ExplodingEnv()], constant("ok"), seeds=[0, 1, 2, 3], retries=1)
    assert [t.seed for t in result] == [0, 2]
    assert (result.stats.dropped, result.stats.retried) == (2, 2)
    assert sum("env crashed" in line for line in result.stats.failures) == 4
    kept = rollout([ExplodingEnv()], constant("ok"), seeds=[1], retries=0, keep_failed=True)
    assert kept[0].stop_reason == "error" and "env crashed" in kept[0].metadata["error"]


def test_a_hanging_policy_call_times_out_instead_of_hanging():
    release = threading.Event()
    calls = {"n": 0}

    def sometimes_hangs(conversations):
        calls["n"] += 1
        if calls["n"] == 1:
            release.wait(5)
        return ["<answer>0</answer>"] * len(conversations)

    began = time.perf_counter()
    result = rollout(make_envs("tinker/Math-v0", 2), sometimes_hangs, seeds=[0, 1], timeout=0.3)
    release.set()
    assert time.perf_counter() - began < 3
    assert result.stats.retried == 2 and len(result) == 2
    assert "did not return within 0.3 s" in result.stats.failures[0]


def test_a_policy_returning_the_wrong_number_of_completions_fails_the_batch():
    result = rollout(make_envs("tinker/Math-v0", 2), lambda convs: ["1"], seeds=[0, 1], retries=0)
    assert result.stats.dropped == 2 and not list(result)
    assert "returned 1 completion(s) for a batch of 2" in result.stats.failures[0]


# --- multi-agent ------------------------------------------------------------------------------


def test_tictactoe_with_two_scripted_policies():
    from multiagent import tictactoe_v0
    from multiagent.tictactoe.bots import MinimaxBot, read_board

    calls: dict[str, list[int]] = {"minimax": [], "first": []}
    bot = MinimaxBot(seed=0)

    def minimax(conversations):
        calls["minimax"].append(len(conversations))
        answers = []
        for conversation in conversations:
            answers.append(bot(conversation[-1]["content"], {"legal_moves": [1]}))
        return answers

    def first_free(conversations):
        calls["first"].append(len(conversations))
        return [str(read_board(c[-1]["content"])[0].index(".") + 1) for c in conversations]

    result = rollout_games(tictactoe_v0, {"player_0": minimax, "player_1": first_free}, seeds=[0, 1, 2])
    assert len(result) == 6 and result.stats.dropped == 0
    by_game: dict[int, dict[str, Any]] = {}
    for trajectory in result:
        by_game.setdefault(trajectory.metadata["episode"], {})[trajectory.agent] = trajectory
    for seats in by_game.values():
        x, o = seats["player_0"], seats["player_1"]
        assert x.total_reward == 1.0 and o.total_reward == -1.0  # minimax beats first-free
        assert x.stop_reason == o.stop_reason == "terminated"
        assert "wins" in x.metadata["result"]
        assert len(x) == len(o) + 1
        assert all(turn.info.get("legal_moves") for turn in x.turns)  # the info at each decision
    # Both policies were called once per round with all three games.
    assert calls["minimax"][0] == 3 and calls["first"][0] == 3


def test_shared_policy_self_play_and_turn_limit():
    from multiagent import tictactoe_v0

    seen_roles = []

    def lowest_legal(conversations):
        seen_roles.append([m["role"] for m in conversations[0]])
        return [re.findall(r"Legal moves: ([0-9])", c[-1]["content"])[0] for c in conversations]

    result = rollout_games(tictactoe_v0, lowest_legal, seeds=[0, 1], max_turns=2)
    assert {t.agent for t in result} == {"player_0", "player_1"}
    assert all(t.stop_reason == "truncated" and len(t) == 2 for t in result)
    assert ["user", "assistant", "user"] in seen_roles  # each seat sees its own dialogue


# --- export -----------------------------------------------------------------------------------


def test_jsonl_round_trip_and_records(tmp_path):
    result = rollout(make_envs("tinker/ToolUse-v0", 1), constant("<answer>3</answer>"), seeds=[0])
    path = tmp_path / "t.jsonl"
    assert save_jsonl(path, result) == 1
    assert load_jsonl(path) == list(result)
    messages = to_messages(result[0])
    assert messages[0]["role"] == "system" and messages[-1] == {
        "role": "assistant",
        "content": "<answer>3</answer>",
    }
    row = to_records(result)[0]
    assert row["completion_ids"] is None and row["num_turns"] == 1
    with pytest.raises(ValueError, match="text-only"):
        flatten(result[0])


def test_to_dataset(tmp_path):
    pytest.importorskip("datasets")
    from gym_tinker.rollout import to_dataset

    result = rollout(make_envs("tinker/GuessNumber-v0", 2), BinarySearch(), seeds=[0, 1])
    dataset = to_dataset(result)
    assert len(dataset) == 2
    assert dataset[0]["messages"][1]["content"] == result[0].turns[0].observation
    assert dataset["total_reward"] == [t.total_reward for t in result]


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"seeds": "abc"}, TypeError, "sequence of ints"),
        ({"seeds": [1, -2]}, ValueError, "seed to be an int >= 0"),
        ({"seeds": [1], "max_turns": 0}, ValueError, "max_turns"),
        ({"seeds": [1], "token_budget": 1.5}, ValueError, "token_budget"),
        ({"seeds": [1], "retries": -1}, ValueError, "retries"),
        ({"seeds": [1], "timeout": 0}, ValueError, "timeout"),
        ({"seeds": [1], "token_exact": True}, ValueError, "TokenSampler"),
    ],
)
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        rollout(make_envs("tinker/Math-v0", 1), constant("1"), **kwargs)


def test_bad_envs_and_policies():
    with pytest.raises(TypeError, match="Gymnasium env"):
        rollout("tinker/Math-v0", constant("1"), seeds=[0])
    with pytest.raises(TypeError, match="Expected a policy"):
        rollout(make_envs("tinker/Math-v0", 1), "not a policy", seeds=[0])
    with pytest.raises(ValueError, match="group_size"):
        rollout_groups("tinker/Math-v0", constant("1"), seeds=[0], group_size=0)
    with pytest.raises(ValueError, match="at least one env"):
        rollout([], constant("1"), seeds=[0])


def test_sampling_seed_varies_per_call_but_is_reproducible():
    seeds_seen: list[int | None] = []

    def record(conversations, *, tools=None, params=None):
        seeds_seen.append(params.seed)
        return ["<answer>50</answer>"] * len(conversations)

    rollout(
        make_envs("tinker/GuessNumber-v0", 1), record, seeds=[0], max_turns=3, params=SamplingParams(seed=7)
    )
    first = list(seeds_seen)
    seeds_seen.clear()
    rollout(
        make_envs("tinker/GuessNumber-v0", 1), record, seeds=[0], max_turns=3, params=SamplingParams(seed=7)
    )
    assert first == seeds_seen and len(set(first)) == 3
