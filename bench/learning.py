"""Does the agent get better? Greedy held-out accuracy before, during and after GRPO, PPO and SFT training.

Run ``python bench/learning.py --run grpo-math`` (SmolLM2-135M-Instruct + LoRA on CPU; one
preset per ``--run``, several allowed; ``--run all`` for every preset), or ``--quick`` (the tiny
random model on a toy env, a few steps) for a fast check of the script itself.

Each run is the real job body (``grpo``, ``ppo`` or ``sft``, the same code a scheduler worker
runs) called in this process with a :class:`~executors.context.JobContext`. The held-out set is
fixed: ``--heldout`` seeds from 1,000,000 (training seeds start at 0), evaluated greedily before
training, every ``eval_every`` steps and after the last step. Printed per run: held-out accuracy
before, after, its lowest value during training, the gain, training reward first/last 5 steps,
wall time. Each run folder (``bench/results/learning/<run>/``) keeps ``metrics.jsonl``,
transcripts and ``reward_curve.png``; the table goes to ``bench/results/learning.json``.

Presets (``--steps`` and ``--heldout`` override theirs):

* ``grpo-math``: GRPO on ``tinker/Math-v0`` (easy), 4 tasks x 8 rollouts per step, 64 tokens.
* ``grpo-tooluse``: GRPO on ``tinker/ToolUse-v0`` (easy), 2 tasks x 4 rollouts, up to 4 turns.
* ``sft-tooluse``: SFT on 64 oracle demonstrations of ``tinker/ToolUse-v0`` (easy), merged model saved.
* ``grpo-tooluse-sft``: GRPO on ToolUse (easy) from ``sft-tooluse``'s merged model (run that first).
* ``ppo-tooluse-sft``: PPO on ToolUse (easy) from the same start, 8 episodes per step.
* ``ppo-math``: actor-critic PPO on Math (easy), 16 episodes per step.
* ``sft-math``: rejection sampling: 128 sampled episodes, the correct ones kept, SFT on them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "learning.json"
RUNS = ROOT / "bench" / "results" / "learning"

SMOLLM2_LORA = {"r": 16, "alpha": 32, "dropout": 0.0}
MATH_EASY = {"env": "tinker/Math-v0", "env_kwargs": {"difficulty": "easy"}}
TOOLUSE_EASY = {"env": "tinker/ToolUse-v0", "env_kwargs": {"difficulty": "easy"}}
COMMON = {"report_to": "none", "checkpoint_every": 10, "threads": None}

PRESETS: dict[str, dict[str, Any]] = {
    "grpo-math": {
        "kind": "grpo",
        **MATH_EASY,
        "params": {
            "steps": 30, "prompts_per_step": 4, "group_size": 8, "max_tokens": 64, "temperature": 0.8,
            "learning_rate": 3e-4, "eval_every": 10,
        },
    },
    "grpo-tooluse": {
        "kind": "grpo",
        "env": TOOLUSE_EASY["env"],
        # From a 0% greedy baseline there is nothing for group advantages to reinforce: the env's
        # bounded shaping (0.05 per new successful tool call, at most 0.1 an episode) gives a signal.
        "env_kwargs": {**TOOLUSE_EASY["env_kwargs"], "tool_call_bonus": 0.05},
        "params": {
            "steps": 12, "prompts_per_step": 2, "group_size": 4, "loss_batch_groups": 1, "max_tokens": 96, "max_turns": 4,
            "temperature": 0.8, "learning_rate": 3e-4, "eval_every": 0, "gradient_checkpointing": True,
        },
    },
    "sft-tooluse": {
        # Behaviour cloning from the env's oracle: 64 demonstrations (training seeds 0-63; the
        # held-out seeds start at 1,000,000), rendered as the rollout renders the conversation.
        "kind": "sft",
        **TOOLUSE_EASY,
        "demos": 64,
        "params": {
            "source": "dataset", "steps": 24, "batch_size": 4, "max_length": 2048, "learning_rate": 2e-4,
            "max_tokens": 96, "max_turns": 4, "eval_every": 0, "merge": True,
        },
    },
    "grpo-tooluse-sft": {
        # GRPO from the SFT run's merged model (run sft-tooluse first), with a fresh LoRA.
        "kind": "grpo",
        "env": TOOLUSE_EASY["env"],
        "env_kwargs": {**TOOLUSE_EASY["env_kwargs"], "tool_call_bonus": 0.05},
        "model_from": "sft-tooluse",
        "params": {
            "steps": 8, "prompts_per_step": 2, "group_size": 4, "loss_batch_groups": 1, "max_tokens": 96, "max_turns": 4,
            "temperature": 0.8, "learning_rate": 1e-4, "eval_every": 0, "gradient_checkpointing": True,
        },
    },
    "ppo-tooluse-sft": {
        # PPO from the same start as grpo-tooluse-sft (run sft-tooluse first), 8 episodes per step.
        "kind": "ppo",
        "env": TOOLUSE_EASY["env"],
        "env_kwargs": {**TOOLUSE_EASY["env_kwargs"], "tool_call_bonus": 0.05},
        "model_from": "sft-tooluse",
        "params": {
            "steps": 8, "episodes_per_step": 8, "max_tokens": 96, "max_turns": 4, "temperature": 0.8,
            "learning_rate": 1e-4, "ppo_epochs": 2, "minibatch_size": 4, "kl_coef": 0.02, "vf_coef": 0.1,
            "eval_every": 0, "gradient_checkpointing": True,
        },
    },
    "ppo-math": {
        "kind": "ppo",
        **MATH_EASY,
        "params": {
            "steps": 30, "episodes_per_step": 16, "max_tokens": 64, "temperature": 0.8, "learning_rate": 3e-4,
            "ppo_epochs": 2, "minibatch_size": 8, "kl_coef": 0.02, "vf_coef": 0.1, "eval_every": 10,
        },
    },
    "sft-math": {
        "kind": "sft",
        **MATH_EASY,
        "params": {
            "source": "rollouts", "rollout_episodes": 128, "steps": 20, "batch_size": 8, "max_tokens": 64,
            "temperature": 0.8, "learning_rate": 3e-4, "eval_every": 10,
        },
    },
}  # fmt: skip

QUICK: dict[str, dict[str, Any]] = {
    name: {
        "kind": preset["kind"],
        "env": "tests.executors.training.toy_env:toy/ContainsLetter-v0",
        "params": {
            "steps": 4, "max_tokens": 4, "learning_rate": 1e-2, "eval_every": 2,
            **({"prompts_per_step": 2, "group_size": 4} if preset["kind"] == "grpo" else {}),
            **({"episodes_per_step": 8} if preset["kind"] == "ppo" else {}),
            **({"source": "rollouts", "rollout_episodes": 16, "keep": "all"} if preset["kind"] == "sft" else {}),
        },
    }
    for name, preset in PRESETS.items()
}  # fmt: skip


def run_one(
    name: str,
    preset: dict[str, Any],
    *,
    model: str,
    heldout: int,
    steps: int | None,
    runs: Path = RUNS,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one preset's job body in this process; return its figures."""
    from executors.context import JobContext
    from executors.kinds import resolve_body
    from executors.spec import JobSpec

    params = {
        **COMMON,
        **preset["params"],
        "env_kwargs": preset.get("env_kwargs", {}),
        "eval_episodes": heldout,
    }
    if steps is not None:
        params["steps"] = steps
    params.update(overrides or {})
    folder = runs / name
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    dataset = None
    if preset.get("demos"):
        from gym_tinker.oracles import oracle_trajectories
        from gym_tinker.trajectory import save_jsonl

        dataset = runs / f"{name}-demos.jsonl"
        dataset.parent.mkdir(parents=True, exist_ok=True)
        save_jsonl(
            dataset,
            oracle_trajectories(preset["env"], range(preset["demos"]), **preset.get("env_kwargs", {})),
        )
    if preset.get("model_from"):
        model = str(runs / preset["model_from"] / "merged")
        if not Path(model).is_dir():
            raise SystemExit(f"{name} starts from {model}: run --run {preset['model_from']} first")
    spec = JobSpec(
        kind=preset["kind"], name=name, model=model, dataset=None if dataset is None else str(dataset),
        adapter=SMOLLM2_LORA if model != "tiny-random" else {"r": 8, "dropout": 0.0},
        env=preset["env"], params=params, output_dir=str(folder),
    )  # fmt: skip
    body = resolve_body(f"executors.training.{preset['kind']}:{preset['kind']}_body")
    with tempfile.TemporaryDirectory(prefix=f"learning-{name}-") as checkpoints:
        ctx = JobContext(spec, 1, 1, checkpoints)
        began = time.perf_counter()
        result = body(ctx)
        wall = time.perf_counter() - began
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    heldout_rows = [(r["step"], r["heldout_accuracy"]) for r in rows if r.get("heldout_accuracy") is not None]
    rewards = [r[k] for r in rows for k in ("reward", "reward_mean", "score_mean") if r.get(k) is not None][
        :10_000
    ]
    before = heldout_rows[0][1] if heldout_rows else None
    after = heldout_rows[-1][1] if heldout_rows else None
    return {
        "run": name,
        "kind": preset["kind"],
        "env": preset["env"],
        "model": model,
        "steps": params["steps"],
        "heldout_episodes": heldout,
        "heldout_before": before,
        "heldout_after": after,
        "heldout_min": min(a for _, a in heldout_rows) if heldout_rows else None,
        "heldout_curve": heldout_rows,
        "gain_points": None if before is None or after is None else round(100 * (after - before), 1),
        "reward_first5": sum(rewards[:5]) / len(rewards[:5]) if rewards else None,
        "reward_last5": sum(rewards[-5:]) / len(rewards[-5:]) if rewards else None,
        "wall_seconds": round(wall, 1),
        "params_overridden": overrides or {},
        # ru_maxrss: the process's peak resident set (KiB on Linux) so far, this run included.
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2, 2),
        "run_folder": str(folder.relative_to(ROOT)),
        "result": {k: v for k, v in result.items() if k not in ("final_metrics",)},
    }


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", choices=[*PRESETS, "all"], help="Preset(s) to run.")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--heldout", type=int, default=100, help="Held-out seeds (greedy).")
    parser.add_argument("--steps", type=int, default=None, help="Override the presets' steps.")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads.")
    parser.add_argument("--quick", action="store_true", help="Tiny random model on a toy env, a few steps.")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE",
        help="Override a preset param (YAML value), e.g. --param gradient_checkpointing=true.",
    )  # fmt: skip
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--param expects KEY=VALUE, got {item!r}")
        overrides[key] = yaml.safe_load(value)
    names = args.run or ["grpo-math"]
    if "all" in names:
        names = list(PRESETS)
    presets = QUICK if args.quick else PRESETS
    model = "tiny-random" if args.quick else args.model
    heldout = 16 if args.quick else args.heldout
    if args.quick:
        sys.path.insert(0, str(ROOT))  # the toy env lives in tests/
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    out_path = args.json or (RESULTS.with_name("learning_quick.json") if args.quick else RESULTS)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out_path.read_text()) if out_path.exists() else {"runs": {}}
    for name in names:
        print(f"== {name} ({presets[name]['kind']} on {presets[name]['env']}, {model})", flush=True)
        runs = RUNS.with_name("learning_quick") if args.quick else RUNS
        figures = run_one(
            name,
            presets[name],
            model=model,
            heldout=heldout,
            steps=args.steps,
            runs=runs,
            overrides=overrides,
        )
        previous["runs"][name] = figures
        previous["machine"] = {"platform": platform.platform(), "cpus": os.cpu_count()}
        out_path.write_text(json.dumps(previous, indent=2, default=str))
        print(
            f"   held-out accuracy {_fmt(figures['heldout_before'])} -> {_fmt(figures['heldout_after'])} "
            f"(min {_fmt(figures['heldout_min'])}, gain {figures['gain_points']} points); "
            f"reward first5 {_fmt(figures['reward_first5'])} last5 {_fmt(figures['reward_last5'])}; "
            f"{figures['wall_seconds']} s; peak RSS {figures['peak_rss_gb']} GB; curve {figures['heldout_curve']}",
            flush=True,
        )
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
