"""GRPO through TRL's GRPOTrainer fed by our rollout engine: the rollout_func contract, training, reproducibility, resume."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import pytest

from tests.executors.training.helpers import PreemptAtStep2

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from executors.context import JobContext  # noqa: E402
from executors.errors import JobPreempted  # noqa: E402
from executors.spec import JobSpec  # noqa: E402
from executors.training.common import load_policy, seed_everything  # noqa: E402
from executors.training.config import GRPOParams  # noqa: E402
from executors.training.grpo import (  # noqa: E402
    EngineRollout,
    build_grpo_trainer,
    grpo_body,
    seed_dataset,
    seed_prompt,
    train,
)
from gym_tinker.core import StepResult, TextEnv  # noqa: E402

LENGTH_ENV = "tinker-test/LengthReward-v0"
FLAKY_ENV = "tinker-test/FlakyGuess-v0"


class LengthRewardEnv(TextEnv):
    """Single-turn; the reward depends on the answer's length, so a random model's group rewards differ."""

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        return f"Task {int(self.np_random.integers(100))}: say something.", {}

    def _step(self, action: str) -> StepResult:
        return "Done.", (len(action) % 5) / 4, True, False, {}


class FlakyGuessEnv(TextEnv):
    """Two turns; seed 13 always raises in step (a broken episode that must be dropped, not hang training)."""

    default_max_turns = 2

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        self.broken = self.np_random.integers(1 << 30) == _SEED13_DRAW
        return "Guess a number.", {}

    def _step(self, action: str) -> StepResult:
        if self.broken:
            raise RuntimeError("the env broke")
        return "Higher.", 0.5, False, False, {}


def _draw(seed: int) -> int:
    return int(__import__("numpy").random.default_rng(seed).integers(1 << 30))


_SEED13_DRAW = _draw(13)

for _id, _cls in ((LENGTH_ENV, LengthRewardEnv), (FLAKY_ENV, FlakyGuessEnv)):
    if _id not in gym.registry:
        gym.register(_id, entry_point=_cls)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def _policy(adapter: Any = None) -> Any:
    seed_everything(0)
    spec = JobSpec(kind="grpo", model="tiny-random", adapter=adapter or {"r": 4, "dropout": 0.0})
    return load_policy(spec, GRPOParams())


def _params(**overrides: Any) -> GRPOParams:
    base: dict[str, Any] = {
        "steps": 1,
        "prompts_per_step": 2,
        "group_size": 2,
        "max_tokens": 6,
        "learning_rate": 1e-2,
        "report_to": "none",
        "eval_episodes": 0,
    }
    return GRPOParams(**{**base, **overrides})


def _state(model: Any) -> dict[str, Any]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_rollout_func_one_completion_per_prompt_with_env_tokens_masked() -> None:
    policy = _policy()
    params = _params(max_turns=2, temperature=1.0)
    engine = EngineRollout("tinker/GuessNumber-v0", policy.tokenizer, params)
    prompts = [seed_prompt(3)] * 2 + [seed_prompt(5)] * 2  # as TRL's RepeatSampler hands them over
    trainer = SimpleNamespace(model=policy.model, state=SimpleNamespace(global_step=0))
    out = engine(prompts, trainer)
    assert {len(out[k]) for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward")} == {
        4
    }
    assert policy.model.training  # put back in train mode after sampling
    assert out["prompt_ids"][0] == out["prompt_ids"][1]  # a group shares its task
    _check_masks_and_logprobs(engine, out, policy)
    # The weights change in place without a version bump (as fused AdamW does): the next step
    # must still sample from, and report log-probs of, the current weights.
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.data.add_(0.5)
    out = engine(prompts, SimpleNamespace(model=policy.model, state=SimpleNamespace(global_step=1)))
    _check_masks_and_logprobs(engine, out, policy)
    assert engine.last_metrics["episodes"] == 4
    assert engine.last_metrics["sampled_tokens"] > 0
    engine.close()


def _check_masks_and_logprobs(engine: EngineRollout, out: dict[str, Any], policy: Any) -> None:
    assert [t.seed for t in engine.last_trajectories] == [3, 3, 5, 5]
    for trajectory, ids, mask, logprobs in zip(
        engine.last_trajectories, out["completion_ids"], out["env_mask"], out["logprobs"], strict=True
    ):
        assert len(trajectory.turns) == 2
        first, second = trajectory.turns
        sampled_first = len(first.completion_ids) - first.env_mask.count(0)
        env_ids = first.completion_ids[sampled_first:]
        assert env_ids, "a multi-turn episode has the env's reply between the two turns"
        # Zeros exactly on the env's reply, which holds the env's feedback text.
        expected_mask = [1] * sampled_first + [0] * len(env_ids) + [1] * len(second.completion_ids)
        assert mask == expected_mask
        assert second.observation.split()[0] in policy.tokenizer.decode(list(env_ids))
        # Logprobs are the sampler's: the model's log-softmax at each sampled id, 0.0 on env ids.
        full = torch.tensor([list(first.prompt_ids) + ids])
        with torch.no_grad():
            policy.model.eval()
            logits = policy.model(full).logits[0]
            policy.model.train()
        start = len(first.prompt_ids)
        recomputed = torch.log_softmax(logits[start - 1 : -1].float(), -1).gather(
            1, torch.tensor(ids)[:, None]
        )
        for position, (m, lp) in enumerate(zip(mask, logprobs, strict=True)):
            if m == 0:
                assert lp == 0.0
            else:
                assert lp == pytest.approx(recomputed[position, 0].item(), abs=1e-4)


def test_dropped_episode_becomes_an_eos_only_completion_without_reward() -> None:
    policy = _policy()
    engine = EngineRollout(FLAKY_ENV, policy.tokenizer, _params(), retries=1)
    prompts = [seed_prompt(13)] * 2 + [seed_prompt(4)] * 2
    out = engine([*prompts], SimpleNamespace(model=policy.model, state=SimpleNamespace(global_step=0)))
    engine.close()
    eos = policy.tokenizer.eos_token_id
    assert out["completion_ids"][:2] == [[eos], [eos]]
    assert out["env_mask"][:2] == [[0], [0]]
    assert out["env_reward"][:2] == [None, None]
    assert out["env_reward"][2:] == [1.0, 1.0]  # 0.5 per turn, two turns
    assert engine.last_metrics["dropped"] == 2
    assert len(out["prompt_ids"]) == 4


def test_lora_step_changes_adapter_only() -> None:
    policy = _policy()
    before = _state(policy.model)
    trainer = build_grpo_trainer(
        policy.model, policy.tokenizer, LENGTH_ENV, _params(), output_dir="/tmp/unused-grpo"
    )
    trainer.args.save_strategy = "no"
    train(trainer)
    assert trainer.state.global_step == 1
    assert trainer.rollout_func.last_metrics["zero_variance_fraction"] < 1.0
    after = _state(policy.model)
    lora = [n for n in before if "lora_" in n]
    assert lora and any(not torch.equal(before[n], after[n]) for n in lora)
    assert all(torch.equal(before[n], after[n]) for n in before if "lora_" not in n)


def test_full_parameter_step_changes_base_weights() -> None:
    policy = _policy(adapter="full")
    before = _state(policy.model)
    trainer = build_grpo_trainer(
        policy.model, policy.tokenizer, LENGTH_ENV, _params(), output_dir="/tmp/unused-grpo"
    )
    trainer.args.save_strategy = "no"
    train(trainer)
    after = _state(policy.model)
    changed = [n for n in before if not torch.equal(before[n], after[n])]
    assert len(changed) == len(before), sorted(set(before) - set(changed))


@pytest.mark.parametrize("adapter", [None, "full"], ids=["lora", "full"])
def test_gradient_checkpointing_trains_the_same_weights(adapter: Any, tmp_path: Path) -> None:
    """Recomputing activations in the backward pass changes memory, not the result."""
    results = []
    for checkpointing in (False, True):
        policy = _policy(adapter)
        trainer = build_grpo_trainer(
            policy.model,
            policy.tokenizer,
            LENGTH_ENV,
            _params(steps=2, gradient_checkpointing=checkpointing),
            output_dir=tmp_path / str(checkpointing),
        )
        trainer.args.save_strategy = "no"
        train(trainer)
        assert policy.model.is_activation_checkpointing is checkpointing
        results.append(_state(policy.model))
    plain, recomputed = results
    assert all(torch.allclose(plain[n], recomputed[n], atol=1e-6) for n in plain)


def _train_run(tmp: Path, steps: int) -> tuple[list[dict[str, float]], dict[str, Any]]:
    policy = _policy()
    trainer = build_grpo_trainer(
        policy.model, policy.tokenizer, LENGTH_ENV, _params(steps=steps), output_dir=tmp
    )
    train(trainer)
    return trainer.rollout_func.history, _state(policy.model)


def test_same_seed_same_run(tmp_path: Path) -> None:
    history_a, params_a = _train_run(tmp_path / "a", steps=2)
    history_b, params_b = _train_run(tmp_path / "b", steps=2)
    timing = {"rollout_seconds", "sampled_tokens_per_second"}
    assert [{k: v for k, v in h.items() if k not in timing} for h in history_a] == [
        {k: v for k, v in h.items() if k not in timing} for h in history_b
    ]
    assert all(torch.equal(params_a[n], params_b[n]) for n in params_a)


def test_preempted_job_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    spec = JobSpec(
        kind="grpo",
        model="tiny-random",
        adapter={"r": 4, "dropout": 0.0},
        env=LENGTH_ENV,
        params=_params(steps=4, checkpoint_every=2, eval_episodes=2, eval_every=0, max_tokens=4).model_dump(),
    )

    straight = JobContext(spec, 1, 1, tmp_path / "straight" / "ckpt")
    result = grpo_body(straight)
    assert result["steps"] == 4 and result["heldout_accuracy_before"] is not None

    first = PreemptAtStep2(spec, 2, 1, tmp_path / "resumed" / "ckpt")
    with pytest.raises(JobPreempted):
        grpo_body(first)
    second = JobContext(spec, 2, 2, tmp_path / "resumed" / "ckpt")
    resumed = grpo_body(second)
    assert resumed["resumed_from"] is not None and resumed["resumed_from"].endswith("checkpoint-2")
    assert resumed["steps"] == 4

    from safetensors.torch import load_file

    a = load_file(Path(result["saved"]["adapter"]) / "adapter_model.safetensors")
    b = load_file(Path(resumed["saved"]["adapter"]) / "adapter_model.safetensors")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=1e-6, rtol=0)
    assert result["final_metrics"]["rollout/reward_mean"] == resumed["final_metrics"]["rollout/reward_mean"]
    # The resumed run's metrics read as one run: each step once, the same rewards as the straight run.
    from executors.training.common import RunFolder

    straight_rows = RunFolder(tmp_path / "straight").read_metrics()
    resumed_rows = RunFolder(tmp_path / "resumed").read_metrics()
    assert [r["step"] for r in resumed_rows] == [r["step"] for r in straight_rows]
    assert [r.get("reward") for r in resumed_rows] == [r.get("reward") for r in straight_rows]


def test_seed_dataset_is_one_row_per_seed() -> None:
    with warnings.catch_warnings():
        ds = seed_dataset(range(3))
    assert ds["seed"] == [0, 1, 2] and ds["prompt"][2] == "seed=2"


def test_body_trains_through_trl_environment_factory(tmp_path: Path) -> None:
    spec = JobSpec(
        kind="grpo",
        model="tiny-random",
        adapter={"r": 4},
        env="tinker/GuessNumber-v0",
        params=_params(rollout="trl_env", max_turns=2, max_tokens=8, eval_episodes=0).model_dump(),
    )
    ctx = JobContext(spec, 3, 1, tmp_path / "ckpt")
    result = grpo_body(ctx)
    assert result["steps"] == 1
    assert Path(result["saved"]["adapter"], "adapter_config.json").exists()
    assert "rewards/TRLEnvironment_GuessNumber_v0/mean" in result["final_metrics"]
    assert any(e["type"] == "metric" and e["step"] == 1 for e in ctx.events)


def test_a_step_where_every_episode_fails_raises() -> None:
    policy = _policy()
    engine = EngineRollout(FLAKY_ENV, policy.tokenizer, _params(), retries=0)
    trainer = SimpleNamespace(model=policy.model, state=SimpleNamespace(global_step=4), num_generations=2)
    with pytest.raises(RuntimeError, match=r"step 4: all 2 episodes .* failed .*the env broke"):
        engine([seed_prompt(13)] * 2, trainer)
    engine.close()
