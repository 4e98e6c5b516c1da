"""Rejection sampling by hand: sample episodes, keep the successful ones, save them, fine-tune on them (SFT).

Three steps on one embedded cluster (or ``--address``):

1. a ``sample`` job runs the model on ``tinker/Math-v0`` (temperature 1) and writes every
   episode to ``trajectories.jsonl``, token ids and log-probs included;
2. this script keeps the successful episodes (``keep_trajectories``: the env said ``correct``)
   and saves them with :func:`gym_tinker.trajectory.save_jsonl`; filter however you like here
   (by reward, by length, by hand);
3. an ``sft`` job trains a LoRA adapter on that file (``dataset:`` the path, ``params.source:
   dataset``), with the loss on the model's own tokens only.

The ``sft`` kind can also do 1-3 itself (``params.source: rollouts``; see
``examples/configs/sft_rejection_math.yaml``); doing it by hand lets you see and edit the data.

Run::

    python examples/sft_kept_trajectories.py                 # SmolLM2-135M-Instruct, 64 episodes
    python examples/sft_kept_trajectories.py --quick         # tiny random model, seconds (the test)

With ``--quick`` the tiny random model almost never solves a problem, so it keeps every episode
(``keep=all``) to have something to train on; the real run keeps only the successes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

import executors
from executors.training.sft_data import keep_trajectories
from gym_tinker.trajectory import load_jsonl, save_jsonl


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--keep", default="success", choices=["success", "all"])
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a new temp folder)")
    parser.add_argument("--address", default=os.environ.get("GYM_TINKER_ADDRESS"), help="Dask scheduler")
    parser.add_argument("--quick", action="store_true", help="tiny random model, keep=all (for the test)")
    args = parser.parse_args(argv)
    max_tokens, steps = 96, 20
    if args.quick:  # the tiny random model almost never succeeds: keep every episode to have data
        args.model, args.episodes, args.keep, max_tokens, steps = "tiny-random", 4, "all", 8, 2
    out = (args.out or Path(tempfile.mkdtemp(prefix="sft-kept-"))).resolve()  # the worker may run elsewhere

    if args.address:
        client = executors.connect(args.address)
    else:
        client = executors.connect(n_workers=1, threads_per_worker=1)
    with client:
        # 1. Sample.
        sample = client.submit(
            {
                "kind": "sample",
                "model": args.model,
                "env": "tinker/Math-v0",
                "output_dir": str(out / "samples"),
                "params": {
                    "episodes": args.episodes,
                    "max_tokens": max_tokens,
                    "env_kwargs": {"difficulty": "easy"},
                },
            }
        )
        sampled = load_jsonl(sample.result()["trajectories"])

        # 2. Keep and save.
        kept = keep_trajectories(sampled, keep=args.keep)
        dataset = out / "kept.jsonl"
        save_jsonl(dataset, kept)
        successes = len(keep_trajectories(sampled, keep="success"))
        print(
            f"sampled {len(sampled)} episodes, {successes} successful; kept {len(kept)} (keep={args.keep}) in {dataset}"
        )
        if not kept:
            raise SystemExit("nothing kept: sample more episodes, or use --keep all")

        # 3. Fine-tune on the kept episodes.
        params: dict[str, Any] = {"source": "dataset", "keep": "all", "steps": steps, "batch_size": 4}
        params.update(learning_rate=3e-4, eval_episodes=0)
        if args.quick:
            params.update(batch_size=2, report_to="none", threads=1)
        sft = client.submit(
            {
                "kind": "sft",
                "model": args.model,
                "adapter": {"r": 16, "alpha": 32, "dropout": 0.0},
                "dataset": str(dataset),
                "output_dir": str(out / "sft"),
                "params": params,
            }
        )
        result = sft.result()
    print(
        f"sft: {result['examples']} sequences, {result['steps']} steps, mean loss {result['train_loss']:.3f}, "
        f"last {result['final_loss']:.3f}; adapter in {out / 'sft' / 'adapter'}"
    )
    return result


if __name__ == "__main__":
    main()
