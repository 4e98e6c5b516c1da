"""Env throughput: steps per second of every gym_tinker env, by policy and execution mode.

Run ``python bench/env_throughput.py`` (``--quick`` for a short run, ``--env tinker/Math-v0`` for
one env). Prints a table and writes ``bench/results/env_throughput.json``.

Policies
    ``random``: action strings pre-generated from a seeded ``TextSpace`` (sampling is not timed).
    ``python call`` (ToolUse only): every turn calls the sandboxed ``python`` tool.
    ``oracle``: each env's scripted oracle. Its actions are recorded first, on separate env
    instances, and then replayed on fresh ones with the same seeds, so only the env is timed; the
    replay's mean episode return (1.0 when every episode is solved) shows it stayed in step.

Modes
    ``unwrapped``: ``gym.make(id).unwrapped`` in this process (the env's own cost).
    ``gym.make``: the same through Gymnasium's wrappers (order enforcing, env checker, time limit).
    ``sync x4`` / ``async x4``: ``gym.make_vec(id, num_envs=4, vectorization_mode=...)`` with
    default arguments; steps are env steps (4 per vector step, autoreset steps not counted).

Single-process modes also report steps per CPU-second of this process, which stays steady when
other work shares the machine (wall-clock rates then drop with the share of a core we get).

Sandbox calls (the Code env's test harness, ToolUse's ``python`` tool) are counted in the
single-process modes and reported as calls/s next to the steps; a separate line times a
trivial sandboxed ``print(1)``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import gym_tinker
from gym_tinker.oracles import oracle_action
from gym_tinker.spaces import TextSpace

RESULTS = Path(__file__).parent / "results" / "env_throughput.json"
NUM_ENVS = 4
PYTHON_TOOL_CALL = '<tool_call>{"name": "python", "arguments": {"code": "print(6 * 7)"}}</tool_call>'


@dataclass
class SandboxCounter:
    """Calls into the sandbox and the seconds they took, by caller."""

    calls: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def reset(self) -> None:
        self.calls.clear()
        self.seconds.clear()


SANDBOX = SandboxCounter()


def instrument_sandbox() -> None:
    """Count `run_python` calls made by the Code env's test harness and by the python tool."""
    import gym_tinker.tools.function_tests as harness
    import gym_tinker.tools.python_tool as python_tool

    for module, label in ((harness, "code_tests"), (python_tool, "python_tool")):
        original = module.run_python

        def counted(
            *args: Any, _original: Callable[..., Any] = original, _label: str = label, **kwargs: Any
        ) -> Any:
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                SANDBOX.calls[_label] = SANDBOX.calls.get(_label, 0) + 1
                SANDBOX.seconds[_label] = SANDBOX.seconds.get(_label, 0.0) + time.perf_counter() - start

        module.run_python = counted  # type: ignore[attr-defined]


@dataclass
class Row:
    env: str
    policy: str
    mode: str
    steps: int
    seconds: float
    episodes: int
    mean_return: float
    sandbox_calls: dict[str, int] = field(default_factory=dict)
    cpu_seconds: float | None = None
    """This process's CPU time (single-process modes): steady on a machine shared with other work."""

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0

    @property
    def steps_per_cpu_s(self) -> float | None:
        return self.steps / self.cpu_seconds if self.cpu_seconds else None


# --- single process ---------------------------------------------------------------------------


def run_random_single(
    env: gym.Env, actions: list[str], seed: int, budget: float
) -> tuple[int, float, int, float]:
    """Steps through `actions` (cycled) for about `budget` seconds; resets when episodes end."""
    step, reset = env.step, env.reset
    reset(seed=seed)
    steps = episodes = 0
    total = 0.0
    n = len(actions)
    chunk = 1
    start = time.perf_counter()
    deadline = start + budget
    while True:
        for _ in range(chunk):
            _, reward, terminated, truncated, _ = step(actions[steps % n])
            steps += 1
            total += float(reward)
            if terminated or truncated:
                episodes += 1
                reset()
        now = time.perf_counter()
        if now >= deadline:
            break
        # Fast envs: read the clock every 64 steps only, as it costs about as much as a step.
        if chunk == 1 and steps >= 16 and now - start < 1e-3:
            chunk = 64
    return steps, time.perf_counter() - start, episodes, total


def warm_up(env: gym.Env, actions: list[str], seed: int) -> None:
    """A few untimed steps: first-call costs (imports, caches, a first sandbox start)."""
    env.reset(seed=seed)
    for action in actions[:2]:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()


Stream = list[list[str]]
"""Oracle episodes of one env stream (seeded once, then reset without a seed), as action lists."""


def record_oracle(env_id: str, seeds: list[int], budget: float, max_episodes: int = 20_000) -> list[Stream]:
    """Oracle action lists per stream, recording for about `budget` seconds in all."""
    streams: list[Stream] = []
    for seed in seeds:
        env = gym.make(env_id).unwrapped
        stream: Stream = []
        env.reset(seed=seed)
        deadline = time.perf_counter() + budget / len(seeds)
        while (time.perf_counter() < deadline or len(stream) < 2) and len(stream) < max_episodes:
            actions = []
            done = False
            while not done:
                action = oracle_action(env)
                actions.append(action)
                _, _, terminated, truncated, _ = env.step(action)
                done = terminated or truncated
            stream.append(actions)
            env.reset()
        env.close()
        streams.append(stream)
    return streams


def replay_single(env: gym.Env, streams: list[Stream], seeds: list[int]) -> tuple[int, float, int, float]:
    step, reset = env.step, env.reset
    steps = episodes = 0
    total = 0.0
    start = time.perf_counter()
    for seed, stream in zip(seeds, streams, strict=True):
        reset(seed=seed)
        for actions in stream:
            for action in actions:
                total += float(step(action)[1])
            steps += len(actions)
            episodes += 1
            reset()
    return steps, time.perf_counter() - start, episodes, total


# --- async vector -----------------------------------------------------------------------------


def run_vector(
    env_id: str, mode: str, seed: int, next_actions: Callable[[np.ndarray], tuple[str, ...] | None]
) -> tuple[int, float, int, float]:
    """Steps a 4-env vector env; `next_actions(autoresetting)` gives the actions or None to stop."""
    vector = gym.make_vec(env_id, num_envs=NUM_ENVS, vectorization_mode=mode)
    try:
        vector.reset(seed=seed)
        autoresetting = np.zeros(NUM_ENVS, dtype=bool)
        steps = episodes = 0
        total = 0.0
        start = time.perf_counter()
        while (actions := next_actions(autoresetting)) is not None:
            _, rewards, terminated, truncated, _ = vector.step(actions)
            live = ~autoresetting  # next-step autoreset: those sub-envs only reset this step
            steps += int(live.sum())
            total += float(rewards[live].sum())
            autoresetting = terminated | truncated
            episodes += int((autoresetting & live).sum())
        return steps, time.perf_counter() - start, episodes, total
    finally:
        vector.close()


def random_vector_actions(
    actions: list[str], budget: float
) -> Callable[[np.ndarray], tuple[str, ...] | None]:
    calls = [0]
    deadline: list[float] = []

    def next_actions(autoresetting: np.ndarray) -> tuple[str, ...] | None:
        if not deadline:
            deadline.append(time.perf_counter() + budget)
        elif calls[0] % 16 == 0 and time.perf_counter() >= deadline[0]:
            return None
        i = calls[0] = calls[0] + 1
        return tuple(actions[(i * NUM_ENVS + k) % len(actions)] for k in range(NUM_ENVS))

    return next_actions


def replay_vector_actions(
    streams: list[Stream], budget: float
) -> Callable[[np.ndarray], tuple[str, ...] | None]:
    # Position per sub-env: (episode, action). An autoresetting sub-env ignores its action.
    position = [[0, 0] for _ in streams]
    deadline: list[float] = []

    def next_actions(autoresetting: np.ndarray) -> tuple[str, ...] | None:
        if not deadline:
            deadline.append(time.perf_counter() + budget)
        elif time.perf_counter() >= deadline[0]:
            return None
        actions = []
        for k, stream in enumerate(streams):
            if autoresetting[k]:
                position[k] = [position[k][0] + 1, 0]
                actions.append("")
                continue
            episode, index = position[k]
            if episode >= len(stream):
                return None
            actions.append(stream[episode][index])
            position[k][1] += 1
        return tuple(actions)

    return next_actions


# --- driver -----------------------------------------------------------------------------------


def bench_env(env_id: str, *, seed: int, budget: float, modes: list[str]) -> list[Row]:
    rows = []
    space = TextSpace(seed=seed)
    fixed_actions = {"random": [space.sample() for _ in range(4096)]}
    if env_id == "tinker/ToolUse-v0":
        # The oracle's plans use lookup, search and calculator only; time turns that run python.
        fixed_actions["python call"] = [PYTHON_TOOL_CALL]
    seeds = [seed + k for k in range(NUM_ENVS)]
    streams = record_oracle(env_id, seeds, budget)
    for policy in [*fixed_actions, "oracle"]:
        actions = fixed_actions.get(policy, fixed_actions["random"])
        for mode in modes:
            SANDBOX.reset()
            cpu_seconds = None
            if mode in ("sync x4", "async x4"):
                oracle = policy == "oracle"
                feed = (
                    replay_vector_actions(streams, budget)
                    if oracle
                    else random_vector_actions(actions, budget)
                )
                steps, seconds, episodes, total = run_vector(env_id, mode.split()[0], seed, feed)
            else:
                env = gym.make(env_id)
                target = env.unwrapped if mode == "unwrapped" else env
                warm_up(target, actions, seed)
                SANDBOX.reset()
                cpu_start = time.process_time()
                if policy == "oracle":
                    steps, seconds, episodes, total = replay_single(target, streams, seeds)
                else:
                    steps, seconds, episodes, total = run_random_single(target, actions, seed, budget)
                cpu_seconds = time.process_time() - cpu_start
                env.close()
            mean_return = total / max(episodes, 1)
            calls = dict(SANDBOX.calls)
            rows.append(Row(env_id, policy, mode, steps, seconds, episodes, mean_return, calls, cpu_seconds))
    return rows


def sandbox_calls_per_s(budget: float) -> dict[str, float]:
    """Raw sandbox throughput: a trivial program, run back to back."""
    from gym_tinker.tools.sandbox import run_python

    calls = 0
    start = time.perf_counter()
    while calls < 3 or time.perf_counter() - start < budget:
        result = run_python("print(1)")
        assert result.stdout.strip() == "1", result
        calls += 1
    seconds = time.perf_counter() - start
    return {
        "calls": calls,
        "seconds": seconds,
        "calls_per_s": calls / seconds,
        "isolated": bool(result.isolated),
    }


def print_table(rows: list[Row], raw_sandbox: dict[str, float]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="gym_tinker env throughput (env steps per second)")
    for name in (
        "env",
        "policy",
        "mode",
        "steps",
        "steps/s",
        "steps/CPU-s",
        "mean return",
        "sandbox calls/s",
    ):
        table.add_column(name, justify="left" if name in ("env", "policy", "mode") else "right")
    for row in rows:
        sandbox = ", ".join(f"{k} {v / row.seconds:,.1f}" for k, v in row.sandbox_calls.items()) or "-"
        if row.mode == "async x4" and row.env.split("/")[1].split("-")[0] in ("Code", "ToolUse"):
            sandbox = "(in workers)"
        table.add_row(
            row.env,
            row.policy,
            row.mode,
            f"{row.steps:,}",
            f"{row.steps_per_s:,.0f}",
            "-" if row.steps_per_cpu_s is None else f"{row.steps_per_cpu_s:,.0f}",
            f"{row.mean_return:.3f}",
            sandbox,
        )
    console = Console(width=120)
    console.print(table)
    console.print(
        f"sandbox, trivial program back to back: {raw_sandbox['calls_per_s']:.1f} calls/s "
        f"({'bubblewrap' if raw_sandbox['isolated'] else 'no bubblewrap: rlimits only'})"
    )
    console.print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    for row in rows:
        if row.env == "tinker/GuessNumber-v0" and row.policy == "random" and row.mode == "unwrapped":
            cpu_rate = row.steps_per_cpu_s or 0.0
            # Peers (GEM, TextArena) are measured side by side, same task, in bench/peers.py.
            console.print(
                f"GuessNumber unwrapped, random actions: {row.steps_per_s:,.0f} steps/s wall, "
                f"{cpu_rate:,.0f} per CPU-second (against GEM on the same task: bench/peers.py)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (about 0.3 s per measurement)")
    parser.add_argument(
        "--seconds", type=float, default=None, help="seconds per measurement (default 2, quick 0.3)"
    )
    parser.add_argument("--env", action="append", help="env id to run (repeatable; default all)")
    parser.add_argument("--no-async", action="store_true", help="skip the async vector mode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    budget = args.seconds if args.seconds is not None else (0.3 if args.quick else 2.0)
    env_ids = args.env or [entry.id for entry in gym_tinker.ENV_ENTRIES]
    unknown = sorted(set(env_ids) - {entry.id for entry in gym_tinker.ENV_ENTRIES})
    if unknown:
        parser.error(
            f"unknown env id(s) {unknown}; expected some of {[e.id for e in gym_tinker.ENV_ENTRIES]}"
        )
    modes = ["unwrapped", "gym.make", "sync x4"] + ([] if args.no_async else ["async x4"])

    instrument_sandbox()
    rows = [
        row for env_id in env_ids for row in bench_env(env_id, seed=args.seed, budget=budget, modes=modes)
    ]
    raw_sandbox = sandbox_calls_per_s(budget)
    print_table(rows, raw_sandbox)

    args.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "benchmark": "env_throughput",
        "command": "python bench/env_throughput.py" + (" --quick" if args.quick else ""),
        "seconds_per_measurement": budget,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "gymnasium": gym.__version__,
            "load_average_1min_at_end": os.getloadavg()[0],
        },
        "sandbox_trivial_program": raw_sandbox,
        "rows": [
            {**asdict(row), "steps_per_s": row.steps_per_s, "steps_per_cpu_s": row.steps_per_cpu_s}
            for row in rows
        ],
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
