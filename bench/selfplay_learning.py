"""Does self-play make the agent better at a game? Win/draw/loss against the random bot before and after training.

Run ``python bench/selfplay_learning.py`` (SmolLM2-135M-Instruct + LoRA on tic-tac-toe, CPU), or
``--quick`` (the tiny random model, 2 steps) for a fast check of the script itself.

The run is the real ``selfplay`` job body (:func:`executors.training.selfplay.selfplay_body`,
the code a scheduler worker runs) called in this process with a
:class:`~executors.context.JobContext`. Each step plays 2 groups of 4 games; each group draws
its opponent from the league mixture (the live policy 40%, its snapshots 20%, the random bot
40%); the reward is the learner's outcome (win 1, draw 0.5, loss or forfeit 0). Before training, every
``eval_every`` steps and after the last step the learner plays ``--games`` greedy games against
the random bot (seats alternating) and 2 against each snapshot, which with the bot games feed
the learner's Elo.

Printed: a table of the evaluations (step, win/draw/loss/forfeit rate against random, Elo with
its 95% interval) and the wall time. The run folder (``bench/results/selfplay_learning/<run>/``)
keeps ``metrics.jsonl``, ``league.jsonl``, transcripts and ``reward_curve.png``; the figures go to
``bench/results/selfplay_learning.json`` (``selfplay_learning_quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "selfplay_learning.json"
RUNS = ROOT / "bench" / "results" / "selfplay_learning"

FULL: dict[str, Any] = {
    "model": "smollm2-135m-instruct",
    "adapter": {"r": 16, "alpha": 32, "dropout": 0.0},
    "params": {
        "steps": 30, "prompts_per_step": 2, "group_size": 4, "max_tokens": 16, "temperature": 0.9,
        "learning_rate": 3e-4, "eval_every": 10, "snapshot_every": 10, "checkpoint_every": 10,
        "opponents": {"latest": 0.4, "snapshots": 0.2, "bots": 0.4}, "opponent_bots": ["random"],
        "eval_bots": ["random"], "eval_games": 50, "eval_snapshot_games": 2,
    },
}  # fmt: skip

QUICK: dict[str, Any] = {
    "model": "tiny-random",
    "adapter": {"r": 8, "dropout": 0.0},
    "params": {
        **FULL["params"], "steps": 2, "prompts_per_step": 2, "group_size": 2, "max_tokens": 6,
        "learning_rate": 1e-2, "eval_every": 1, "snapshot_every": 1, "eval_games": 4,
    },
}  # fmt: skip


def run(preset: dict[str, Any], *, name: str, steps: int | None, games: int | None) -> dict[str, Any]:
    """Run the self-play job body once; return its figures."""
    from executors.context import JobContext
    from executors.spec import JobSpec
    from executors.training.selfplay import selfplay_body

    params = {**preset["params"], "report_to": "none"}
    if steps is not None:
        params["steps"] = steps
    if games is not None:
        params["eval_games"] = games
    folder = RUNS / name
    if folder.exists():
        shutil.rmtree(folder)
    spec = JobSpec(
        kind="selfplay", name=name, model=preset["model"], adapter=preset["adapter"],
        env="tinker/tictactoe_v0", params=params, output_dir=str(folder),
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix=f"selfplay-{name}-") as checkpoints:
        began = time.perf_counter()
        result = selfplay_body(JobContext(spec, 1, 1, checkpoints))
        wall = time.perf_counter() - began
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    evals = [
        {
            "step": r["step"],
            **{k: r.get(f"vs_random/{k}_rate") for k in ("win", "draw", "loss", "forfeit")},
            "elo": r["elo"],
            "elo_low": r["elo_low"],
            "elo_high": r["elo_high"],
        }
        for r in rows
        if "elo" in r
    ]
    train = [r for r in rows if r.get("rollout/reward_mean") is not None]
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    return {
        "run": name,
        "model": preset["model"],
        "game": "tictactoe_v0",
        "steps": params["steps"],
        "eval_games": params["eval_games"],
        "params": params,
        "before": evals[0] if evals else None,
        "after": evals[-1] if evals else None,
        "evaluations": evals,
        "elo_trajectory": [(e["step"], round(e["elo"], 1)) for e in evals],
        "train_reward_first5": mean([r["rollout/reward_mean"] for r in train[:5]]),
        "train_reward_last5": mean([r["rollout/reward_mean"] for r in train[-5:]]),
        "train_forfeit_first5": mean([r["rollout/forfeit_rate"] for r in train[:5]]),
        "train_forfeit_last5": mean([r["rollout/forfeit_rate"] for r in train[-5:]]),
        "league": result["league"],
        "wall_seconds": round(wall, 1),
        "seconds_per_step": round(mean([r["step_time"] for r in rows if "step_time" in r]) or 0.0, 2),
        "run_folder": str(folder.relative_to(ROOT)),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:5.1f}%"


def table(figures: dict[str, Any]) -> str:
    """The evaluations as a fixed-width text table."""
    lines = [
        f"{'step':>5}  {'win':>6}  {'draw':>6}  {'loss':>6}  {'forfeit':>7}  {'Elo':>6}  95% interval",
    ]
    for e in figures["evaluations"]:
        lines.append(
            f"{e['step']:>5}  {_pct(e['win'])}  {_pct(e['draw'])}  {_pct(e['loss'])}  {_pct(e['forfeit']):>7}  "
            f"{e['elo']:6.0f}  {e['elo_low']:.0f} .. {e['elo_high']:.0f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="Tiny random model, 2 steps (checks the script)."
    )
    parser.add_argument("--steps", type=int, default=None, help="Override the training steps.")
    parser.add_argument("--games", type=int, default=None, help="Greedy games against random per evaluation.")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads.")
    parser.add_argument("--json", type=Path, default=None, help="Where to write the figures.")
    args = parser.parse_args(argv)
    # TRL logs every None reward (a seat that never moved because its opponent forfeited first) with
    # the whole batch's columns; those seats are expected and counted in `rollout/idle_seats`.
    logging.getLogger("trl.trainer.grpo_trainer").setLevel(logging.ERROR)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    preset = QUICK if args.quick else FULL
    name = "tictactoe-quick" if args.quick else "tictactoe"
    out_path = args.json or (RESULTS.with_name("selfplay_learning_quick.json") if args.quick else RESULTS)
    print(f"== self-play GRPO on tictactoe_v0 with {preset['model']} + LoRA", flush=True)
    figures = run(preset, name=name, steps=args.steps, games=args.games)
    figures["machine"] = {"platform": platform.platform(), "cpus": os.cpu_count()}
    figures["command"] = "python bench/selfplay_learning.py" + (" --quick" if args.quick else "")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    print(
        f"greedy games against the random bot ({figures['eval_games']} per evaluation) and the learner's Elo:"
    )
    print(table(figures))
    print(
        f"training reward first5 {figures['train_reward_first5']} last5 {figures['train_reward_last5']}; "
        f"forfeit rate first5 {figures['train_forfeit_first5']} last5 {figures['train_forfeit_last5']}; "
        f"{figures['steps']} steps in {figures['wall_seconds']} s ({figures['seconds_per_step']} s/step of training)"
    )
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
