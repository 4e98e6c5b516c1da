"""GRPO training overhead: seconds per step and peak memory, our runtime against plain TRL.

Run ``python bench/train_overhead.py`` (SmolLM2-135M-Instruct on CPU, 2 torch threads, 1 warm-up
step then 3 timed steps of 2 prompts x 8 generations x 48 tokens), or
``python bench/train_overhead.py --quick`` (the tiny random model, 1 timed step) for a smoke
check. Prints a table and writes ``bench/results/train_overhead.json`` (``--quick``:
``train_overhead_quick.json``; ``--json PATH`` overrides).

Two runtimes train the same model on the same task, ``tinker/Math-v0`` (``difficulty="easy"``,
task seeds 0, 1, ...), with the same ``GRPOConfig`` (:func:`executors.training.grpo.grpo_config`):

* ``ours``: TRL's ``GRPOTrainer`` fed by our batched rollout engine through ``rollout_func``
  (:func:`executors.training.grpo.build_grpo_trainer`); the reward is the env's.
* ``trl``: TRL's ``GRPOTrainer`` generating by itself (transformers ``generate``), on a dataset
  of the same prompts (the env's system prompt and first observation for each seed) with a
  reward function that scores answers as the env does
  (:func:`gym_tinker.answers.score_answer`), and ``max_completion_length`` = ``--max-tokens``.

Each configuration (runtime x adapter) runs in its own subprocess, so its peak RSS
(``ru_maxrss``) is its own. LoRA configurations run 1 warm-up step plus ``--steps`` timed steps;
full-parameter ones run the warm-up step only (``--full-steps`` adds timed ones), since they are
there for memory. A step's time is the wall time between consecutive ``on_step_end`` callbacks
(rollout or generation, log-probs, backward, optimizer step, logging). Memory is the peak RSS
over model load plus the first step, and its increase over the RSS right after the model load.

Columns: timed steps; mean seconds per timed step and ours over TRL; seconds per timed step
spent generating (TRL's ``_generate``: its ``generate`` call, or our rollout with its env
steps); the first (warm-up) step's seconds; mean completion length in tokens; RSS after the
model load, peak RSS over load plus the first step, the peak's increase over the load RSS, and
LoRA's peak over full-parameter's (same runtime).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "train_overhead.json"
ENV_ID = "tinker/Math-v0"
ENV_KWARGS: dict[str, Any] = {"difficulty": "easy"}
RUNTIMES = ("ours", "trl")
ADAPTERS = ("lora", "full")
_RESULT_MARK = "TRAIN_OVERHEAD_RESULT "
_GB = 1024**3


# --- measurements inside a worker ----------------------------------------------------------------


def _peak_rss() -> int:
    """Peak RSS of this process so far, in bytes (Linux reports ``ru_maxrss`` in KiB, macOS in bytes)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _current_rss() -> int:
    """Current RSS in bytes (``/proc/self/statm``; the peak where that file does not exist)."""
    try:
        resident = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return _peak_rss()
    return resident * os.sysconf("SC_PAGE_SIZE")


def _trl_dataset(seeds: list[int]) -> Any:
    """Plain TRL's dataset: the env's conversation at reset for each seed, and the answer to score."""
    import gymnasium as gym
    from datasets import Dataset

    import gym_tinker  # noqa: F401  (registers the envs)

    env = gym.make(ENV_ID, **ENV_KWARGS)
    prompts, answers = [], []
    try:
        for seed in seeds:
            observation, info = env.reset(seed=seed)
            messages = []
            if info.get("system_prompt"):
                messages.append({"role": "system", "content": str(info["system_prompt"])})
            messages.append({"role": "user", "content": str(observation)})
            prompts.append(messages)
            answers.append(str(env.unwrapped.answer))  # type: ignore[attr-defined]
    finally:
        env.close()
    return Dataset.from_dict({"prompt": prompts, "answer": answers})


def math_answer_reward(
    prompts: list[Any], completions: list[Any], answer: list[str], **kwargs: Any
) -> list[float | None]:
    """Plain TRL's reward: 1.0 for a right answer, scored like ``tinker/Math-v0`` (lenient extraction)."""
    from gym_tinker.answers import score_answer

    texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
    return [score_answer(text, expected) for text, expected in zip(texts, answer, strict=True)]


def _step_timer() -> Any:
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):  # type: ignore[misc]
        """Wall time and peak RSS at the end of every optimizer step."""

        def __init__(self) -> None:
            self.began = 0.0
            self.ends: list[float] = []
            self.peaks: list[int] = []

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.began = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.ends.append(time.perf_counter())
            self.peaks.append(_peak_rss())

        def step_seconds(self) -> list[float]:
            marks = [self.began, *self.ends]
            return [b - a for a, b in itertools.pairwise(marks)]

    return StepTimer()


def _time_generation(trainer: Any) -> list[float]:
    """Time each call of the trainer's ``_generate`` (TRL's generation, or its call of ``rollout_func``).

    Returns the list the times are appended to; it stays empty where TRL has no such method.
    """
    seconds: list[float] = []
    generate = getattr(trainer, "_generate", None)
    if generate is None:
        return seconds

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return generate(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - began)

    trainer._generate = timed
    return seconds


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """Train one configuration (runtime x adapter) for ``config["total_steps"]`` steps; return its figures."""
    import warnings

    import torch

    from executors.spec import JobSpec
    from executors.training.common import load_policy, seed_everything
    from executors.training.config import GRPOParams

    torch.set_num_threads(config["threads"])
    warnings.filterwarnings("ignore")  # third-party deprecation chatter; a benchmark reports numbers
    seed_everything(0)
    rss_start = _current_rss()
    began = time.perf_counter()
    full = config["adapter"] == "full"
    params = GRPOParams(
        steps=config["total_steps"],
        prompts_per_step=config["prompts"],
        group_size=config["generations"],
        max_tokens=config["max_tokens"],
        max_turns=1,
        env_kwargs=dict(ENV_KWARGS),
        learning_rate=1e-5 if full else 1e-4,
        checkpoint_every=10**6,  # no checkpoint inside the timed steps
        eval_episodes=0,
        report_to="none",
        threads=config["threads"],
        seed=0,
    )
    policy = load_policy(
        JobSpec(kind="grpo", model=config["model"], adapter="full" if full else None), params
    )
    load_seconds = time.perf_counter() - began
    rss_after_load = _current_rss()
    peak_after_load = _peak_rss()
    timer = _step_timer()
    seeds = list(range(params.seed, params.seed + params.steps * params.prompts_per_step))
    rollout = None
    with tempfile.TemporaryDirectory(prefix="train-overhead-") as output_dir:
        if config["runtime"] == "ours":
            from executors.training.grpo import EngineRollout, build_grpo_trainer

            rollout = EngineRollout(ENV_ID, policy.tokenizer, params)
            trainer = build_grpo_trainer(
                policy.model,
                policy.tokenizer,
                ENV_ID,
                params,
                output_dir=output_dir,
                callbacks=[timer],
                rollout=rollout,
            )
        else:
            from trl import GRPOTrainer

            from executors.training.grpo import grpo_config

            # The same config as ours, except that TRL generates up to max_tokens itself. Set
            # after construction: __post_init__ derives fields that a dataclasses.replace rejects.
            args = grpo_config(params, output_dir, env_id=ENV_ID)
            args.max_completion_length = params.max_tokens
            trainer = GRPOTrainer(
                model=policy.model,
                reward_funcs=[math_answer_reward],
                args=args,
                train_dataset=_trl_dataset(seeds),
                processing_class=policy.tokenizer,
                callbacks=[timer],
            )
        generation_seconds = _time_generation(trainer)
        trainer.train()
    if rollout is not None:
        rollout.close()
    seconds = timer.step_seconds()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    timed = seconds[config["warmup_steps"] :]
    return {
        **config,
        "trainable_parameters": policy.trainable_parameters(),
        "load_seconds": load_seconds,
        "step_seconds": seconds,
        "first_step_seconds": seconds[0] if seconds else None,
        "seconds_per_step": statistics.mean(timed) if timed else None,
        "completion_mean_length": [entry.get("completions/mean_length") for entry in logs],
        "reward_mean": [entry.get("reward") for entry in logs],
        "generation_seconds": generation_seconds,
        "generation_seconds_per_step": statistics.mean(generation_seconds[config["warmup_steps"] :])
        if generation_seconds[config["warmup_steps"] :]
        else None,
        "rollout_seconds": [h["rollout_seconds"] for h in rollout.history] if rollout else None,
        "rss_start_bytes": rss_start,
        "rss_after_load_bytes": rss_after_load,
        "peak_rss_after_load_bytes": peak_after_load,
        "peak_rss_first_step_bytes": timer.peaks[0] if timer.peaks else _peak_rss(),
        "peak_rss_end_bytes": _peak_rss(),
    }


# --- the parent: one subprocess per configuration ------------------------------------------------


def spawn(config: dict[str, Any], verbose: bool) -> dict[str, Any]:
    """Run :func:`run_config` in a fresh interpreter and return its result (errors carry its output)."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(config["threads"]),
        "TOKENIZERS_PARALLELISM": "false",
    }
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(config)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if verbose:
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
    results = [line for line in done.stdout.splitlines() if line.startswith(_RESULT_MARK)]
    if done.returncode != 0 or not results:
        tail = (done.stdout + done.stderr)[-4000:]
        raise RuntimeError(
            f"{config['runtime']}/{config['adapter']} failed (exit {done.returncode}):\n{tail}"
        )
    return dict(json.loads(results[-1][len(_RESULT_MARK) :]))


def _gb(value: float | None) -> str:
    return "-" if value is None else f"{value / _GB:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3f}x" if a is not None and b else "-"


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The comparisons: s/step ours over TRL (per adapter) and peak RSS LoRA over full (per runtime)."""
    by = {(r["runtime"], r["adapter"]): r for r in rows}
    summary: dict[str, Any] = {}
    for adapter in ADAPTERS:
        ours, trl = by.get(("ours", adapter)), by.get(("trl", adapter))
        if ours and trl and ours["seconds_per_step"] and trl["seconds_per_step"]:
            summary[f"{adapter}_step_ratio_ours_over_trl"] = (
                ours["seconds_per_step"] / trl["seconds_per_step"]
            )
        if ours and trl:
            summary[f"{adapter}_first_step_ratio_ours_over_trl"] = (
                ours["first_step_seconds"] / trl["first_step_seconds"]
            )
    for runtime in RUNTIMES:
        lora, full = by.get((runtime, "lora")), by.get((runtime, "full"))
        if lora and full:
            summary[f"{runtime}_peak_rss_ratio_lora_over_full"] = (
                lora["peak_rss_first_step_bytes"] / full["peak_rss_first_step_bytes"]
            )
            lora_up = lora["peak_rss_first_step_bytes"] - lora["rss_after_load_bytes"]
            full_up = full["peak_rss_first_step_bytes"] - full["rss_after_load_bytes"]
            summary[f"{runtime}_rss_increase_ratio_lora_over_full"] = lora_up / full_up if full_up else None
    return summary


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    by = {(r["runtime"], r["adapter"]): r for r in rows}
    table = Table(title=title)
    for name in (
        "runtime",
        "adapter",
        "steps",
        "s/step",
        "ours/TRL",
        "gen s/step",
        "1st step s",
        "tok/compl",
        "RSS load GB",
        "peak GB",
        "+GB over load",
        "peak LoRA/full",
    ):
        table.add_column(name, justify="left" if name in ("runtime", "adapter") else "right")
    for row in rows:
        other = by.get(("trl" if row["runtime"] == "ours" else "ours", row["adapter"]))
        trl_row = by.get(("trl", row["adapter"]))
        lora, full = by.get((row["runtime"], "lora")), by.get((row["runtime"], "full"))
        lengths = [x for x in row["completion_mean_length"] if x is not None]
        table.add_row(
            row["runtime"],
            row["adapter"],
            str(len(row["step_seconds"]) - row["warmup_steps"]),
            "-" if row["seconds_per_step"] is None else f"{row['seconds_per_step']:.2f}",
            _ratio(row["seconds_per_step"], trl_row["seconds_per_step"] if trl_row else None)
            if row["runtime"] == "ours" and other
            else "",
            "-"
            if row.get("generation_seconds_per_step") is None
            else f"{row['generation_seconds_per_step']:.2f}",
            f"{row['first_step_seconds']:.2f}",
            f"{statistics.mean(lengths):.1f}" if lengths else "-",
            _gb(row["rss_after_load_bytes"]),
            _gb(row["peak_rss_first_step_bytes"]),
            _gb(row["peak_rss_first_step_bytes"] - row["rss_after_load_bytes"]),
            _ratio(lora["peak_rss_first_step_bytes"], full["peak_rss_first_step_bytes"])
            if lora and full and row["adapter"] == "lora"
            else "",
        )
    # Piped output gets rich's 80 columns, which squeezes this table; give it room.
    Console(width=None if sys.stdout.isatty() else 140).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny random model, 1 timed step (smoke run)")
    parser.add_argument("--model", default=None, help="model reference (default smollm2-135m-instruct)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps after 1 warm-up (default 3)")
    parser.add_argument("--full-steps", type=int, default=0, help="timed steps of full-parameter runs")
    parser.add_argument("--prompts", type=int, default=2, help="tasks per step (GRPO groups)")
    parser.add_argument("--generations", type=int, default=8, help="completions per task (group size)")
    parser.add_argument("--max-tokens", type=int, default=48, help="most tokens per completion")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--runtime", choices=RUNTIMES, action="append", help="runtime(s) (default both)")
    parser.add_argument("--adapter", choices=ADAPTERS, action="append", help="adapter(s) (default both)")
    parser.add_argument("--verbose", action="store_true", help="show the workers' own output")
    parser.add_argument(
        "--json", type=Path, default=None, help=f"JSON output (default {RESULTS}; quick: *_quick.json)"
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        result = run_config(json.loads(args.worker))
        print(_RESULT_MARK + json.dumps(result), flush=True)
        return
    model = args.model or ("tiny-random" if args.quick else "smollm2-135m-instruct")
    steps = args.steps if args.steps is not None else (1 if args.quick else 3)
    if steps < 0 or args.full_steps < 0:
        parser.error(f"--steps and --full-steps must be >= 0, got {steps} and {args.full_steps}")
    out = args.json or (RESULTS.with_name(RESULTS.stem + "_quick.json") if args.quick else RESULTS)
    runtimes = args.runtime or list(RUNTIMES)
    adapters = args.adapter or list(ADAPTERS)

    rows: list[dict[str, Any]] = []
    for adapter in adapters:
        for runtime in runtimes:
            timed = steps if adapter == "lora" else args.full_steps
            config = {
                "runtime": runtime,
                "adapter": adapter,
                "model": model,
                "prompts": args.prompts,
                "generations": args.generations,
                "max_tokens": args.max_tokens,
                "threads": args.threads,
                "warmup_steps": 1,
                "total_steps": 1 + timed,
            }
            began = time.perf_counter()
            row = spawn(config, args.verbose)
            row["wall_seconds"] = time.perf_counter() - began
            rows.append(row)
            per_step = "-" if row["seconds_per_step"] is None else f"{row['seconds_per_step']:.2f}"
            print(
                f"{runtime}/{adapter}: {per_step} s/step over {timed} timed step(s), first step "
                f"{row['first_step_seconds']:.2f} s, peak {_gb(row['peak_rss_first_step_bytes'])} GB "
                f"({row['wall_seconds']:.0f} s in all)",
                flush=True,
            )

    title = (
        f"GRPO on {ENV_ID} (easy), {model}, {args.prompts} prompts x {args.generations} generations x "
        f"{args.max_tokens} tokens, {args.threads} thread(s)"
    )
    print_table(rows, title)
    summary = summarize(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "command": " ".join(["python", "bench/train_overhead.py", *sys.argv[1:]]),
        "model": model,
        "env": ENV_ID,
        "env_kwargs": ENV_KWARGS,
        "prompts": args.prompts,
        "generations": args.generations,
        "max_tokens": args.max_tokens,
        "threads": args.threads,
        "timed_steps": steps,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "summary": summary,
        "rows": rows,
    }
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
