"""SFT through TRL's SFTTrainer: loss masks, the mask reaching TRL's loss, learning, reproducibility, resume, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from executors.chat import HFChatRenderer  # noqa: E402
from executors.context import JobContext, deliver_signal  # noqa: E402
from executors.errors import JobPreempted  # noqa: E402
from executors.models.tiny import tiny_random_model  # noqa: E402
from executors.sampling import HFSampler  # noqa: E402
from executors.spec import JobSpec  # noqa: E402
from executors.training.common import load_policy, seed_everything  # noqa: E402
from executors.training.config import SFTParams  # noqa: E402
from executors.training.sft import (  # noqa: E402
    MASK_COLUMN,
    SFTDataError,
    build_sft_trainer,
    keep_trajectories,
    load_sft_rows,
    messages_to_sft_dataset,
    sft_body,
    tokenize_conversation,
    trajectories_to_sft_dataset,
)
from gym_tinker.core import StepResult, TextEnv  # noqa: E402
from gym_tinker.policy import SamplingParams  # noqa: E402
from gym_tinker.rollout import rollout  # noqa: E402
from gym_tinker.trajectory import Trajectory, Turn, save_jsonl  # noqa: E402
from tests.executors.training.toy_env import ENV_ID as TOY_ENV  # noqa: E402

TWO_TURN_ENV = "tinker-test/SFTTwoTurn-v0"


class TwoTurnEnv(TextEnv):
    """Two turns with env feedback in between; success (``info["correct"]``) on even seeds only."""

    default_max_turns = 2

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        self.even = int(self.np_random.integers(2)) == 0
        return "Say something.", {"system_prompt": "Be brief."}

    def _step(self, action: str) -> StepResult:
        if self.turn == 1:
            return "Now once more.", 0.0, False, False, {}
        return "Thanks.", float(self.even), True, False, {"correct": self.even}


if TWO_TURN_ENV not in gym.registry:
    gym.register(TWO_TURN_ENV, entry_point=TwoTurnEnv)

CHAT = [
    {"role": "system", "content": "You add numbers."},
    {"role": "user", "content": "What is 2 + 2?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "2+2"}}}
        ],
    },
    {"role": "tool", "content": "4", "name": "calculator"},
    {"role": "assistant", "content": "The answer is <answer>4</answer>."},
    {"role": "user", "content": "Thanks."},
]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "calculator", "description": "Evaluate.", "parameters": {"type": "object"}},
    }
]
MEMORISE = [
    {"messages": [{"role": "user", "content": f"Word {i}?"}, {"role": "assistant", "content": word}]}
    for i, word in enumerate(["apple", "river", "stone", "cloud"])
]


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def _params(**overrides: Any) -> SFTParams:
    base: dict[str, Any] = dict(
        steps=4, batch_size=2, learning_rate=1e-2, checkpoint_every=2, report_to="none", eval_episodes=0
    )
    return SFTParams(**{**base, **overrides})


def _policy(adapter: Any = None) -> Any:
    seed_everything(0)
    spec = JobSpec(kind="sft", model="tiny-random", adapter=adapter or {"r": 4, "dropout": 0.0})
    return load_policy(spec, _params())


def _trainable(model: Any) -> dict[str, Any]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def _all_params(model: Any) -> dict[str, Any]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


# --- masks ---------------------------------------------------------------------------------------


def test_chat_mask_covers_exactly_the_assistant_turns_and_their_end_of_turn_token() -> None:
    _, tokenizer = tiny_random_model(seed=0)
    renderer = HFChatRenderer(tokenizer)
    ids, mask = tokenize_conversation(renderer, CHAT, tools=TOOLS)
    assert len(ids) == len(mask)
    # The ids render the conversation up to the last assistant turn, template text unchanged.
    assert renderer.decode(ids) == renderer.render_text(CHAT[:5], tools=TOOLS, add_generation_prompt=False)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    # Trained spans: each assistant turn's content and its <|im_end|>; nothing else.
    spans, current = [], []
    for token, bit in zip(ids, mask, strict=True):
        if bit:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    assert current == []  # the text after the last trained token (a newline) is not trained
    assert len(spans) == 2
    assert all(span[-1] == im_end for span in spans)
    assert renderer.decode(spans[0]).startswith("<tool_call>")
    assert renderer.decode(spans[1]) == "The answer is <answer>4</answer>.<|im_end|>"
    untrained = renderer.decode([t for t, bit in zip(ids, mask, strict=True) if not bit])
    for text in (
        "You add numbers.",
        "What is 2 + 2?",
        "<tool_response>",
        "<|im_start|>assistant\n",
        "calculator",
    ):
        assert text in untrained
    assert "The answer is" not in untrained


def test_chat_dataset_truncates_and_trains_all_tokens_when_asked() -> None:
    _, tokenizer = tiny_random_model(seed=0)
    rows = [{"messages": CHAT, "tools": json.dumps(TOOLS)}]  # tools as JSON text, as to_records writes them
    full = messages_to_sft_dataset(rows, tokenizer, max_length=None)
    cut = messages_to_sft_dataset(rows, tokenizer, max_length=len(full[0]["input_ids"]) - 3)
    assert cut[0]["input_ids"] == full[0]["input_ids"][:-3]
    everything = messages_to_sft_dataset(rows, tokenizer, max_length=None, assistant_only_loss=False)
    assert set(everything[0][MASK_COLUMN]) == {1}
    assert 0 < sum(full[0][MASK_COLUMN]) < len(full[0][MASK_COLUMN])


def test_trajectory_mask_is_zero_on_prompt_and_env_tokens_and_one_on_sampled_tokens() -> None:
    model, tokenizer = tiny_random_model(seed=0)
    result = rollout(
        [gym.make(TWO_TURN_ENV)],
        HFSampler((model, tokenizer)),
        seeds=[0],
        params=SamplingParams(max_tokens=6, temperature=1.0, seed=0),
    )
    [trajectory] = list(result)
    assert len(trajectory.turns) == 2
    dataset = trajectories_to_sft_dataset([trajectory], keep="all")
    ids, mask = dataset[0]["input_ids"], dataset[0][MASK_COLUMN]
    first, second = trajectory.turns
    assert ids == list(second.prompt_ids) + list(second.completion_ids)
    # Prompt tokens: 0. Then each turn's sampled tokens 1 and its env tokens (feedback) 0.
    assert mask[: len(first.prompt_ids)] == [0] * len(first.prompt_ids)
    sampled = [t for t, bit in zip(ids, mask, strict=True) if bit]
    env_bits = [
        t for turn in trajectory.turns for t, b in zip(turn.completion_ids, turn.env_mask, strict=True) if b
    ]
    assert sampled == env_bits
    untrained = tokenizer.decode([t for t, bit in zip(ids, mask, strict=True) if not bit])
    assert "Say something." in untrained and "Now once more." in untrained and "Be brief." in untrained
    assert 0 in mask[len(first.prompt_ids) :]  # env feedback inside the completion is masked


def test_keep_filter_keeps_successful_episodes_only() -> None:
    def episode(reward: float, correct: bool | None = None, seed: int = 0) -> Trajectory:
        info = {} if correct is None else {"correct": correct}
        turn = Turn("q", "a", reward, info, prompt_ids=(1, 5), completion_ids=(7 + seed, 2), env_mask=(1, 1))
        return Trajectory((turn,), "demo", seed=seed)

    batch = [
        episode(1.0, seed=0),
        episode(0.0, seed=1),
        episode(0.5, correct=False, seed=2),
        episode(0.2, seed=3),
    ]
    assert [t.seed for t in keep_trajectories(batch)] == [0, 3]
    assert [t.seed for t in keep_trajectories(batch, min_reward=0.5)] == [0]
    assert [t.seed for t in keep_trajectories(batch, keep="all")] == [0, 1, 2, 3]
    dataset = trajectories_to_sft_dataset(batch)
    assert [row[2] for row in dataset["input_ids"]] == [7, 10]


def test_text_only_trajectories_render_with_a_tokenizer() -> None:
    _, tokenizer = tiny_random_model(seed=0)
    trajectory = Trajectory((Turn("2+2?", "4", 1.0),), "demo", metadata={"system_prompt": "Add."})
    with pytest.raises(SFTDataError, match="no token ids"):
        trajectories_to_sft_dataset([trajectory])
    dataset = trajectories_to_sft_dataset([trajectory], tokenizer=tokenizer)
    trained = [t for t, bit in zip(dataset[0]["input_ids"], dataset[0][MASK_COLUMN], strict=True) if bit]
    assert tokenizer.decode(trained) == "4<|im_end|>"


# --- TRL uses our mask ---------------------------------------------------------------------------


def test_trl_loss_is_the_masked_cross_entropy_of_our_mask(tmp_path: Path) -> None:
    policy = _policy("full")
    dataset = messages_to_sft_dataset([{"messages": CHAT, "tools": TOOLS}, *MEMORISE], policy.tokenizer, 256)
    trainer = build_sft_trainer(policy.model, policy.tokenizer, dataset, _params(), output_dir=tmp_path)
    # TRL folded the mask into labels and dropped it; the ids are ours, not re-tokenized.
    assert trainer.train_dataset.column_names == ["input_ids", "labels"]
    for ours, theirs in zip(dataset, trainer.train_dataset, strict=True):
        assert theirs["input_ids"] == ours["input_ids"]
        expected = [t if bit else -100 for t, bit in zip(ours["input_ids"], ours[MASK_COLUMN], strict=True)]
        assert theirs["labels"] == expected
    batch = next(iter(trainer.get_train_dataloader()))
    model = trainer.model
    model.train()
    loss = trainer.compute_loss(model, dict(batch))
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    # Our own masked cross-entropy: next-token targets where our mask is 1 (padding has label -100).
    targets = batch["labels"][:, 1:]
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    keep = targets != -100
    picked = logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    hand = -(picked * keep).sum() / keep.sum()
    assert keep.sum() < (batch["attention_mask"][:, 1:] == 1).sum()  # some real tokens are masked out
    torch.testing.assert_close(loss.detach(), hand, rtol=1e-4, atol=1e-5)


def test_masked_tokens_get_no_gradient(tmp_path: Path) -> None:
    """Changing a token the mask excludes as a *target* (the last, untrained newline) leaves the gradient unchanged."""
    policy = _policy("full")
    rows = [{"messages": CHAT[:5]}]
    dataset = messages_to_sft_dataset(rows, policy.tokenizer, 256)
    trainer = build_sft_trainer(policy.model, policy.tokenizer, dataset, _params(), output_dir=tmp_path)
    batch = next(iter(trainer.get_train_dataloader()))
    assert batch["labels"][0, -1] == -100  # the newline after the last <|im_end|>

    def grads(inputs: dict[str, Any]) -> list[Any]:
        trainer.model.zero_grad()
        trainer.compute_loss(trainer.model, dict(inputs)).backward()
        return [p.grad.clone() for p in trainer.model.parameters() if p.grad is not None]

    before = grads(batch)
    changed = {k: v.clone() for k, v in batch.items()}
    # The masked last token is only ever a target; attention is causal, so it is no one's input.
    changed["input_ids"][0, -1] = 77
    after = grads(changed)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))


# --- training ------------------------------------------------------------------------------------


def test_loss_decreases_on_a_memorisation_set_and_full_parameters_change(tmp_path: Path) -> None:
    policy = _policy("full")
    dataset = messages_to_sft_dataset(MEMORISE, policy.tokenizer, 64)
    before = _all_params(policy.model)
    params = _params(steps=20, batch_size=4, checkpoint_every=100)
    trainer = build_sft_trainer(policy.model, policy.tokenizer, dataset, params, output_dir=tmp_path)
    trainer.train()
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    assert len(losses) == 20
    assert sum(losses[-3:]) / 3 < 0.5 * sum(losses[:3]) / 3
    after = _all_params(policy.model)
    assert all(not torch.equal(before[name], after[name]) for name in before)


def test_lora_trains_the_adapter_and_leaves_base_weights_unchanged(tmp_path: Path) -> None:
    policy = _policy()
    dataset = messages_to_sft_dataset(MEMORISE, policy.tokenizer, 64)
    before = _all_params(policy.model)
    trainer = build_sft_trainer(
        policy.model, policy.tokenizer, dataset, _params(steps=3), output_dir=tmp_path
    )
    trainer.train()
    after = _all_params(policy.model)
    lora = [name for name in before if "lora_" in name]
    base = [name for name in before if "lora_" not in name]
    assert lora and base
    assert all(torch.equal(before[name], after[name]) for name in base)
    assert any(not torch.equal(before[name], after[name]) for name in lora if "lora_B" in name)


def test_same_seed_same_parameters(tmp_path: Path) -> None:
    results = []
    for run in range(2):
        policy = _policy()
        dataset = messages_to_sft_dataset(MEMORISE, policy.tokenizer, 64)
        trainer = build_sft_trainer(
            policy.model, policy.tokenizer, dataset, _params(steps=3), output_dir=tmp_path / str(run)
        )
        trainer.train()
        results.append(_trainable(policy.model))
    assert results[0].keys() == results[1].keys()
    assert all(torch.equal(results[0][name], results[1][name]) for name in results[0])


def test_gradient_checkpointing_trains_the_same_parameters(tmp_path: Path) -> None:
    """Recomputing activations in the backward pass changes memory, not the result."""
    results = []
    for checkpointing in (False, True):
        policy = _policy()
        dataset = messages_to_sft_dataset(MEMORISE, policy.tokenizer, 64)
        params = _params(steps=2, gradient_checkpointing=checkpointing)
        trainer = build_sft_trainer(
            policy.model, policy.tokenizer, dataset, params, output_dir=tmp_path / str(checkpointing)
        )
        trainer.train()
        assert policy.model.is_activation_checkpointing is checkpointing
        results.append(_trainable(policy.model))
    assert all(torch.allclose(results[0][name], results[1][name], atol=1e-6) for name in results[0])


def test_resume_from_a_trainer_checkpoint_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    """4 steps straight vs 2 steps, then a fresh trainer resuming from ``checkpoint-2`` (LoRA dropout 0)."""
    from transformers import TrainerCallback

    class StopAfter(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if state.global_step == 2:
                control.should_training_stop = True
            return control

    params = _params(steps=4, checkpoint_every=2)
    policy = _policy()
    dataset = messages_to_sft_dataset(MEMORISE, policy.tokenizer, 64)
    build_sft_trainer(
        policy.model, policy.tokenizer, dataset, params, output_dir=tmp_path / "straight"
    ).train()
    straight = _trainable(policy.model)

    policy = _policy()
    folder = tmp_path / "interrupted"
    first = build_sft_trainer(
        policy.model, policy.tokenizer, dataset, params, output_dir=folder, callbacks=[StopAfter()]
    )
    first.train()
    assert first.state.global_step == 2 and (folder / "checkpoint-2").is_dir()
    policy = _policy()  # a fresh process: new model, new trainer
    second = build_sft_trainer(policy.model, policy.tokenizer, dataset, params, output_dir=folder)
    second.train(resume_from_checkpoint=str(folder / "checkpoint-2"))
    assert second.state.global_step == 4
    resumed = _trainable(policy.model)
    assert all(torch.equal(straight[name], resumed[name]) for name in straight)


# --- the job body --------------------------------------------------------------------------------


def _write_chats(path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in MEMORISE))
    return path


def _sft_spec(tmp_path: Path, **fields: Any) -> JobSpec:
    params = {"steps": 4, "batch_size": 2, "learning_rate": 1e-2, "checkpoint_every": 2, "report_to": "none"}
    params.update(fields.pop("params", {}))
    return JobSpec(
        kind="sft",
        model="tiny-random",
        adapter={"r": 4, "dropout": 0.0},
        params=params,
        output_dir=str(tmp_path / "run"),
        **fields,
    )


def test_sft_body_trains_on_a_jsonl_dataset_and_resumes_after_a_preempt(tmp_path: Path) -> None:
    data = _write_chats(tmp_path / "chats.jsonl")
    straight = sft_body(
        JobContext(_sft_spec(tmp_path / "a", dataset=str(data)), 1, 1, tmp_path / "a" / "ckpt")
    )
    assert straight["steps"] == 4 and straight["examples"] == 4
    assert Path(straight["saved"]["adapter"], "adapter_config.json").exists()
    metrics = [
        json.loads(line) for line in (tmp_path / "a" / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [row["step"] for row in metrics if "loss" in row] == [1, 2, 3, 4]

    class PreemptedAfterStep2(JobContext):
        """The scheduler's preempt arrives while step 2 is being reported (mid-run, off the save_steps grid)."""

        def report(self, step: int | None = None, **metrics: float) -> None:
            super().report(step, **metrics)
            if step == 2:
                deliver_signal(self.key, "preempt")

    spec = _sft_spec(tmp_path / "b", dataset=str(data))
    ckpt = tmp_path / "b" / "ckpt"
    with pytest.raises(JobPreempted):
        sft_body(PreemptedAfterStep2(spec, 2, 1, ckpt, key="test-sft-preempt-attempt-1"))
    assert (ckpt / "trainer" / "checkpoint-3").is_dir()  # saved at the step boundary after the signal
    second = JobContext(spec, 2, 2, ckpt, key="test-sft-preempt-attempt-2")
    resumed = sft_body(second)
    assert resumed["steps"] == 4
    assert any("resuming from" in e.get("message", "") for e in second.events)
    metrics = [
        json.loads(line) for line in (tmp_path / "b" / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [row["step"] for row in metrics if "loss" in row] == [1, 2, 3, 4]  # one run, no repeated steps
    from safetensors.torch import load_file

    a = load_file(Path(straight["saved"]["adapter"], "adapter_model.safetensors"))
    b = load_file(Path(resumed["saved"]["adapter"], "adapter_model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_sft_body_on_rollouts_keeps_successful_episodes(tmp_path: Path) -> None:
    spec = _sft_spec(
        tmp_path,
        env=TOY_ENV,
        params={
            "source": "rollouts",
            "rollout_episodes": 8,
            "eval_batch_size": 4,
            "max_tokens": 8,
            "steps": 2,
            "eval_episodes": 2,
            "eval_every": 0,
        },
    )
    ctx = JobContext(spec, 3, 1, tmp_path / "ckpt")
    result = sft_body(ctx)
    assert result["sampled"] == 8 and 0 < result["kept"] < 8
    assert result["examples"] == result["kept"] and result["steps"] == 2
    assert any("kept" in e.get("message", "") for e in ctx.events if e["type"] == "log")
    # Sampled in two batches of 4, saved for a resumed attempt to reuse.
    assert len(list((tmp_path / "ckpt" / "sft_rollouts").glob("episodes-*.jsonl"))) == 2
    # Held-out evaluation ran before and after training (greedy, on the env).
    assert result["heldout_episodes"] == 2 and 0.0 <= result["heldout_accuracy"] <= 1.0
    evaluated = [
        e["step"] for e in ctx.events if e["type"] == "metric" and "heldout_accuracy" in e["metrics"]
    ]
    assert evaluated == [0, 2]


def test_sft_body_fails_clearly_when_no_episode_is_kept(tmp_path: Path) -> None:
    spec = _sft_spec(
        tmp_path,
        env=TOY_ENV,
        params={
            "source": "rollouts",
            "rollout_episodes": 2,
            "max_tokens": 4,
            "min_reward": 5.0,
            "eval_episodes": 0,
        },
    )
    with pytest.raises(SFTDataError, match=r"kept 0 of 2 episodes .*min_reward=5\.0"):
        sft_body(JobContext(spec, 4, 1, tmp_path / "ckpt"))


# --- bad input -----------------------------------------------------------------------------------


def test_jsonl_row_without_messages_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(MEMORISE[0]) + "\n" + json.dumps({"prompt": "hi", "answer": "yo"}) + "\n")
    with pytest.raises(
        SFTDataError, match=r"bad\.jsonl:2: expected a 'messages' list.*\['answer', 'prompt'\]"
    ):
        load_sft_rows(path)
    _, tokenizer = tiny_random_model(seed=0)
    with pytest.raises(SFTDataError, match=r"row 1: expected a 'messages' list"):
        messages_to_sft_dataset([MEMORISE[0], {"text": "hi"}], tokenizer, 64)
    with pytest.raises(SFTDataError, match=r"row 0: .*assistant message.*\['user'\]"):
        messages_to_sft_dataset([{"messages": [{"role": "user", "content": "hi"}]}], tokenizer, 64)


def test_empty_kept_set_is_a_clear_error() -> None:
    lost = Trajectory((Turn("q", "a", 0.0, prompt_ids=(1,), completion_ids=(2,), env_mask=(1,)),), "demo")
    with pytest.raises(SFTDataError, match=r"0 of 2 pass keep='success'.*rewards seen: \[0\.0\]"):
        trajectories_to_sft_dataset([lost, lost])


def test_load_sft_rows_reads_trajectories_and_saved_datasets(tmp_path: Path) -> None:
    from datasets import Dataset

    trajectory = Trajectory((Turn("q", "a", 1.0),), "demo")
    save_jsonl(tmp_path / "t.jsonl", [trajectory])
    assert load_sft_rows(tmp_path / "t.jsonl") == [trajectory]
    Dataset.from_list(MEMORISE).save_to_disk(str(tmp_path / "saved"))
    assert [row["messages"] for row in load_sft_rows(tmp_path / "saved")] == [r["messages"] for r in MEMORISE]
    Dataset.from_list([{"text": "hi"}]).save_to_disk(str(tmp_path / "plain"))
    with pytest.raises(SFTDataError, match=r"expected a 'messages' column.*\['text'\]"):
        load_sft_rows(tmp_path / "plain")
