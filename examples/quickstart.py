"""The main job on the embedded default: a model plays a gym_tinker env, scheduled on Dask.

Starts an embedded Dask ``LocalCluster`` with the gym-tinker scheduler, submits an ``eval`` job
(SmolLM2-135M-Instruct, greedy, on ``tinker/Math-v0`` easy by default), follows its progress,
and prints the success rate with its 95% interval and one transcript. The run folder holds the
trajectories (``trajectories.jsonl``, token ids and log-probs included) and checkpoints.

Run::

    python examples/quickstart.py                                   # 32 Math episodes, ~30 s on 2 cores
    python examples/quickstart.py --env tinker/ToolUse-v0 --episodes 8 --max-tokens 96
    python examples/quickstart.py --model tiny-random --episodes 4  # seconds; what the test runs
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

import executors
from gym_tinker.trajectory import load_jsonl


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="model reference")
    parser.add_argument("--env", default="tinker/Math-v0", help="gym_tinker env id")
    parser.add_argument("--difficulty", default="easy", choices=["easy", "medium", "hard"])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8, help="episodes sampled together")
    parser.add_argument("--max-tokens", type=int, default=96, help="tokens sampled per turn")
    parser.add_argument("--out", type=Path, default=None, help="run folder (default: a new temp folder)")
    args = parser.parse_args(argv)

    console = Console()
    out = args.out or Path(tempfile.mkdtemp(prefix="gym-tinker-run-"))
    spec = {
        "kind": "eval",
        "name": f"quickstart {args.env}",
        "model": args.model,
        "env": args.env,
        "output_dir": str(out),
        "params": {
            "episodes": args.episodes,
            "batch_size": args.batch_size,
            "max_tokens": args.max_tokens,
            "env_kwargs": {"difficulty": args.difficulty},
            "threads": 2,
        },
    }
    console.print(f"[bold]gym-tinker quickstart[/]: starting an embedded Dask cluster; run folder {out}")
    with executors.connect(n_workers=1, threads_per_worker=1, state_dir=str(out / "state")) as client:
        job = client.submit(spec)
        console.print(f"submitted job {job.id} ({args.model} on {args.env}, {args.episodes} episodes)")
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} episodes"),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console) as progress:
            task = progress.add_task("eval", total=args.episodes, status="loading the model")
            for event in client.follow(job.id):
                if event["type"] == "metric":
                    metrics = event["payload"]
                    status = (
                        f"success {metrics['success_rate']:.0%}  reward {metrics['mean_reward']:.2f}  "
                        f"{metrics['tokens_per_s']:.0f} tok/s"
                    )
                    progress.update(task, completed=event["step"], status=status)
        result = job.result()

    low, high = result["success_ci95"]
    console.print(
        f"\n[bold]{result['env']}[/] with {result['model']}: success {result['success_rate']:.1%} "
        f"(95% CI {low:.1%}-{high:.1%}) over {result['episodes']} episodes, "
        f"mean reward {result['mean_reward']:.3f}, {result['tokens_per_s']:.1f} sampled tok/s"
    )
    first = load_jsonl(result["trajectories"])[0]
    console.print(
        f"\n[bold]transcript[/] (seed {first.seed}, {first.stop_reason}, reward {first.total_reward}):"
    )
    for turn in first.turns:
        console.print(f"[cyan]env  [/] {turn.observation.strip()[:400]}", markup=True, highlight=False)
        console.print(f"[green]agent[/] {turn.action.strip()[:400]}", markup=True, highlight=False)
    console.print(f"\ntrajectories: {result['trajectories']}")
    return result


if __name__ == "__main__":
    main()
