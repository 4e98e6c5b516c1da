"""Self-play GRPO for the two-player text games: the ``selfplay`` job kind, TRL's ``GRPOTrainer`` fed by game rollouts.

Each training step, TRL hands :class:`SelfPlayRollout` the step's prompts (task seeds, each
repeated ``group_size`` times, as for :mod:`executors.training.grpo`). For every group an
opponent is drawn from the league mixture (:func:`pick_opponent`, deterministic in ``(seed,
step, group seed)``, so a resumed run draws the same ones):

* ``latest``: the live policy itself. Both seats are the learner and both seats' trajectories
  are training samples (a group of ``G`` completions is ``ceil(G / 2)`` games);
* ``snapshots``: a past snapshot of the learner (its LoRA adapter, saved every
  ``snapshot_every`` steps as ``snapshots/step-NNNNNN`` and loaded into a second
  :class:`~executors.sampling.HFSampler` over a frozen copy of the base model);
* ``bots``: a heuristic bot of the game (:func:`multiagent.bots.get_bot`).

Against a snapshot or a bot a group is ``G`` games with the learner's seat alternating
(member ``i`` plays seat ``i % 2``), so it learns to move first and second. Games are played
by :func:`gym_tinker.rollout.rollout_games`, token-exact for the learner's seats: the
completion holds the learner's sampled ids (``env_mask`` 1) and, between its turns, the next
observation with the opponent's move (``env_mask`` 0).

**Reward** (the GRPO reward of a learner seat): its game outcome, win 1, draw 0.5, loss 0,
where a seat wins when its total game reward beats every other seat's (the Elo score of
:class:`multiagent.selfplay.MatchResult`). A forfeit after illegal or unreadable answers is a
loss (the games give the offender ``forfeit_penalty`` and the opponent +1), and so is a seat
stopped by ``token_budget``. When the opponent never moved (the learner forfeited at once),
the sign of the learner's own reward decides. A learner seat that never moved (its opponent
forfeited first) and a game that failed after its retries become an EOS-only completion with
``env_mask`` 0 and reward ``None``: TRL leaves it out of its group's baseline and it trains
nothing (counted as ``rollout/idle_seats`` and ``rollout/dropped``).

**Snapshots** are saved by the rollout itself at the start of the step after every
``snapshot_every``-th (the weights after ``0, N, 2N, ...`` steps, ``step-000000`` being the
untrained adapter), so the pool is never empty in a LoRA run and the same after a resume.

**Evaluation** (the held-out numbers; there is no env success): before training, every
``eval_every`` steps and after the last step, the learner plays ``eval_games`` greedy games
against each of ``eval_bots`` (seats alternating) and ``eval_snapshot_games`` against each
snapshot in the pool. Logged to ``metrics.jsonl`` and ``ctx.report``: ``vs_<bot>/win_rate``,
``vs_<bot>/draw_rate``, ``vs_<bot>/loss_rate``, ``vs_<bot>/forfeit_rate``, ``elo`` (with
``elo_low``/``elo_high``, a 95% interval), and ``heldout_accuracy``: the mean score (win 1,
draw 0.5) over the bot games. Elo comes from :class:`multiagent.elo.EloRatings` over every
evaluation game so far (learner, bots, snapshots; a snapshot enters at the learner's rating,
as in :meth:`multiagent.league.League.snapshot`); the games are kept in ``league.jsonl`` and
replayed, so a resumed run rates exactly as an uninterrupted one. Ratings are relative: the
learner and the bots start at 1000.

.. warning::
    One shared policy plays every seat, also in asymmetric games such as negotiation (per-role
    LoRA adapters are not implemented). Snapshot opponents need a LoRA run; a full-parameter
    run gives the ``snapshots`` weight to the other categories. Bots read ``infos[agent]``
    through the observation text they are shown (a tap on the game), which assumes equal
    observations mean equal infos, true of every game here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from executors.training.config import OPPONENT_CATEGORIES, SelfPlayParams
from executors.training.selfplay_rollout import (
    LEARNER,
    SelfPlayRollout,
    game_name,
    outcome_score,
    pick_opponent,
    snapshot_pool,
)

if TYPE_CHECKING:
    from executors.context import JobContext

__all__ = [
    "OPPONENT_CATEGORIES",
    "SelfPlayParams",
    "SelfPlayRollout",
    "game_name",
    "outcome_score",
    "pick_opponent",
    "selfplay_body",
    "snapshot_pool",
]


# --- Elo over evaluation games ----------------------------------------------------------------


class EloLog:
    """``league.jsonl``: snapshot arrivals and evaluation games, replayed into :class:`multiagent.elo.EloRatings`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        with self.path.open("a") as fh:
            fh.writelines(json.dumps(dict(row)) + "\n" for row in rows)

    def truncate(self, after_step: int) -> None:
        rows = [r for r in self.read() if r["step"] <= after_step]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def ratings(self, members: Sequence[str]) -> Any:
        """The ratings after every logged event; ``members`` (the learner, bots) start at 1000."""
        from multiagent.elo import EloRatings

        elo = EloRatings()
        for name in members:
            elo.add(name)
        for row in self.read():
            if "snapshot" in row:
                if row["snapshot"] not in elo:  # enters at the learner's rating (League.snapshot)
                    elo.add(row["snapshot"], rating=elo.rating(LEARNER))
            else:
                elo.record(row["a"], row["b"], float(row["score"]))
        return elo


# --- the job body ---------------------------------------------------------------------------


def selfplay_body(ctx: JobContext) -> dict[str, Any]:
    """The ``selfplay`` job kind: self-play GRPO on the game ``ctx.spec.env``, resumable across attempts.

    Same runtime contract as :func:`executors.training.grpo.grpo_body`: TRL trainer checkpoints
    under ``ctx.checkpoint_dir / "trainer"`` (resumed by a later attempt), preempt and cancel at
    step boundaries, ``run.json``, ``metrics.jsonl``, transcripts, ``league.jsonl``,
    ``reward_curve.png`` and the final adapter in ``ctx.output_dir``.

    Returns:
        ``steps``, ``final_metrics``, ``eval_before``/``eval_after`` (the evaluation metrics at
        step 0 and at the last step), ``elo`` (rating after the last evaluation), ``league`` (the
        Elo table), ``saved``, ``metrics_path``, ``plot``, ``resumed_from``.

    Raises:
        SpecError: invalid params, or no game.
        JobPreempted, JobCancelled: the scheduler asked the job to stop (a checkpoint was saved).
    """

    from executors.errors import SpecError
    from executors.training.common import (
        JobCallback,
        RunFolder,
        checkpoint_step,
        last_trainer_checkpoint,
        load_policy,
        raise_if_stopped,
        seed_everything,
        set_threads,
    )
    from executors.training.config import parse_params
    from executors.training.grpo import build_grpo_trainer, train

    params = parse_params("selfplay", ctx.spec.params)
    assert isinstance(params, SelfPlayParams)
    game = params.game or ctx.spec.env
    if not game:
        raise SpecError("a selfplay job needs a game: `env: tinker/tictactoe_v0` (or params.game)")
    try:
        game = game_name(game)
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    set_threads(params.threads)
    seed_everything(params.seed)
    policy = load_policy(ctx.spec, params)
    model, tokenizer = policy.model, policy.tokenizer
    run = RunFolder(ctx.output_dir)
    elo_log = EloLog(run.root / "league.jsonl")
    trainer_dir = ctx.checkpoint_dir / "trainer"
    resume = last_trainer_checkpoint(trainer_dir)
    if resume is not None:
        run.truncate(after_step=checkpoint_step(resume))
        elo_log.truncate(after_step=checkpoint_step(resume))
        ctx.log(f"resuming self-play from {resume}")
    else:  # an earlier attempt that saved no checkpoint: start the logs afresh
        if run.metrics_path.exists():
            run.truncate(after_step=-1)
        elo_log.truncate(after_step=-1)
    try:
        rollout = SelfPlayRollout(
            game,
            tokenizer,
            params,
            run_root=run.root if policy.lora else None,
            base_model=policy.reference if policy.lora else None,
        )
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    run.write_info(ctx.spec, game=game)
    members = [LEARNER, *dict.fromkeys([*rollout.eval_bots, *rollout.bots])]
    state: dict[str, Any] = {"trainer": None}

    def evaluate() -> dict[str, Any]:
        step = int(state["trainer"].state.global_step) if state["trainer"] is not None else 0
        metrics, games = rollout.evaluate(model, step)
        known = {r["snapshot"] for r in elo_log.read() if "snapshot" in r}
        arrivals = [
            {"step": step, "snapshot": s} for s in rollout.snapshots(step, before=True) if s not in known
        ]
        elo_log.append(arrivals + [{"step": step, **g} for g in games])
        elo = elo_log.ratings(members)
        low, high = elo.interval(LEARNER)
        return {**metrics, "elo": elo.rating(LEARNER), "elo_low": low, "elo_high": high}

    callbacks: list[Any] = [
        JobCallback(ctx, run, params, evaluate=evaluate, transcripts=rollout.trajectories)
    ]
    report_to = params.integrations()
    if "tensorboard" in report_to:  # our writer, so the events land in the run folder (as grpo_body)
        from torch.utils.tensorboard import SummaryWriter
        from transformers.integrations import TensorBoardCallback

        report_to = [name for name in report_to if name != "tensorboard"]
        callbacks.append(TensorBoardCallback(SummaryWriter(log_dir=str(run.root / "tensorboard"))))
    trainer = build_grpo_trainer(
        model,
        tokenizer,
        game,
        params,
        output_dir=trainer_dir,
        callbacks=callbacks,
        report_to=report_to,
        rollout=rollout,  # type: ignore[arg-type]
    )
    state["trainer"] = trainer
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    train(trainer, resume_from_checkpoint=resume)
    raise_if_stopped(ctx)
    saved = run.save_final(model, tokenizer, merge=params.merge)
    plot = run.plot(title=f"Self-play GRPO {ctx.spec.model or 'model'} on {game}")
    history = run.history()
    final_step = int(trainer.state.global_step)
    skip = ("step", "time")
    final = {k: v for k, v in history.get(final_step, {}).items() if k not in skip}
    evals = {s: row for s, row in history.items() if "elo" in row}

    def eval_at(step: int) -> dict[str, Any]:
        row = evals.get(step, {})
        return {
            k: v
            for k, v in row.items()
            if k.startswith("vs_") or k.startswith("elo") or k == "heldout_accuracy"
        }

    elo = elo_log.ratings(members)
    return {
        "steps": final_step,
        "final_metrics": final,
        "eval_before": eval_at(0),
        "eval_after": eval_at(final_step),
        "elo": elo.rating(LEARNER),
        "elo_history": {s: row["elo"] for s, row in evals.items()},
        "league": [dataclasses.asdict(r) for r in elo.table()],
        "saved": saved,
        "metrics_path": str(run.metrics_path),
        "plot": None if plot is None else str(plot),
        "resumed_from": resume,
    }
