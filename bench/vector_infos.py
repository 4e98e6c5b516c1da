"""Vector info batching: µs per vector step to build Gymnasium's info dict, ours vs Gymnasium's ``_add_info``.

Run ``python bench/vector_infos.py`` (``--quick`` for fewer repeats). Prints a table and writes
``bench/results/vector_infos.json``.

The infos are GuessNumber's: a step's ``{"feedback", "turn"}``, a reset's five keys, and
same-step autoreset's ``final_obs``/``final_info`` on top of a reset's, in the mixes a vector
step meets (every env stepping; one env in four resetting; one in five ending). Each case is
batched by :func:`gym_tinker.vector.batch_infos` and by Gymnasium's ``VectorEnv._add_info``, env
by env as ``SyncVectorEnv.step`` does; both results are checked equal first. The best of
``--repeats`` timings is kept.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import timeit
from pathlib import Path
from typing import Any

from _report import machine, write_report
from gymnasium.vector import SyncVectorEnv

from gym_tinker import testing
from gym_tinker.vector import batch_infos

RESULTS = Path(__file__).parent / "results" / "vector_infos.json"


def _step(turn: int) -> dict[str, Any]:
    return {"feedback": "lower", "turn": turn}


def _reset() -> dict[str, Any]:
    return {
        "system_prompt": "Guess.",
        "tools": [],
        "task_id": "GuessNumber-row3",
        "difficulty": "easy",
        "turn": 0,
    }


def _final() -> dict[str, Any]:
    return {"final_obs": "3 is correct!", "final_info": {"feedback": "correct", "turn": 3}, **_reset()}


CASES: dict[str, list[dict[str, Any]]] = {
    "1 env, step": [_step(1)],
    "1 env, reset": [_reset()],
    "2 envs, step": [_step(1), _step(2)],
    "2 envs, one resets": [_step(1), _reset()],
    "2 envs, one ends (same-step)": [_step(1), _final()],
    "4 envs, one resets": [_step(1), _reset(), _step(2), _step(1)],
    "16 envs, step": [_step(k % 4 + 1) for k in range(16)],
    "16 envs, 4 reset": [_step(1), _reset(), _step(2), _step(1)] * 4,
    "16 envs, 4 end (same-step)": [_step(1), _final(), _step(2), _step(1), _step(3)] * 3 + [_final()],
}


def add_info_env_by_env(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``SyncVectorEnv`` does: ``_add_info`` once per env."""
    vector = SyncVectorEnv.__new__(SyncVectorEnv)
    vector.num_envs = len(infos)
    batched: dict[str, Any] = {}
    for i, info in enumerate(infos):
        batched = vector._add_info(batched, info, i)
    return batched


def _best(call: Any, number: int, repeats: int) -> float:
    """Seconds per call, the best of ``repeats`` timings of ``number`` calls."""
    return min(timeit.repeat(call, number=number, repeat=repeats)) / number


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats of 2,000 calls")
    parser.add_argument("--repeats", type=int, default=None, help="timings per case; best kept (default 7)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 7)
    number = 2_000 if args.quick else 20_000
    load_before = os.getloadavg()[0]
    rows = []
    print(f"{'infos':<30} {'ours µs':>9} {'Gymnasium µs':>13} {'speed-up':>9}")
    for name, infos in CASES.items():
        n = len(infos)
        if not testing._same_batch(batch_infos(infos, n), add_info_env_by_env(infos)):
            raise AssertionError(f"{name}: batch_infos differs from Gymnasium's _add_info")
        ours = _best(functools.partial(batch_infos, infos, n), number, repeats)
        theirs = _best(functools.partial(add_info_env_by_env, infos), number, repeats)
        rows.append({"infos": name, "num_envs": n, "ours_us": ours * 1e6, "gymnasium_us": theirs * 1e6})
        print(f"{name:<30} {ours * 1e6:>9.2f} {theirs * 1e6:>13.2f} {theirs / ours:>8.2f}x")
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) before/after: {load_before:.2f}/{load_after:.2f} on {os.cpu_count()} CPUs")
    report = {
        "benchmark": "vector_infos",
        "command": "python bench/vector_infos.py " + " ".join(argv or []),
        "repeats": repeats,
        "calls_per_timing": number,
        "machine": machine(load_before, load_after),
        "rows": rows,
    }
    write_report(args.out, report)
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
