"""gym_tinker envs behind TRL's environment_factory contract, checked directly and through a real GRPOTrainer."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import pytest

from executors.training.trl_env import (
    ToolUseTRLEnvironment,
    TRLEnvironment,
    tool_calling_tokenizer,
    trl_environment_factory,
)


def _tool_names(cls: type) -> set[str]:
    # TRL's rule (GRPOTrainer.__init__): public functions of the class other than reset/get_reward are tools.
    return {
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def test_tools_exposed_to_trl() -> None:
    assert _tool_names(trl_environment_factory("tinker/Math-v0")) == {"answer"}
    tool_use = trl_environment_factory("tinker/ToolUse-v0", difficulty="easy")
    assert issubclass(tool_use, ToolUseTRLEnvironment)
    assert _tool_names(tool_use) == {"answer", "lookup", "search", "calculator", "python"}


def test_tool_schemas_build_from_docstrings() -> None:
    from transformers.utils import get_json_schema

    env = trl_environment_factory("tinker/ToolUse-v0")()
    for name in sorted(_tool_names(type(env))):
        schema = get_json_schema(getattr(env, name))["function"]
        assert schema["name"] == name and schema["description"]
        parameters = schema["parameters"]["properties"]
        assert parameters and all(p["type"] == "string" and p.get("description") for p in parameters.values())
    assert set(get_json_schema(env.lookup)["function"]["parameters"]["required"]) == {"entity", "attribute"}


def test_reset_uses_the_row_seed_and_reward_accumulates() -> None:
    Env = trl_environment_factory("tinker/GuessNumber-v0", max_turns=2)
    a, b = Env(), Env()
    first = a.reset(seed=5, prompt="ignored", other="ignored")
    assert first == b.reset(seed=5) and a.seed == 5
    assert "`answer` tool" in first
    assert a.answer("50") == b.answer("50")  # same seed, same secret, same feedback
    a.answer("1")
    assert a.done and a.steps == 2
    assert a.answer("2") == "The episode is over; no further actions are taken." and a.steps == 2
    with pytest.raises(ValueError, match="seed"):
        a.reset(seed="7")


def test_tool_use_solved_through_tools_earns_the_env_reward() -> None:
    env = trl_environment_factory("tinker/ToolUse-v0", difficulty="medium")()
    env.reset(seed=3)
    task = env.env.unwrapped.task
    assert task.plan
    for call in task.plan:
        result = getattr(env, call.name)(**call.arguments)
        assert "<tool_response" in result and "Error" not in result
    assert env.get_reward() == 0.0 and not env.done
    env.answer(str(task.answer))
    assert env.done and env.get_reward() == 1.0


def test_missing_env_id_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="trl_environment_factory"):
        TRLEnvironment()
    with pytest.raises(ValueError, match="registered env id"):
        trl_environment_factory("")


def test_grpo_trainer_runs_with_the_environment_factory(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from trl import GRPOConfig, GRPOTrainer

    from executors.spec import JobSpec
    from executors.training.common import load_policy, seed_everything
    from executors.training.config import GRPOParams
    from executors.training.grpo import _filter_third_party_warnings, seed_dataset

    torch.set_num_threads(1)
    seed_everything(0)
    policy = load_policy(JobSpec(kind="grpo", model="tiny-random", adapter={"r": 4}), GRPOParams())
    tokenizer = tool_calling_tokenizer(policy.tokenizer)
    Env = trl_environment_factory("tinker/GuessNumber-v0", max_turns=2)
    seeds = [11, 12, 13, 14]
    dataset = seed_dataset(seeds).map(lambda row: {"prompt": [{"role": "user", "content": "Play."}]})
    with warnings.catch_warnings():
        _filter_third_party_warnings()
        args = GRPOConfig(
            output_dir=str(tmp_path),
            per_device_train_batch_size=4,
            num_generations=2,
            max_steps=1,
            max_completion_length=12,
            use_cpu=True,
            bf16=False,
            report_to=[],
            save_strategy="no",
            gradient_checkpointing=False,
            disable_tqdm=True,
        )
        trainer = GRPOTrainer(
            model=policy.model,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            environment_factory=Env,
        )
        assert trainer.reward_func_names == [Env.__name__]  # get_reward is the reward source
        assert {tool.__name__ for tool in trainer.tools} == {"answer"}
        trainer.train()
    assert trainer.state.global_step == 1
    used = trainer.environments
    assert len(used) == 4 and all(isinstance(env, Env) for env in used)
    assert sorted({env.seed for env in used}) == sorted({env.seed for env in used} & set(seeds))
    assert len({env.seed for env in used}) == 2  # two groups, each member reset with its row's seed
