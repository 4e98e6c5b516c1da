"""Rollout throughput: episodes/s and generated tokens/s, batched across N envs vs one env at a time.

Run ``python bench/rollout_throughput.py`` (SmolLM2-135M-Instruct through ``HFSampler``, on CPU
unless ``--device cuda``), or ``--quick`` (the tiny random model, a few episodes) for a fast
check. Prints a table and writes ``bench/results/rollout_throughput.json`` (``--quick``:
``rollout_throughput_quick.json``).

For each env (ToolUse, Math) the same ``--episodes`` seeds are rolled out with the engine
(:func:`gym_tinker.rollout.rollout`, token-exact) over ``N`` envs for each ``N`` in
``--num-envs``. ``N = 1`` is one env at a time (batch size 1); larger ``N`` samples every
active conversation in one batch per turn. Decoding is greedy, so every run generates the same
episodes (up to float rounding from padding) and the figures compare like with like.

``HFSampler``'s prefix KV cache (on by default) is cleared before every run, so a run never
reuses an earlier run's identical episodes; ``--no-prefix-cache`` turns it off to compare.

Columns: sampled tokens, prompt tokens (the sum of every turn's prompt length; with the prefix
cache on, only the part not already cached is computed), episodes/s and generated tokens/s (sampled
tokens over wall time), the speedup over ``N = 1``, and the env's share of the rollout's wall
time (env resets and steps, including ToolUse's tools).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

import gym_tinker
from gym_tinker.policy import SamplingParams
from gym_tinker.rollout import rollout

RESULTS = Path(__file__).parent / "results" / "rollout_throughput.json"
ENVS = {"ToolUse": "tinker/ToolUse-v0", "Math": "tinker/Math-v0"}


@dataclass
class Row:
    env: str
    num_envs: int
    episodes: int
    completed: int
    turns: int
    sampled_tokens: int
    prompt_tokens: int
    seconds: float
    env_seconds: float
    policy_calls: int

    @property
    def episodes_per_s(self) -> float:
        return self.completed / self.seconds

    @property
    def tokens_per_s(self) -> float:
        return self.sampled_tokens / self.seconds

    @property
    def env_share(self) -> float:
        return self.env_seconds / self.seconds


def make_sampler(args: argparse.Namespace) -> Any:
    import torch

    from executors.sampling.hf import HFSampler

    torch.set_num_threads(args.threads)
    if args.quick:
        from executors.models.tiny import tiny_random_model

        return HFSampler(tiny_random_model(seed=0), max_batch_size=64, prefix_cache=args.prefix_cache)
    return HFSampler(args.model, device=args.device, max_batch_size=64, prefix_cache=args.prefix_cache)


def run_one(sampler: Any, env_name: str, num_envs: int, args: argparse.Namespace) -> Row:
    env_id = ENVS[env_name]
    envs = [gym.make(env_id) for _ in range(num_envs)]
    if getattr(sampler, "prefix_cache", None) is not None:
        sampler.prefix_cache.clear()  # each run starts cold: no reuse of an earlier run's episodes
    params = SamplingParams(max_tokens=args.max_tokens, temperature=0.0)
    seeds = list(range(args.episodes))
    try:
        result = rollout(envs, sampler, seeds=seeds, max_turns=args.max_turns, params=params, retries=0)
    finally:
        for env in envs:
            env.close()
    stats = result.stats
    if stats.failures:
        raise RuntimeError(f"{env_name} x{num_envs}: rollout failures: {stats.failures[:3]}")
    return Row(
        env=env_name,
        num_envs=num_envs,
        episodes=len(seeds),
        completed=stats.completed,
        turns=sum(len(t) for t in result),
        sampled_tokens=stats.sampled_tokens,
        prompt_tokens=sum(len(turn.prompt_ids or ()) for t in result for turn in t.turns),
        seconds=stats.wall_seconds,
        env_seconds=stats.env_seconds,
        policy_calls=stats.policy_calls,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny random model, few episodes")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="model reference for load_model")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--env", choices=sorted(ENVS), action="append", help="env(s) to run (default: both)")
    parser.add_argument(
        "--num-envs", type=int, nargs="+", default=None, help="batch sizes (default 1 4 8 16)"
    )
    parser.add_argument("--episodes", type=int, default=None, help="episodes per run (default 16; quick: 8)")
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="max tokens per turn (default 48; quick: 16)"
    )
    parser.add_argument(
        "--max-turns", type=int, default=3, help="turn limit per episode (ToolUse is multi-turn)"
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch CPU threads")
    parser.add_argument(
        "--no-prefix-cache",
        dest="prefix_cache",
        action="store_false",
        help="turn off HFSampler's prefix KV cache (reuse across turns)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help=f"JSON output (default {RESULTS.name}; quick: *_quick.json)"
    )
    args = parser.parse_args()
    args.num_envs = args.num_envs or ([1, 4, 8] if args.quick else [1, 4, 8, 16])
    args.episodes = args.episodes or (8 if args.quick else 16)
    args.max_tokens = args.max_tokens or (16 if args.quick else 48)
    envs = args.env or list(ENVS)
    args.out = args.out or (RESULTS.with_name(RESULTS.stem + "_quick.json") if args.quick else RESULTS)
    gym.register_envs(gym_tinker)

    began = time.perf_counter()
    sampler = make_sampler(args)
    load_seconds = time.perf_counter() - began
    model = "tiny-random" if args.quick else args.model
    print(f"model {model} on {args.device} loaded in {load_seconds:.1f} s; {args.threads} torch thread(s)")
    # Untimed warm-up: first-call costs (kernels, allocator, ToolUse's first sandbox start).
    for env_name in envs:
        run_one(sampler, env_name, 1, argparse.Namespace(**{**vars(args), "episodes": 1, "max_tokens": 4}))

    rows: list[Row] = []
    header = f"{'env':<8} {'envs':>4} {'episodes':>8} {'turns':>5} {'tokens':>6} {'prompt':>7} {'seconds':>8} {'ep/s':>7} {'tok/s':>7} {'speedup':>7} {'env time':>8}"
    print(header)
    print("-" * len(header))
    for env_name in envs:
        base: Row | None = None
        for num_envs in args.num_envs:
            row = run_one(sampler, env_name, num_envs, args)
            rows.append(row)
            base = base or row
            speedup = row.tokens_per_s / base.tokens_per_s if base.tokens_per_s else float("nan")
            print(
                f"{row.env:<8} {row.num_envs:>4} {row.completed:>8} {row.turns:>5} {row.sampled_tokens:>6} {row.prompt_tokens:>7} "
                f"{row.seconds:>8.1f} {row.episodes_per_s:>7.3f} {row.tokens_per_s:>7.1f} {speedup:>6.2f}x "
                f"{100 * row.env_share:>7.2f}%"
            )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "model": model,
        "device": args.device,
        "threads": args.threads,
        "max_tokens": args.max_tokens,
        "max_turns": args.max_turns,
        "prefix_cache": args.prefix_cache,
        "decoding": "greedy",
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "load_seconds": load_seconds,
        "rows": [
            {
                **asdict(row),
                "episodes_per_s": row.episodes_per_s,
                "tokens_per_s": row.tokens_per_s,
                "env_share": row.env_share,
            }
            for row in rows
        ],
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
