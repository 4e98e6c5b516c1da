"""ActorCriticPPO on the tiny random model: masks, updates, LoRA vs full, KL to the reference, exact resume."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from executors.context import JobContext, deliver_signal  # noqa: E402
from executors.errors import JobPreempted  # noqa: E402
from executors.models.tiny import tiny_random_model  # noqa: E402
from executors.spec import JobSpec  # noqa: E402
from executors.training.config import PPOParams  # noqa: E402
from executors.training.ppo import ActorCriticPPO, collate, ppo_body  # noqa: E402
from gym_tinker.trajectory import Trajectory, Turn  # noqa: E402

PROMPT = (1, 40, 41, 42)


@pytest.fixture(autouse=True)
def _one_thread() -> Any:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def two_turn(sampled1: tuple[int, ...], env: tuple[int, ...], sampled2: tuple[int, ...], rewards=(0.0, 1.0)):
    """A token-exact two-turn trajectory: prompt, sampled ids, env reply, sampled ids."""
    first = Turn(
        "q",
        "a",
        rewards[0],
        prompt_ids=PROMPT,
        completion_ids=sampled1 + env,
        env_mask=(1,) * len(sampled1) + (0,) * len(env),
        completion_logprobs=(-1.0,) * len(sampled1) + (0.0,) * len(env),
    )
    second = Turn(
        "r",
        "b",
        rewards[1],
        prompt_ids=PROMPT + sampled1 + env,
        completion_ids=sampled2,
        env_mask=(1,) * len(sampled2),
        completion_logprobs=(-1.0,) * len(sampled2),
    )
    return Trajectory(turns=(first, second), env_id="demo")


def batch_of_trajectories() -> list[Trajectory]:
    return [
        two_turn((50, 51, 52), (60, 61), (53, 2), rewards=(0.0, 1.0)),
        two_turn((70, 71), (62,), (72, 73, 74, 2), rewards=(0.5, -1.0)),
        two_turn((80,), (63, 64, 65), (81, 2), rewards=(0.0, 0.0)),
    ]


def make_trainer(lora: bool = True, seed: int = 0, **overrides: Any) -> ActorCriticPPO:
    model, tok = tiny_random_model(seed=0)
    if lora:
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(seed)  # the LoRA A matrices are drawn from the global generator
        config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.1, target_modules=["q_proj", "v_proj"])
        with warnings.catch_warnings():
            # peft reads transformers' deprecated `is_gradient_checkpointing`; not ours to fix.
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            model = get_peft_model(model, config)
    params = dict(steps=10, learning_rate=1e-2, minibatch_size=2, ppo_epochs=2, seed=seed)
    params.update(overrides)
    return ActorCriticPPO(model, tok, PPOParams(**params))


def snapshot(module: Any) -> dict[str, Any]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_collate_puts_rewards_on_each_turns_last_sampled_token() -> None:
    batch = collate(batch_of_trajectories(), pad_id=0)
    # Column j is token j + 1. Sequence 0: prompt 1 40 41 42 | 50 51 52 | env 60 61 | 53 2.
    assert batch.mask[0].int().tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    assert batch.scores[0].tolist() == [0.0] * 9 + [1.0]
    # Sequence 1: prompt | 70 71 | env 62 | 72 73 74 2: turn 1's 0.5 on 71, turn 2's -1 on the final 2.
    assert batch.scores[1].tolist() == [0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, -1.0]
    # Sequence 2 is one token shorter: right-padded, the pad is masked.
    assert batch.mask[2].int().tolist() == [0, 0, 0, 1, 0, 0, 0, 1, 1, 0]
    assert batch.attention_mask.sum(1).tolist() == [11, 11, 10]
    assert batch.input_ids[2, -1].item() == 0
    assert batch.sampler_logprobs is not None and batch.sampler_logprobs[0, 3].item() == -1.0


def test_losses_ignore_prompt_and_env_tokens() -> None:
    """No loss term sends gradient into the logits or values at prompt, env or padding positions."""
    trainer = make_trainer(
        lora=False, ppo_epochs=1, minibatch_size=3, entropy_coef=0.1, kl_mode="loss", kl_coef=0.5
    )
    grads: dict[str, list[Any]] = {"logits": [], "values": []}

    def keep(name: str) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:
            if output.requires_grad:
                output.register_hook(lambda g: grads[name].append(g.detach().clone()))

        return hook

    trainer.model.lm_head.register_forward_hook(keep("logits"))
    trainer.value_head.linear.register_forward_hook(keep("values"))
    trajectories = batch_of_trajectories()
    # The trainer's first shuffle: its own generator seeded with params.seed (0).
    order = torch.randperm(3, generator=torch.Generator().manual_seed(0)).tolist()
    trainer.step(trajectories)
    batch = collate(trajectories, pad_id=0)
    [logit_grad], [value_grad] = grads["logits"], grads["values"]
    width = logit_grad.shape[1] - 1
    assert width == batch.mask.shape[1]  # the minibatch holds the longest sequence
    logit_touched = logit_grad[:, :-1].abs().sum(-1) != 0  # position j predicts token j + 1
    value_touched = value_grad[..., 0] != 0  # values are read from the already-cut hidden states
    for row, index in enumerate(order):
        mask = batch.mask[index].bool()
        assert torch.equal(logit_touched[row], mask), f"row {row}: logits gradient outside the mask"
        assert not value_touched[row][~mask].any(), f"row {row}: value gradient outside the mask"
    assert value_touched.any()
    assert float(logit_grad[:, -1].abs().sum()) == 0.0  # the last position predicts nothing


def test_trailing_env_tokens_do_not_change_the_update() -> None:
    """Env tokens after the last sampled token are context for nothing and carry no loss."""
    # One update on the whole batch, so the gradients left in .grad are that update's.
    plain, padded = (make_trainer(lora=False, ppo_epochs=1, minibatch_size=3) for _ in range(2))
    trajectories = batch_of_trajectories()
    with_tail = []
    for t in trajectories:
        first, second = t.turns
        ids = tuple(second.completion_ids or ())
        second = Turn(
            second.observation,
            second.action,
            second.reward,
            prompt_ids=second.prompt_ids,
            completion_ids=(*ids, 90, 91, 92),
            env_mask=(1,) * len(ids) + (0, 0, 0),
            completion_logprobs=(-1.0,) * len(ids) + (-50.0,) * 3,
        )
        with_tail.append(Trajectory(turns=(first, second), env_id="demo"))
    a, b = plain.step(trajectories), padded.step(with_tail)
    for key in ("policy_loss", "value_loss", "kl", "advantage_mean", "sampled_tokens"):
        assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-7), key
    # Compare gradients, not parameters: Adam's first step is about lr * sign(grad), which turns
    # float noise in near-zero gradients into visible parameter differences.
    for (name, pa), pb in zip(plain.model.named_parameters(), padded.model.parameters(), strict=True):
        torch.testing.assert_close(pa.grad, pb.grad, rtol=1e-4, atol=1e-7, msg=name)
    assert plain.model.model.embed_tokens.weight.grad[90:93].abs().sum() == 0
    assert padded.model.model.embed_tokens.weight.grad[90:93].abs().sum() == 0


def test_a_step_changes_trainable_parameters_only() -> None:
    trainer = make_trainer(lora=True)
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    head_before = snapshot(trainer.value_head)
    metrics = trainer.step(batch_of_trajectories())
    changed = {k for k, v in trainer.model.named_parameters() if not torch.equal(v, before[k])}
    trainable = {k for k, v in trainer.model.named_parameters() if v.requires_grad}
    assert changed and changed <= trainable and all("lora_" in k for k in changed)
    assert any("lora_B" in k for k in changed)
    assert not torch.equal(trainer.value_head.linear.weight, head_before["linear.weight"])
    for name in (
        "policy_loss",
        "value_loss",
        "entropy",
        "kl",
        "clip_fraction",
        "approx_kl",
        "explained_variance",
        "advantage_mean",
        "grad_norm",
    ):
        assert name in metrics, name
    assert metrics["updates"] == 4.0  # 2 epochs x ceil(3 / 2) minibatches
    assert metrics["grad_norm"] > 0 and metrics["entropy"] > 0
    assert metrics["score_mean"] == pytest.approx((1.0 - 0.5 + 0.0) / 3)
    assert metrics["sampled_tokens"] == 5 + 6 + 3


@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_gradient_checkpointing_gives_the_same_update(lora: bool) -> None:
    """Recomputing activations in the backward pass changes memory, not the result."""
    results = []
    for checkpointing in (False, True):
        trainer = make_trainer(lora=lora, gradient_checkpointing=checkpointing)
        trainer.step(batch_of_trajectories())
        assert trainer.model.is_activation_checkpointing is checkpointing
        results.append(snapshot(trainer.model))
    assert all(torch.allclose(results[0][k], results[1][k], atol=1e-6) for k in results[0])


def test_lora_and_full_trainable_parameter_counts() -> None:
    lora, full = make_trainer(lora=True), make_trainer(lora=False)
    total = sum(p.numel() for p in full.model.parameters())
    lora_count = sum(p.numel() for p in lora.policy_parameters)
    # r=4 on q_proj (64 -> 64) and v_proj (64 -> 32) in 2 layers: A is r x in, B is out x r.
    assert lora_count == 2 * (4 * 64 + 64 * 4 + 4 * 64 + 32 * 4)
    assert sum(p.numel() for p in full.policy_parameters) == total
    assert sum(p.numel() for p in lora.value_parameters) == 64 + 1


def test_kl_is_zero_before_any_update_and_grows_after() -> None:
    for lora in (True, False):
        trainer = make_trainer(lora=lora, learning_rate=5e-2)
        first = trainer.step(batch_of_trajectories())
        assert first["kl"] == 0.0 and first["kl_per_episode"] == 0.0
        second = trainer.step(batch_of_trajectories())
        assert second["kl"] != 0.0


def test_kl_loss_mode_and_separate_value_model() -> None:
    trainer = make_trainer(
        lora=True,
        kl_mode="loss",
        value_model="separate",
        value_learning_rate=1e-3,
        ppo_epochs=1,
        minibatch_size=3,
    )
    assert trainer.value_head.backbone is not None
    assert trainer.optimizer.param_groups[1]["lr"] == 1e-3
    policy_ids = {id(p) for p in trainer.policy_parameters}
    assert not policy_ids & {id(p) for p in trainer.value_parameters}
    before = snapshot(trainer.value_head)
    metrics = trainer.step(batch_of_trajectories())
    # One update, taken before the policy moved away from the reference: the k3 term is 0.
    assert metrics["updates"] == 1.0 and metrics["kl_loss"] == 0.0
    assert trainer.step(batch_of_trajectories())["kl_loss"] > 0.0
    after = trainer.value_head.state_dict()
    assert any(not torch.equal(after[k], v) for k, v in before.items() if "lora_" in k)


@pytest.mark.parametrize(("lora", "value_model"), [(True, "head"), (False, "separate")])
def test_resume_equals_uninterrupted(tmp_path: Path, lora: bool, value_model: str) -> None:
    """4 steps straight == 2 steps, save, a new trainer loads, 2 more (LoRA dropout 0.1 is disabled by the trainer)."""
    overrides = dict(lr_scheduler="linear", warmup_steps=1, steps=4, value_model=value_model)
    data = [batch_of_trajectories()[i % 3 :] + batch_of_trajectories()[: i % 3] for i in range(4)]
    straight = make_trainer(lora=lora, **overrides)
    for batch in data:
        straight.step(batch)
    first = make_trainer(lora=lora, **overrides)
    for batch in data[:2]:
        first.step(batch)
    first.save(tmp_path / "ppo.pt")
    resumed = make_trainer(lora=lora, **overrides)
    torch.manual_seed(123)  # the global generator is part of the checkpoint, so this must not matter
    resumed.load(tmp_path / "ppo.pt")
    assert resumed.step_count == 2
    for batch in data[2:]:
        resumed.step(batch)
    for (name, a), b in zip(straight.model.named_parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(a, b), name
    for (name, a), b in zip(
        straight.value_head.named_parameters(), resumed.value_head.parameters(), strict=True
    ):
        assert torch.equal(a, b), name
    assert straight.scheduler.get_last_lr() == resumed.scheduler.get_last_lr()
    assert torch.equal(straight.generator.get_state(), resumed.generator.get_state())


def test_checkpoint_rejects_a_mismatched_trainer(tmp_path: Path) -> None:
    lora = make_trainer(lora=True)
    lora.save(tmp_path / "lora.pt")
    with pytest.raises(ValueError, match="lora=True"):
        make_trainer(lora=False).load(tmp_path / "lora.pt")


def _body_spec(output: Path) -> JobSpec:
    params = dict(
        steps=4,
        episodes_per_step=2,
        minibatch_size=1,
        max_tokens=4,
        max_turns=2,
        learning_rate=1e-2,
        entropy_coef=0.05,  # the tiny model never earns a reward: the entropy bonus makes every step move
        eval_every=2,
        eval_episodes=2,
        checkpoint_every=3,
        sample_every=2,
        threads=1,
        report_to="none",
    )
    return JobSpec(
        kind="ppo",
        model="tiny-random",
        adapter={"r": 2, "alpha": 4, "dropout": 0.05, "target_modules": ["q_proj"]},
        env="tinker/GuessNumber-v0",
        params=params,
        output_dir=str(output),
    )


def test_ppo_body_preempted_and_resumed_equals_uninterrupted(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    straight_ctx = JobContext(_body_spec(tmp_path / "straight"), 1, 1, tmp_path / "ckpt-straight")
    result = ppo_body(straight_ctx)
    assert result["steps"] == 4 and Path(result["adapter"]).is_dir()

    spec = _body_spec(tmp_path / "resumed")
    ctx = JobContext(spec, 2, 1, tmp_path / "ckpt-resumed")
    deliver_signal(ctx.key, "preempt")  # seen at the first step boundary: checkpoint, then yield
    with pytest.raises(JobPreempted):
        ppo_body(ctx)
    assert ctx.load_checkpoint()["step"] == 1
    second = JobContext(spec, 2, 2, tmp_path / "ckpt-resumed")
    ppo_body(second)

    weights = [
        load_file(Path(d) / "adapter" / "adapter_model.safetensors")
        for d in (tmp_path / "straight", tmp_path / "resumed")
    ]
    assert weights[0].keys() == weights[1].keys()
    for name in weights[0]:
        assert torch.equal(weights[0][name], weights[1][name]), name
    assert any("lora_B" in name and weights[0][name].abs().sum() > 0 for name in weights[0])  # it trained
    rows = [json.loads(line) for line in (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()]
    assert all(r["kl"] != 0 for r in rows if "policy_loss" in r and r["step"] > 1)
    training = [r["step"] for r in rows if "policy_loss" in r]
    assert training == [1, 2, 3, 4]
    straight_rows = [
        json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()
    ]
    for key in ("reward", "policy_loss", "kl"):
        assert [r[key] for r in rows if "policy_loss" in r] == [
            r[key] for r in straight_rows if "policy_loss" in r
        ]
    assert [r["step"] for r in rows if "heldout_accuracy" in r] == [0, 2, 4]
    assert (tmp_path / "resumed" / "reward_curve.png").exists()
    assert (tmp_path / "resumed" / "transcripts" / "step-000002.md").exists()
    assert any(e["type"] == "metric" and "reward" in e["metrics"] for e in second.events)


def test_ppo_raises_the_probability_of_rewarded_tokens() -> None:
    """A bandit on one prompt: answer 50 earns 1, answer 60 earns 0; PPO moves probability to 50."""
    trainer = make_trainer(lora=False, learning_rate=3e-3, kl_coef=0.0, minibatch_size=2, ppo_epochs=2)

    def episode(token: int, reward: float) -> Trajectory:
        turn = Turn("q", "a", reward, prompt_ids=PROMPT, completion_ids=(token, 2), env_mask=(1, 1))
        return Trajectory(turns=(turn,), env_id="demo")

    def logprob(token: int) -> float:
        with torch.no_grad():
            logits = trainer.model(input_ids=torch.tensor([PROMPT])).logits[0, -1]
        return float(torch.log_softmax(logits, -1)[token])

    before = logprob(50), logprob(60)
    for _ in range(5):
        metrics = trainer.step([episode(50, 1.0), episode(60, 0.0)])
    assert logprob(50) > before[0] + 3 and logprob(60) < before[1]
    assert "kl" not in metrics  # no reference is run without a KL term
    assert metrics["value_mean"] > 0  # the critic learned that this prompt pays 0.5 on average
