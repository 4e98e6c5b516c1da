"""SFT jobs: TRL's ``SFTTrainer`` on chat datasets or on kept rollouts (rejection sampling), loss on assistant tokens.

We tokenize ourselves and hand TRL a pre-tokenized dataset with the columns ``input_ids`` and
``assistant_masks`` (1 where the loss applies). TRL 1.16 then skips its own chat-template
tokenization and turns the mask into ``labels`` (-100 where the mask is 0). This is
token-exact where TRL's own ``assistant_only_loss`` is not available: that option needs
``{% generation %}`` markers in the chat template, which the tiny test model's and SmolLM2's
templates lack.

* Trajectories (:func:`trajectories_to_sft_dataset`): the exact ids the sampler saw and drew,
  from :func:`gym_tinker.rollout.flatten`; the mask is 1 on sampled tokens and 0 on the prompt
  and on the env's tokens. Only successful episodes are kept by default
  (:func:`executors.training.common.is_success`).
* Chat rows (:func:`messages_to_sft_dataset`): each conversation is rendered with
  :class:`executors.chat.HFChatRenderer` one message at a time, the way a rollout sees it:
  every assistant turn's content and its end-of-turn token (the EOS, so the model learns to
  stop) get mask 1; system, user and tool turns, the assistant prompt (``<|im_start|>assistant\\n``)
  and what the template writes after the end-of-turn token get 0.

The dataset half (tokenizing, keeping episodes, reading files) is :mod:`executors.training.sft_data`,
re-exported here; this module holds TRL's ``SFTConfig`` and ``SFTTrainer`` and the job body.

A job file::

    kind: sft
    model: smollm2-135m-instruct
    dataset: data/chats.jsonl        # JSONL of {"messages": [...]}, a trajectories JSONL, or a save_to_disk folder
    params: {steps: 100, batch_size: 8, learning_rate: 1e-4}

or, rejection sampling on an env: ``env: tinker/Math-v0`` with
``params: {source: rollouts, rollout_episodes: 64, keep: success}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

from executors.training.sft_data import (
    MASK_COLUMN,
    SFTDataError,
    SFTRows,
    keep_trajectories,
    load_sft_rows,
    messages_to_sft_dataset,
    tokenize_conversation,
    trajectories_to_sft_dataset,
)
from gym_tinker.trajectory import Trajectory

if TYPE_CHECKING:
    from executors.context import JobContext
    from executors.training.config import SFTParams

__all__ = [
    "MASK_COLUMN",
    "SFTDataError",
    "build_sft_trainer",
    "keep_trajectories",
    "load_sft_rows",
    "messages_to_sft_dataset",
    "sft_body",
    "sft_config",
    "tokenize_conversation",
    "trajectories_to_sft_dataset",
]


# --- the trainer ---------------------------------------------------------------------------------


def sft_config(params: SFTParams, output_dir: str | PathLike[str], *, report_to: Sequence[str] = ()) -> Any:
    """TRL's ``SFTConfig`` for ``params``: steps (or epochs), batch, optimiser, checkpoints every ``checkpoint_every``.

    Loss masking is ours (``assistant_masks``), so TRL's ``assistant_only_loss`` stays off;
    activation checkpointing is off (TRL turns it on by default) and bf16 is off on CPU.
    """
    from trl import SFTConfig

    from executors.training.common import trainer_arguments

    return SFTConfig(
        **trainer_arguments(params, output_dir),
        max_steps=-1 if params.epochs is not None else params.steps,
        num_train_epochs=params.epochs if params.epochs is not None else 1.0,
        per_device_train_batch_size=params.batch_size,
        max_length=params.max_length,
        report_to=list(report_to) or "none",
        assistant_only_loss=False,
        completion_only_loss=False,
    )


def build_sft_trainer(
    model: Any,
    tokenizer: Any,
    dataset: Any,
    params: SFTParams,
    *,
    output_dir: str | PathLike[str],
    callbacks: Sequence[Any] = (),
    report_to: Sequence[str] = (),
) -> Any:
    """TRL's ``SFTTrainer`` on a pre-tokenized ``dataset`` (``input_ids`` and ``assistant_masks``).

    ``model`` is trained as given: a peft ``PeftModel`` trains its adapter only, a plain model
    trains every parameter that requires a gradient. transformers' printing callback is removed
    (metrics reach the job through ``callbacks``, e.g. :class:`~executors.training.common.JobCallback`).

    Raises:
        SFTDataError: ``dataset`` lacks ``input_ids``.
    """
    from transformers.trainer_callback import PrinterCallback
    from trl import SFTTrainer

    columns = list(getattr(dataset, "column_names", None) or [])
    if "input_ids" not in columns:
        raise SFTDataError(
            f"Expected a pre-tokenized dataset with 'input_ids' and '{MASK_COLUMN}' columns, got {columns}; "
            "build one with messages_to_sft_dataset or trajectories_to_sft_dataset"
        )
    trainer = SFTTrainer(
        model=model,
        args=sft_config(params, output_dir, report_to=report_to),
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=list(callbacks),
    )
    trainer.remove_callback(PrinterCallback)
    return trainer


# --- the job body --------------------------------------------------------------------------------


def _sampler(model: Any, tokenizer: Any) -> Any:
    """An HFSampler over the live model; for a PeftModel, over its base model (the LoRA layers live inside).

    Through the peft wrapper, HFSampler cannot see the model's real ``forward`` signature and falls
    back to transformers' deprecated ``past_key_values`` (a FutureWarning on every forward).
    """
    from executors.training.common import make_sampler

    return make_sampler(model.get_base_model() if hasattr(model, "get_base_model") else model, tokenizer)


def _sample_kept(
    ctx: JobContext, params: SFTParams, model: Any, tokenizer: Any
) -> tuple[list[Trajectory], int]:
    """Sample ``rollout_episodes`` episodes of the job's env with the current model; keep per ``params``.

    Batches of ``eval_batch_size`` episodes are saved under ``checkpoint_dir/sft_rollouts`` as they
    finish, so a preempted or restarted job reuses them and trains on the same episodes.
    """
    import gymnasium as gym

    import gym_tinker  # noqa: F401  (registers the envs)
    from executors.training.common import sampling_mode
    from gym_tinker.policy import SamplingParams
    from gym_tinker.rollout import rollout
    from gym_tinker.trajectory import load_jsonl, save_jsonl

    if ctx.spec.env is None:
        raise SFTDataError("An sft job with source='rollouts' needs `env`, e.g. env: tinker/Math-v0")
    folder = ctx.checkpoint_dir / "sft_rollouts"
    folder.mkdir(parents=True, exist_ok=True)
    total, size = params.rollout_episodes, params.eval_batch_size
    sampler = None
    envs: list[Any] = []
    sampled: list[Trajectory] = []
    try:
        for start in range(0, total, size):
            stop = min(start + size, total)
            path = folder / f"episodes-{start:06d}-{stop:06d}.jsonl"
            if path.exists():
                sampled += load_jsonl(path)
                continue
            ctx.check_signals()
            if sampler is None:
                sampler = _sampler(model, tokenizer)
                envs = [gym.make(ctx.spec.env, **params.env_kwargs) for _ in range(min(size, total))]
            seeds = [params.seed + i for i in range(start, stop)]
            sampling = SamplingParams(  # a seed per batch: row i of each batch would share draws otherwise
                max_tokens=params.max_tokens,
                temperature=params.temperature,
                top_p=params.top_p,
                seed=params.seed + start,
            )
            with sampling_mode(model):
                result = rollout(
                    envs[: len(seeds)], sampler, seeds=seeds, params=sampling, max_turns=params.max_turns
                )
            tmp = path.with_suffix(".tmp")
            save_jsonl(tmp, result)
            tmp.replace(path)  # a batch is either complete on disk or redone
            sampled += list(result)
    finally:
        for env in envs:
            env.close()
    kept = keep_trajectories(sampled, keep=params.keep, min_reward=params.min_reward)
    return kept, len(sampled)


def sft_body(ctx: JobContext) -> dict[str, Any]:
    """The ``sft`` job: build the dataset (``spec.dataset`` or kept rollouts of ``spec.env``), train, save.

    Resumes from the newest Trainer checkpoint under ``checkpoint_dir/trainer``; a preempt or
    cancel saves a checkpoint at the next step boundary and raises ``JobPreempted``/``JobCancelled``.
    Writes ``metrics.jsonl``, ``adapter/`` (or ``model/``) and ``reward_curve.png`` (when there is
    a held-out curve) to the run folder.

    Returns:
        ``steps``, ``train_loss`` (mean over this attempt's steps), ``final_loss``, ``examples``,
        ``kept``/``sampled`` (rollouts), the saved folders, and the last held-out metrics when
        the job has an env.
    """
    from executors.training import common
    from executors.training.config import SFTParams, parse_params

    spec = ctx.spec
    params = parse_params("sft", dict(spec.params))
    assert isinstance(params, SFTParams)
    common.set_threads(params.threads)
    common.seed_everything(params.seed)
    policy = common.load_policy(spec, params)
    model, tokenizer = policy.model, policy.tokenizer
    run = common.RunFolder(ctx.output_dir)
    run.write_info(spec, job_id=ctx.job_id)
    result: dict[str, Any] = {"model": policy.reference, "lora": policy.lora}

    if params.source == "rollouts":
        kept, sampled = _sample_kept(ctx, params, model, tokenizer)
        ctx.log(
            f"rejection sampling: kept {len(kept)} of {sampled} episodes of {spec.env} (keep={params.keep})"
        )
        ctx.report(step=0, kept=len(kept), sampled=sampled, kept_fraction=len(kept) / max(sampled, 1))
        result.update(kept=len(kept), sampled=sampled)
        if not kept:
            raise SFTDataError(
                f"Rejection sampling kept 0 of {sampled} episodes of {spec.env} ("
                f"{params.rollout_episodes - sampled} failed and were dropped; keep={params.keep!r}, "
                f"min_reward={params.min_reward!r}): nothing to train on. Sample more (rollout_episodes), "
                "raise temperature, use keep='all', or start from a model that sometimes succeeds."
            )
        run.save_transcripts(0, kept)
        dataset = trajectories_to_sft_dataset(
            kept,
            keep="all",  # already filtered
            tokenizer=tokenizer,
            max_length=params.max_length,
            assistant_only_loss=params.assistant_only_loss,
        )
    else:
        if spec.dataset is None:
            raise SFTDataError(
                "An sft job with source='dataset' needs `dataset` (a JSONL file, a save_to_disk folder or a "
                "dataset name); or set params.source='rollouts' with an `env`"
            )
        rows: SFTRows = load_sft_rows(spec.dataset)
        if isinstance(rows[0], Trajectory):
            trajectories = [row for row in rows if isinstance(row, Trajectory)]
            kept_rows = keep_trajectories(trajectories, keep=params.keep, min_reward=params.min_reward)
            ctx.log(
                f"{spec.dataset}: kept {len(kept_rows)} of {len(trajectories)} trajectories (keep={params.keep})"
            )
            result.update(kept=len(kept_rows), sampled=len(trajectories))
            dataset = trajectories_to_sft_dataset(
                trajectories,
                keep=params.keep,
                min_reward=params.min_reward,
                tokenizer=tokenizer,
                max_length=params.max_length,
                assistant_only_loss=params.assistant_only_loss,
            )
        else:
            dataset = messages_to_sft_dataset(
                [row for row in rows if isinstance(row, dict)],
                tokenizer,
                params.max_length,
                assistant_only_loss=params.assistant_only_loss,
            )
    result["examples"] = len(dataset)
    ctx.log(
        f"training on {len(dataset)} sequences, {sum(sum(m) for m in dataset[MASK_COLUMN])} trained tokens"
    )

    evaluate = None
    if spec.env is not None and params.eval_episodes > 0:
        env_id = spec.env
        eval_sampler = _sampler(model, tokenizer)

        def evaluate() -> dict[str, Any]:
            out = common.heldout_eval(
                model,
                tokenizer,
                env_id,
                common.heldout_seeds(params),
                env_kwargs=params.env_kwargs,
                max_tokens=params.max_tokens,
                max_turns=params.max_turns,
                batch_size=params.eval_batch_size,
                sampler=eval_sampler,
            )
            out.pop("trajectories", None)
            return out

    callback = common.JobCallback(ctx, run, params, evaluate=evaluate)
    report_to, report_callbacks = common.reporting(params, run)
    trainer_dir = ctx.checkpoint_dir / "trainer"
    trainer = build_sft_trainer(
        model,
        tokenizer,
        dataset,
        params,
        output_dir=trainer_dir,
        callbacks=[callback, *report_callbacks],
        report_to=report_to,
    )
    resume = common.last_trainer_checkpoint(trainer_dir)
    if resume is not None:
        step = common.checkpoint_step(resume)
        run.truncate(after_step=step)
        ctx.log(f"resuming from {resume} (step {step}, attempt {ctx.attempt})")
    output = trainer.train(resume_from_checkpoint=resume)
    common.raise_if_stopped(ctx)

    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    result.update(
        steps=trainer.state.global_step,
        train_loss=float(output.training_loss),
        final_loss=float(losses[-1]) if losses else None,
        saved=run.save_final(model, tokenizer, merge=params.merge),
    )
    plot = run.plot(title=f"sft {policy.reference}")
    result["plot"] = None if plot is None else str(plot)
    if callback.evaluations:
        result.update(callback.evaluations[max(callback.evaluations)])
    return result
