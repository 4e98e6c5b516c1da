"""GRPO with LoRA on ``tinker/Math-v0`` through the scheduler: submit a ``grpo`` job, follow its metrics live.

What ``gym-tinker train examples/configs/grpo_math.yaml`` does, in Python: start an embedded
Dask cluster with the gym-tinker scheduler (``executors.connect()``; pass ``--address`` to use a
running one), submit the job spec, and show step, reward, KL and held-out accuracy as they
arrive (``executors.progress.follow_training`` over ``client.follow``). The run folder gets
``metrics.jsonl``, transcripts, checkpoints (``snapshots/step-N``), ``reward_curve.png`` and the
final LoRA adapter (``adapter/``).

Run::

    python examples/grpo_math.py                     # SmolLM2-135M-Instruct, 30 steps (~15 min on 2 cores)
    python examples/grpo_math.py --steps 10 --out runs/grpo-math
    python examples/grpo_math.py --quick             # tiny random model, 2 steps, seconds (the test)
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

import executors
from executors.progress import follow_training


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--out", type=Path, default=None, help="run folder (default: a new temp folder)")
    parser.add_argument("--address", default=os.environ.get("GYM_TINKER_ADDRESS"), help="Dask scheduler")
    parser.add_argument("--quick", action="store_true", help="tiny random model, 2 steps (for the test)")
    args = parser.parse_args(argv)

    params: dict[str, Any] = {
        "env_kwargs": {"difficulty": "easy"},
        "steps": args.steps,
        "prompts_per_step": 4,  # tasks per step...
        "group_size": 8,  # ...each sampled 8 times; advantages compare the 8
        "max_tokens": 64,
        "temperature": 0.8,
        "learning_rate": 3e-4,
        "eval_every": 10,
        "eval_episodes": 100,
    }
    if args.quick:
        args.model = "tiny-random"
        params.update(steps=2, prompts_per_step=2, group_size=2, max_tokens=8, eval_every=0, eval_episodes=4)
        params.update(report_to="none", threads=1)
    out = (args.out or Path(tempfile.mkdtemp(prefix="grpo-math-"))).resolve()  # the worker may run elsewhere
    spec = {
        "kind": "grpo",
        "name": "grpo-math",
        "model": args.model,
        "adapter": {"r": 16, "alpha": 32, "dropout": 0.0},
        "env": "tinker/Math-v0",
        "output_dir": str(out),
        "params": params,
    }

    if args.address:
        client = executors.connect(args.address)
    else:
        client = executors.connect(n_workers=1, threads_per_worker=1)
    with client:
        job = client.submit(spec)
        print(
            f"job {job.id} (grpo, {args.model}, {params['steps']} steps) on {client.address}; run folder {out}"
        )
        follow_training(client.follow(job.id), total_steps=params["steps"], title="grpo math")
        result = job.result()
        heldout = {m["step"]: m["heldout_accuracy"] for m in job.metrics() if "heldout_accuracy" in m}

    print("held-out accuracy by step:", heldout)
    print(f"adapter: {out / 'adapter'}  metrics: {out / 'metrics.jsonl'}")
    return result


if __name__ == "__main__":
    main()
