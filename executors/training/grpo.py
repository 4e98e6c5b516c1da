"""GRPO jobs: TRL's ``GRPOTrainer`` fed by our batched, token-exact rollout engine through ``rollout_func``.

The pieces (the first three in :mod:`executors.training.grpo_rollout`, re-exported here):

* :func:`seed_dataset`: the train dataset, one row per task seed (``prompt`` ``"seed=17"``, ``seed``);
* :class:`EngineRollout`: the ``rollout_func`` TRL calls once per step. TRL hands it the step's
  prompts already repeated ``num_generations`` times (consecutive equal prompts form a group);
  it maps each prompt to its seed, runs one batched :func:`gym_tinker.rollout.rollout` of every
  ``(seed, member)`` over a reused pool of envs with the live training model, and returns one
  completion per prompt: sampled ids (``env_mask`` 1) followed by the env's ids (``env_mask`` 0);
* :func:`env_reward`: the reward function; the reward is the env's total reward;
* :func:`build_grpo_trainer`: the ``GRPOTrainer`` with ``GRPOConfig`` mapped from :class:`GRPOParams`;
* :func:`grpo_body`: the ``grpo`` job kind (load, train, checkpoint, resume, evaluate, save).

TRL behaviours this relies on (TRL 1.16, observed): ``rollout_func`` receives only the prompts
(not the dataset rows), already repeated ``num_generations`` times and shuffled by its
``RepeatSampler``, and must return one completion per prompt; keys other than ``prompt_ids``/
``completion_ids``/``logprobs`` are forwarded to reward functions, except ``env_mask``, which
multiplies the loss mask. The sampler's ``logprobs`` are used only for vLLM importance-sampling
correction and the off-policy mask; on-policy training (``num_iterations=1``) uses the model's
own detached log-probs as the old ones. A reward of ``None`` excludes a completion from its
group's baseline and zeroes its advantage.

An episode that still fails after its retries becomes an EOS-only completion with
``env_mask`` 0 and reward ``None`` (it trains nothing and does not shift its group's
baseline); a step in which every episode fails raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executors.training.config import GRPOParams
from executors.training.grpo_rollout import (
    EngineRollout,
    env_reward,
    rollout_seed,
    seed_dataset,
    seed_of_prompt,
    seed_prompt,
)

if TYPE_CHECKING:
    from executors.context import JobContext

__all__ = [
    "EngineRollout",
    "build_grpo_trainer",
    "env_reward",
    "grpo_body",
    "grpo_config",
    "rollout_seed",
    "seed_dataset",
    "seed_of_prompt",
    "seed_prompt",
]

# Warnings TRL and transformers emit from their own code on every step; none is ours to fix.
_THIRD_PARTY_WARNINGS: tuple[tuple[str, type[Warning]], ...] = (
    (r".*`past_key_values` is deprecated.*", FutureWarning),  # TRL's log-prob forward (trl/trainer/utils.py)
    (r".*gradient_checkpointing.*is deprecated.*", FutureWarning),  # TRL toggles it around no-grad forwards
    (r".*is_gradient_checkpointing.*", FutureWarning),
    (r".*'rollout_func', which is an experimental feature.*", UserWarning),
    (r".*'environment_factory', which is an experimental feature.*", UserWarning),
)


def _default_max_turns(env_id: str) -> int:
    from gym_tinker.registration import ENV_ENTRIES

    return next((e.max_turns for e in ENV_ENTRIES if e.id == env_id), 8)


def grpo_config(
    params: GRPOParams, output_dir: str | Path, *, env_id: str = "", report_to: Sequence[str] = ()
) -> Any:
    """TRL's ``GRPOConfig`` for ``params``: one rollout and one optimizer step per training step.

    ``per_device_train_batch_size`` is ``prompts_per_step * group_size`` and
    ``num_generations`` is ``group_size``, so each step is exactly one batch of whole groups.
    ``max_completion_length`` (a constant that only ``dr_grpo`` divides by) is the token budget,
    else ``max_tokens`` times twice the turn limit (env tokens sit between turns).

    >>> args = grpo_config(GRPOParams(prompts_per_step=2, group_size=4, steps=3), "/tmp/grpo-doctest")
    >>> args.per_device_train_batch_size, args.num_generations, args.max_steps, args.use_cpu
    (8, 4, 3, True)
    """
    import warnings

    from trl import GRPOConfig

    from executors.training.common import trainer_arguments

    turns = params.max_turns or _default_max_turns(env_id)
    with warnings.catch_warnings():
        _filter_third_party_warnings()  # GRPOConfig passes the deprecated `gradient_checkpointing` on
        return GRPOConfig(
            **trainer_arguments(params, output_dir),
            # One rollout per step (TRL's generation batch); the loss may run over it in slices.
            per_device_train_batch_size=params.batch_size // params.accumulation_steps,
            gradient_accumulation_steps=params.accumulation_steps,
            num_generations=params.group_size,
            max_steps=params.steps,
            max_completion_length=params.token_budget or params.max_tokens * turns * 2,
            beta=params.beta,
            epsilon=params.epsilon,
            loss_type=params.loss_type,
            scale_rewards=params.scale_rewards,
            temperature=params.temperature,
            top_p=params.top_p,
            data_seed=params.seed,
            report_to=list(report_to),
            fp16=False,
            remove_unused_columns=False,
        )


def build_grpo_trainer(
    model: Any,
    tokenizer: Any,
    env_id: str,
    params: GRPOParams,
    *,
    output_dir: str | Path,
    callbacks: Sequence[Any] = (),
    peft_config: Any = None,
    report_to: Sequence[str] = (),
    rollout: EngineRollout | None = None,
) -> Any:
    """A ``GRPOTrainer`` that trains ``model`` on ``env_id`` with our rollouts; the reward is the env's.

    The train dataset holds ``steps * prompts_per_step`` task seeds from ``params.seed`` (one
    epoch: no task is seen twice). ``trainer.rollout_func`` is the :class:`EngineRollout`, whose
    ``last_metrics`` and ``last_trajectories`` the caller reads after each step. With
    ``params.rollout == "trl_env"`` TRL generates instead, with its tool loop over
    :func:`~executors.training.trl_env.trl_environment_factory` (tools: the env's, plus
    ``answer``; the tokenizer may get TRL's Qwen3 chat template, see
    :func:`~executors.training.trl_env.tool_calling_tokenizer`); ``trainer.rollout_func`` is then None.

    Args:
        model: The policy: a peft ``PeftModel`` (LoRA) or a plain causal LM (full parameters).
        tokenizer: Its tokenizer.
        env_id: A registered env id.
        params: GRPO hyper-parameters.
        output_dir: Where TRL writes ``checkpoint-N`` folders.
        callbacks: transformers ``TrainerCallback`` objects.
        peft_config: A peft ``LoraConfig`` for TRL to wrap a plain ``model`` with.
        report_to: transformers integrations (``tensorboard``, ``trackio``, ...).
        rollout: The rollout function; default a new :class:`EngineRollout` (``rollout: engine`` only).
    """
    import warnings

    from trl import GRPOTrainer

    seeds = list(range(params.seed, params.seed + params.steps * params.prompts_per_step))
    with warnings.catch_warnings():
        _filter_third_party_warnings()
        args = grpo_config(params, output_dir, env_id=env_id, report_to=report_to)
        if params.rollout == "trl_env":
            return _trl_env_trainer(model, tokenizer, env_id, params, args, seeds, callbacks, peft_config)
        return GRPOTrainer(
            model=model,
            reward_funcs=[env_reward],
            args=args,
            train_dataset=seed_dataset(seeds),
            processing_class=tokenizer,
            callbacks=list(callbacks),
            peft_config=peft_config,
            rollout_func=rollout or EngineRollout(env_id, tokenizer, params),
        )


def _trl_env_trainer(
    model: Any,
    tokenizer: Any,
    env_id: str,
    params: GRPOParams,
    args: Any,
    seeds: list[int],
    callbacks: Sequence[Any],
    peft_config: Any,
) -> Any:
    """``rollout: trl_env``: TRL's own generation and tool loop over :mod:`executors.training.trl_env`."""
    from trl import GRPOTrainer

    from executors.training.trl_env import tool_calling_tokenizer, trl_environment_factory

    env_kwargs = dict(params.env_kwargs)
    if params.max_turns is not None:
        env_kwargs.setdefault("max_turns", params.max_turns)
    args.max_tool_calling_iterations = params.max_turns or _default_max_turns(env_id)
    # The first observation comes from the env's reset and is appended to this empty message.
    dataset = seed_dataset(seeds).map(lambda row: {"prompt": [{"role": "user", "content": ""}]})
    return GRPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tool_calling_tokenizer(tokenizer),
        callbacks=list(callbacks),
        peft_config=peft_config,
        environment_factory=trl_environment_factory(env_id, **env_kwargs),
    )


def _filter_third_party_warnings() -> None:
    import warnings

    for message, category in _THIRD_PARTY_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


def train(trainer: Any, resume_from_checkpoint: str | None = None) -> Any:
    """``trainer.train(...)`` with TRL's and transformers' own deprecation warnings silenced."""
    import warnings

    with warnings.catch_warnings():
        _filter_third_party_warnings()
        return trainer.train(resume_from_checkpoint=resume_from_checkpoint)


def grpo_body(ctx: JobContext) -> dict[str, Any]:
    """The ``grpo`` job kind: GRPO on ``ctx.spec.env`` with ``ctx.spec.model``, resumable across attempts.

    Trainer checkpoints go to ``ctx.checkpoint_dir / "trainer"`` every ``checkpoint_every`` steps
    and whenever the scheduler asks the job to yield; a later attempt resumes from the newest
    one (weights, optimizer, scheduler, RNG and data order), so the run equals an uninterrupted
    one. Outputs (``metrics.jsonl``, transcripts, ``reward_curve.png``, the final adapter or
    model) go to ``ctx.output_dir``.

    Returns:
        ``steps``, ``final_metrics`` (the last step's training and rollout numbers),
        ``heldout_accuracy_before``/``_after`` (greedy, fixed held-out seeds), ``saved`` paths,
        ``metrics_path``, ``plot``, ``resumed_from``.

    Raises:
        SpecError: invalid ``params``, or no ``env`` in the spec.
        JobPreempted, JobCancelled: the scheduler asked the job to stop (a checkpoint was saved).
    """
    from executors.errors import SpecError
    from executors.training.common import (
        JobCallback,
        RunFolder,
        checkpoint_step,
        heldout_eval,
        heldout_seeds,
        last_trainer_checkpoint,
        load_policy,
        raise_if_stopped,
        reporting,
        seed_everything,
        set_threads,
    )
    from executors.training.config import parse_params

    params = parse_params("grpo", ctx.spec.params)
    assert isinstance(params, GRPOParams)
    env_id = ctx.spec.env
    if not env_id:
        raise SpecError("a grpo job needs an `env` (e.g. env: tinker/Math-v0)")
    set_threads(params.threads)
    seed_everything(params.seed)
    policy = load_policy(ctx.spec, params)
    model, tokenizer = policy.model, policy.tokenizer
    run = RunFolder(ctx.output_dir)
    run.write_info(ctx.spec, job_id=ctx.job_id)
    trainer_dir = ctx.checkpoint_dir / "trainer"
    resume = last_trainer_checkpoint(trainer_dir)
    if resume is not None:
        run.truncate(after_step=checkpoint_step(resume))
        ctx.log(f"resuming GRPO from {resume}")
    elif run.metrics_path.exists():
        run.truncate(after_step=-1)  # an earlier attempt that saved no checkpoint: start the log afresh

    def evaluate() -> dict[str, Any]:
        result = heldout_eval(
            model,
            tokenizer,
            env_id,
            heldout_seeds(params),
            sampler=rollout.sampler(model),  # over the base model, its prefix cache emptied
            env_kwargs=params.env_kwargs,
            max_tokens=params.max_tokens,
            max_turns=params.max_turns,
            token_budget=params.token_budget,
            batch_size=params.eval_batch_size,
        )
        return {k: v for k, v in result.items() if k != "trajectories"}

    rollout = EngineRollout(env_id, tokenizer, params)
    callbacks: list[Any] = [
        JobCallback(ctx, run, params, evaluate=evaluate, transcripts=rollout.trajectories)
    ]
    report_to, report_callbacks = reporting(params, run)
    callbacks += report_callbacks
    trainer = build_grpo_trainer(
        model,
        tokenizer,
        env_id,
        params,
        output_dir=trainer_dir,
        callbacks=callbacks,
        report_to=report_to,
        rollout=rollout,
    )
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # JobCallback records every step; no dicts on stdout
    try:
        train(trainer, resume_from_checkpoint=resume)
    finally:
        rollout.close()
    raise_if_stopped(ctx)
    saved = run.save_final(model, tokenizer, merge=params.merge)
    plot = run.plot(title=f"GRPO {ctx.spec.model or 'model'} on {env_id}")
    history = run.history()
    final_step = int(trainer.state.global_step)
    final = {k: v for k, v in history.get(final_step, {}).items() if k not in ("step", "time")}
    return {
        "steps": final_step,
        "final_metrics": final,
        "heldout_accuracy_before": history.get(0, {}).get("heldout_accuracy"),
        "heldout_accuracy_after": history.get(final_step, {}).get("heldout_accuracy"),
        "saved": saved,
        "metrics_path": str(run.metrics_path),
        "plot": None if plot is None else str(plot),
        "resumed_from": resume,
    }
