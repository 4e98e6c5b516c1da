"""Step time on huge adversarial actions: every env and game, with and without the action cap.

Run ``python bench/action_sizes.py`` (``--quick``: 256 KB instead of 1 MB; ``--only Wordle``:
targets whose name contains it). For each env and game and each shape in
``gym_tinker.adversarial.ADVERSARIAL_PATTERNS``, one step on a fresh reset (seed 0) is timed at
the given size, first with ``max_action_chars=None`` (the parsers see everything) and then with
the default cap. Prints the worst and the median shape per target, wall-clock (which includes
sandboxed code runs in child processes) and CPU time of this thread (parsing alone); writes
``bench/results/action_sizes.json``. Wall-clock includes the sandboxed run of the code that Code
and ToolUse's ``python`` tool find in the action (1 MB of code runs for a while); CPU time of
this thread is the env's own work.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
from _report import machine, write_report

import gym_tinker
import multiagent
from gym_tinker.adversarial import ADVERSARIAL_PATTERNS
from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS

RESULTS = Path(__file__).parent / "results" / "action_sizes.json"


def _env_stepper(env_id: str, cap: int | None) -> Callable[[], Callable[[str], Any]]:
    def prepare() -> Callable[[str], Any]:
        env = gym.make(env_id, max_action_chars=cap).unwrapped
        env.reset(seed=0)
        return env.step

    return prepare


def _game_stepper(game: str, cap: int | None) -> Callable[[], Callable[[str], Any]]:
    module_name, api, _ = multiagent.GAMES[game]
    module = __import__(module_name, fromlist=["env"])

    def prepare() -> Callable[[str], Any]:
        if api == "parallel":
            env = module.parallel_env(max_action_chars=cap)
            env.reset(seed=0)
            return lambda action: env.step(dict.fromkeys(env.agents, action))
        env = module.env(max_action_chars=cap)
        env.reset(seed=0)
        return env.step

    return prepare


def _time(prepare: Callable[[], Callable[[str], Any]], action: str) -> tuple[float, float]:
    step = prepare()
    wall, cpu = time.perf_counter(), time.thread_time()
    step(action)
    return time.perf_counter() - wall, time.thread_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="256 KB actions instead of 1 MB")
    parser.add_argument("--size", type=int, default=None, help="action length in characters")
    parser.add_argument("--only", default="", help="run only targets whose name contains this")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON report")
    args = parser.parse_args()
    size = args.size or (262_144 if args.quick else 1_048_576)
    targets: dict[str, Callable[[int | None], Callable[[], Callable[[str], Any]]]] = {}
    for env_id, _ in gym_tinker.list_envs():
        targets[env_id] = lambda cap, env_id=env_id: _env_stepper(env_id, cap)
    for game in multiagent.GAMES:
        targets[game] = lambda cap, game=game: _game_stepper(game, cap)
    load_before = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    print(
        f"one step on a {size:,}-character action, ms: median and worst wall-clock, worst CPU of this thread"
    )
    print(f"{'target':<24}{'cap':>7}{'median':>9}{'worst':>9}  {'(shape)':<22}{'cpu':>8}  (shape)")
    for name, make in targets.items():
        if args.only not in name:
            continue
        for cap in (None, DEFAULT_MAX_ACTION_CHARS):
            prepare = make(cap)
            times = {p.name: _time(prepare, p.make(size)) for p in ADVERSARIAL_PATTERNS}
            worst = max(times, key=lambda k: times[k][0])
            worst_cpu = max(times, key=lambda k: times[k][1])
            median = statistics.median(t[0] for t in times.values())
            row = {
                "target": name,
                "cap": cap,
                "size": size,
                "median_wall_ms": round(median * 1e3, 2),
                "worst_wall_ms": round(times[worst][0] * 1e3, 2),
                "worst_wall_shape": worst,
                "worst_cpu_ms": round(times[worst_cpu][1] * 1e3, 2),
                "worst_cpu_shape": worst_cpu,
                "by_shape_wall_ms": {k: round(v[0] * 1e3, 2) for k, v in times.items()},
                "by_shape_cpu_ms": {k: round(v[1] * 1e3, 2) for k, v in times.items()},
            }
            rows.append(row)
            print(
                f"{name:<24}{cap or 'none':>7}{row['median_wall_ms']:>9.1f}{row['worst_wall_ms']:>9.1f}"
                f"  {worst:<22}{row['worst_cpu_ms']:>8.1f}  {worst_cpu}",
                flush=True,
            )
    write_report(args.output, {"machine": machine(load_before, os.getloadavg()[0]), "rows": rows})


if __name__ == "__main__":
    main()
