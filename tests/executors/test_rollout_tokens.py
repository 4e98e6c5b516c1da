"""Token-exact rollouts with the tiny random model and the HF sampler: the ids trained on are the ids sampled."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import gym_tinker  # noqa: E402
from executors.models.tiny import tiny_random_model  # noqa: E402
from executors.sampling.hf import HFSampler  # noqa: E402
from gym_tinker.envs.tool_use import oracle  # noqa: E402
from gym_tinker.policy import Completion, SamplingParams  # noqa: E402
from gym_tinker.rollout import flatten, rollout, rollout_games, rollout_groups, to_dataset, to_trl_batch  # noqa: E402
from gym_tinker.trajectory import load_jsonl, save_jsonl  # noqa: E402

torch.set_num_threads(1)
gym.register_envs(gym_tinker)


class Recording:
    """Delegates to a real token sampler and keeps every prompt it was given and what came back."""

    def __init__(self, sampler: Any):
        self.sampler = sampler
        self.renderer = sampler.renderer
        self.calls: list[tuple[list[list[int]], list[Completion]]] = []

    def generate(self, prompt_ids, params, *, adapter=None):
        completions = self.sampler.generate(prompt_ids, params, adapter=adapter)
        self.calls.append(([list(p) for p in prompt_ids], completions))
        return completions


@pytest.fixture(scope="module")
def model_and_tokenizer():
    return tiny_random_model(seed=0)


@pytest.fixture
def sampler(model_and_tokenizer):
    return Recording(HFSampler(model_and_tokenizer))


def test_multi_turn_rollout_is_token_exact(sampler):
    envs = [gym.make("tinker/GuessNumber-v0") for _ in range(3)]
    params = SamplingParams(max_tokens=6, seed=0)
    result = rollout(envs, sampler, seeds=[0, 1, 2], max_turns=3, params=params)
    assert len(result) == 3 and all(len(t) == 3 for t in result)
    renderer = sampler.renderer
    # All three episodes run in lockstep: turn t of episode i is row i of the t-th sampler call.
    assert [len(prompts) for prompts, _ in sampler.calls] == [3, 3, 3]  # one batch per turn
    for row, trajectory in enumerate(result):
        _, info = gym.make("tinker/GuessNumber-v0").reset(seed=trajectory.seed)
        first = [
            {"role": "system", "content": info["system_prompt"]},
            {"role": "user", "content": trajectory.turns[0].observation},
        ]
        assert list(trajectory.turns[0].prompt_ids) == renderer.render(first)
        flat = flatten(trajectory)  # every turn's prompt is the previous prompt plus the previous turn's ids
        assert list(flat.input_ids) == list(trajectory.turns[-1].prompt_ids) + list(
            trajectory.turns[-1].completion_ids
        )
        for number, turn in enumerate(trajectory.turns):
            prompts, completions = sampler.calls[number]
            assert tuple(prompts[row]) == turn.prompt_ids  # the sampler saw exactly this prompt
            completion = completions[row]
            n = len(completion.token_ids)
            assert turn.completion_ids[:n] == completion.token_ids
            assert turn.env_mask == (1,) * n + (0,) * (len(turn.completion_ids) - n)
            assert turn.completion_logprobs[:n] == completion.logprobs
            assert set(turn.completion_logprobs[n:]) <= {0.0}
            assert turn.action == completion.text
            env_text = renderer.decode(turn.completion_ids[n:])
            if number + 1 < len(trajectory.turns):
                # The env's tokens decode to its message, rendered as the template's user turn.
                assert trajectory.turns[number + 1].observation in env_text
                assert env_text.endswith(
                    "<|im_start|>user\n"
                    + trajectory.turns[number + 1].observation
                    + "<|im_end|>\n<|im_start|>assistant\n"
                )
            else:
                assert env_text == ""  # nothing is appended after the last decision


def test_sampled_logprobs_match_a_forward_pass_over_the_flat_sequence(sampler, model_and_tokenizer):
    model, _ = model_and_tokenizer
    result = rollout(
        [gym.make("tinker/GuessNumber-v0")],
        sampler,
        seeds=[4],
        max_turns=3,
        params=SamplingParams(max_tokens=5, seed=1),
    )
    flat = flatten(result[0])
    ids = torch.tensor([flat.input_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0].float(), dim=-1)
    start = len(flat.prompt_ids)
    for offset, (token, mask, sampled_logprob) in enumerate(
        zip(flat.completion_ids, flat.env_mask, flat.logprobs, strict=True)
    ):
        if mask:
            recomputed = logprobs[start + offset - 1, token].item()
            assert recomputed == pytest.approx(sampled_logprob, abs=1e-4)


def test_tool_use_env_tokens_are_tool_messages(model_and_tokenizer):
    tokenizer = model_and_tokenizer[1]
    hf = HFSampler(model_and_tokenizer)
    envs = [gym.make("tinker/ToolUse-v0") for _ in range(2)]

    class OracleTokens:
        """A token sampler whose answers are the ToolUse oracle's, tokenized by the real tokenizer."""

        renderer = hf.renderer

        def generate(self, prompt_ids, params, *, adapter=None):
            out = []
            for prompt in prompt_ids:
                text = hf.renderer.decode(prompt)
                env = next(e for e in envs if e.unwrapped.task.question in text)
                answer = oracle(env.unwrapped)
                ids = (*tokenizer.encode(answer), tokenizer.eos_token_id)
                out.append(
                    Completion(answer, token_ids=ids, logprobs=(-1.0,) * len(ids), prompt_ids=tuple(prompt))
                )
            return out

    result = rollout(envs, OracleTokens(), seeds=[0, 1])
    assert all(t.stop_reason == "terminated" and t.total_reward == 1.0 for t in result)
    for trajectory in result:
        flatten(trajectory)
        first = trajectory.turns[0]
        n = sum(first.env_mask)
        env_text = hf.renderer.decode(first.completion_ids[n:])
        # The sampled EOS is kept; the template's newline closes the turn, then the tool results follow.
        assert first.completion_ids[n - 1] == tokenizer.eos_token_id
        assert env_text.startswith("\n<|im_start|>tool\n<tool_response>\n")
        for tool_result in first.info["tool_results"]:
            assert tool_result["content"] in env_text
        assert env_text.endswith("<|im_start|>assistant\n")
        assert '"name": "lookup"' in hf.renderer.decode(first.prompt_ids)  # tools in the system turn


def test_token_budget_bounds_the_whole_sequence(sampler):
    result = rollout(
        [gym.make("tinker/GuessNumber-v0") for _ in range(2)],
        sampler,
        seeds=[0, 1],
        token_budget=260,
        params=SamplingParams(max_tokens=16, seed=0),
    )
    for trajectory in result:
        assert trajectory.stop_reason == "token_budget"
        assert len(flatten(trajectory).input_ids) <= 260


def test_token_trajectories_round_trip_and_make_a_dataset(sampler, tmp_path):
    result = rollout(
        [gym.make("tinker/GuessNumber-v0")],
        sampler,
        seeds=[3],
        max_turns=2,
        params=SamplingParams(max_tokens=4, seed=0),
    )
    path = tmp_path / "tokens.jsonl"
    save_jsonl(path, result)
    loaded = load_jsonl(path)
    assert loaded == list(result)
    assert flatten(loaded[0]) == flatten(result[0])
    pytest.importorskip("datasets")
    row = to_dataset(result)[0]
    assert row["prompt_ids"] == list(flatten(result[0]).prompt_ids)
    assert len(row["completion_ids"]) == len(row["env_mask"]) == len(row["logprobs"])


def test_game_seats_are_token_exact(sampler):
    import re

    from multiagent import tictactoe_v0

    def lowest_legal(conversations):
        return [re.findall(r"Legal moves: ([0-9])", c[-1]["content"])[0] for c in conversations]

    result = rollout_games(
        tictactoe_v0,
        {"player_0": lowest_legal, "player_1": sampler},
        seeds=[0, 1],
        params=SamplingParams(max_tokens=3, seed=0),
        game_kwargs={"max_retries": 2},
    )
    seats = {(t.metadata["episode"], t.agent): t for t in result}
    assert set(seats) == {(0, "player_0"), (0, "player_1"), (1, "player_0"), (1, "player_1")}
    for (_, agent), trajectory in seats.items():
        if agent == "player_0":
            assert not trajectory.metadata["token_exact"] and trajectory.turns[0].completion_ids is None
            continue
        # The random model's answers are rejected: several decisions, chained token-exactly.
        assert trajectory.metadata["token_exact"] and len(trajectory) >= 2
        flatten(trajectory)
        for turn, following in zip(trajectory.turns, trajectory.turns[1:], strict=False):
            n = sum(turn.env_mask)
            assert following.observation in sampler.renderer.decode(turn.completion_ids[n:])
        assert trajectory.total_reward == -1.0  # forfeit


def test_grpo_groups_share_the_prompt_and_feed_trl(sampler):
    groups = rollout_groups(
        "tinker/Math-v0", sampler, seeds=[0, 1], group_size=3, params=SamplingParams(max_tokens=8, seed=0)
    )
    assert [len(g) for g in groups] == [3, 3]
    assert [len(prompts) for prompts, _ in sampler.calls] == [6]  # all six rollouts in one batch
    for group in groups:
        batch = to_trl_batch(group)
        assert len({tuple(p) for p in batch["prompt_ids"]}) == 1  # the same task, token for token
        assert len({tuple(c) for c in batch["completion_ids"]}) > 1  # members sample differently
        assert all(set(mask) == {1} for mask in batch["env_mask"])  # single-turn: no env tokens
        assert batch["rewards"] == [t.total_reward for t in group]
    assert groups[0][0].turns[0].prompt_ids != groups[1][0].turns[0].prompt_ids
