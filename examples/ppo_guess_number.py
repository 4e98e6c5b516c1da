"""Actor-critic PPO with LoRA on ``tinker/GuessNumber-v0`` (multi-turn) through the scheduler, metrics followed live.

The same pattern as ``grpo_math.py`` with a ``ppo`` job: each step samples whole episodes
(several guesses, each answered with "higher" or "lower"), a value head on the policy estimates
returns, GAE spreads the episode's reward over the sampled tokens, and the clipped PPO losses
update the LoRA adapter, with a KL penalty against the base model. Equivalent to
``gym-tinker train examples/configs/ppo_guess_number.yaml``.

Run::

    python examples/ppo_guess_number.py                  # SmolLM2-135M-Instruct, 20 steps
    python examples/ppo_guess_number.py --steps 5 --out runs/ppo-guess
    python examples/ppo_guess_number.py --quick          # tiny random model, 2 steps, seconds (the test)
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
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="run folder (default: a new temp folder)")
    parser.add_argument("--address", default=os.environ.get("GYM_TINKER_ADDRESS"), help="Dask scheduler")
    parser.add_argument("--quick", action="store_true", help="tiny random model, 2 steps (for the test)")
    args = parser.parse_args(argv)

    params: dict[str, Any] = {
        "steps": args.steps,
        "episodes_per_step": 8,
        "max_tokens": 32,  # per guess
        "max_turns": 6,  # guesses per episode
        "temperature": 0.8,
        "learning_rate": 2e-4,
        "kl_coef": 0.02,
        "eval_every": 10,
        "eval_episodes": 32,
    }
    if args.quick:
        args.model = "tiny-random"
        params.update(steps=2, episodes_per_step=2, minibatch_size=2, max_tokens=4, max_turns=2)
        params.update(eval_every=0, eval_episodes=2, report_to="none", threads=1)
    out = (
        args.out or Path(tempfile.mkdtemp(prefix="ppo-guess-number-"))
    ).resolve()  # the worker may run elsewhere
    spec = {
        "kind": "ppo",
        "name": "ppo-guess-number",
        "model": args.model,
        "adapter": {"r": 16, "alpha": 32},
        "env": "tinker/GuessNumber-v0",
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
            f"job {job.id} (ppo, {args.model}, {params['steps']} steps) on {client.address}; run folder {out}"
        )
        follow_training(client.follow(job.id), total_steps=params["steps"], title="ppo guess-number")
        result = job.result()
        heldout = {m["step"]: m["heldout_accuracy"] for m in job.metrics() if "heldout_accuracy" in m}

    print("held-out accuracy by step:", heldout)
    print(f"adapter: {out / 'adapter'}  metrics: {out / 'metrics.jsonl'}")
    return result


if __name__ == "__main__":
    main()
