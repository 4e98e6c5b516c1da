"""Vector env scaling: env steps per second of ``gym.make_vec`` sync and async at 1-16 envs, ours vs GEM.

Run ``python bench/vector_scaling.py`` (``--quick`` for a short run). Prints a table and writes
``bench/results/vector_scaling.json``.

The task is GEM's ``game:GuessTheNumber-v0-easy`` (secret 1-10, 4 turns) and ours set to the
same task (``tinker/GuessNumber-v0`` with the secrets 1-10 as a dataset and ``max_turns=4``),
fed the same pre-drawn random ``\\boxed{k}`` guesses. Ours: what ``gym.make_vec(id,
num_envs=N, autoreset_mode=...)`` builds through the env's registered vector entry point, in
process (:class:`gym_tinker.vector.TextVectorEnv`, "sync") or with ``workers=min(CPUs - 1, 4)``
(at least 1; :class:`gym_tinker.vector.ProcessTextVectorEnv`, "async": the envs split over that
many processes, one pipe round trip per worker and step, a core left to the caller). "ours" uses same-step autoreset, as GEM
does by default (an ended env is reset within the step), and Gymnasium's info format (a dict of
arrays with ``_key`` masks); "ours, list infos" is the same with ``info_format="list"``, each
env's own info dict, the format GEM's vector envs return (and Gymnasium's ``DictInfoToList``
gives): the like-for-like comparison with GEM. "ours, NextStep" uses Gymnasium's default
next-step autoreset and dict infos; its reset-only sub-env steps are not counted. Also shown,
our env in Gymnasium's own vector envs (next-step), ``vectorization_mode="sync"``
(``SyncVectorEnv``) and ``"async"`` (``AsyncVectorEnv``: one process per env, our
shared-memory text buffers). GEM: ``gem.make_vec([id] * N, async_mode=False | True)`` (same-step
autoreset, without the final observation and info; its async mode is a thread pool in this
process; its infos are a list of dicts, deep-copied). For each (mode, N) the contenders take
turns, ``--repeats`` times, and the best run of each is kept. Vector construction and the first
reset are not timed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from _report import machine, write_report

import gym_tinker  # noqa: F401 (registers the tinker/ envs)

RESULTS = Path(__file__).parent / "results" / "vector_scaling.json"
OURS_ID = "tinker/GuessNumber-v0"
GEM_ID = "game:GuessTheNumber-v0-easy"
OURS_KWARGS: dict[str, Any] = {
    "dataset": [{"secret": k, "low": 1, "high": 10} for k in range(1, 11)],
    "max_turns": 4,
}
WORKERS = max(1, min((os.cpu_count() or 1) - 1, 4))
"""Worker processes for "async": a core is left to this process, which batches the results."""
OURS_LIST = "ours, list infos"
OURS = "ours"
OURS_NEXT_STEP = "ours, NextStep"
GYMNASIUM = "ours in Gymnasium's"
NEXT_STEP = (OURS_NEXT_STEP, GYMNASIUM)
"""The contenders with next-step autoreset, whose reset-only sub-env steps are not counted."""


def make_ours(mode: str, num_envs: int, autoreset_mode: str = "SameStep", info_format: str = "dict") -> Any:
    """``make_vec``'s default (the vector entry point): sync, our ``TextVectorEnv``; async,
    ``workers=WORKERS``: our ``ProcessTextVectorEnv``. Same-step autoreset by default, as GEM's."""
    workers = {"workers": WORKERS} if mode == "async" else {}
    return gym.make_vec(
        OURS_ID,
        num_envs=num_envs,
        autoreset_mode=autoreset_mode,
        info_format=info_format,
        **workers,
        **OURS_KWARGS,
    )


def make_ours_list(mode: str, num_envs: int) -> Any:
    """As :func:`make_ours`, with ``info_format="list"``: each env's info dict, as GEM's vector envs
    (and Gymnasium's ``DictInfoToList``) give them."""
    return make_ours(mode, num_envs, info_format="list")


def make_ours_next_step(mode: str, num_envs: int) -> Any:
    """As :func:`make_ours`, with Gymnasium's default next-step autoreset."""
    return make_ours(mode, num_envs, "NextStep")


def make_ours_gymnasium(mode: str, num_envs: int) -> Any:
    """Our env in Gymnasium's own ``SyncVectorEnv`` / ``AsyncVectorEnv`` (``vectorization_mode=mode``)."""
    return gym.make_vec(OURS_ID, num_envs=num_envs, vectorization_mode=mode, **OURS_KWARGS)


def make_gem(mode: str, num_envs: int) -> Any:
    import gem

    with contextlib.redirect_stdout(io.StringIO()):  # it prints "SyncVectorEnv with N environments."
        return gem.make_vec([GEM_ID] * num_envs, async_mode=mode == "async")


def close(vector: Any) -> None:
    """Close a vector env; GEM's have no ``close`` (its async pool is shut down instead)."""
    if hasattr(vector, "close"):
        vector.close()
    elif hasattr(vector, "thread_pool_executer"):
        vector.thread_pool_executer.shutdown()


def run(
    vector: Any, num_envs: int, guesses: list[str], budget: float, next_step_autoreset: bool
) -> dict[str, float]:
    """Steps ``vector`` for about ``budget`` seconds; live env steps per second."""
    vector.reset(seed=0)
    flags = []  # each step's (terminated, truncated), counted after the clock stops
    calls = 0
    n = len(guesses)
    start = time.perf_counter()
    deadline = start + budget
    while True:
        base = calls * num_envs
        actions = [guesses[(base + k) % n] for k in range(num_envs)]
        _, _, terminated, truncated, _ = vector.step(actions)
        flags.append((terminated, truncated))
        calls += 1
        if calls % 8 == 0 and time.perf_counter() >= deadline:
            break
    seconds = time.perf_counter() - start
    steps = calls * num_envs
    if next_step_autoreset:  # a step after an episode's end is that env's reset, not an env step
        steps -= sum(int(np.logical_or(*done).sum()) for done in flags[:-1])
    return {"steps": steps, "vector_steps": calls, "seconds": seconds, "steps_per_s": steps / seconds}


def profile(num_envs: int) -> dict[str, Any]:
    """cProfile of our in-process vector env (next-step autoreset) at ``num_envs`` envs."""
    import cProfile
    import pstats

    rng = random.Random(0)
    guesses = [f"\\boxed{{{rng.randint(1, 10)}}}" for _ in range(4096)]
    vector = make_ours_next_step("sync", num_envs)
    run(vector, num_envs, guesses, 0.2, True)
    profiler = cProfile.Profile()
    profiler.enable()
    result = run(vector, num_envs, guesses, 2.0, True)
    profiler.disable()
    vector.close()
    print(
        f"{result['steps_per_s']:,.0f} live env steps/s under the profiler; our functions by cumulative time:"
    )
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(r"gym_tinker", 12)
    return {"profile": num_envs, "steps_per_s": result["steps_per_s"]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    global WORKERS  # --workers sets it for the `make_*` functions
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="0.2 s per measurement, 1 round, up to 8 envs")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per measurement (default 1)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds; best kept (default 2)")
    parser.add_argument("--num-envs", type=int, nargs="+", default=None, help="default 1 2 4 8 16")
    parser.add_argument("--modes", nargs="+", choices=["sync", "async"], default=["sync", "async"])
    parser.add_argument(
        "--workers", type=int, default=None, help=f"ours' worker processes in async mode (default {WORKERS})"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--profile", type=int, default=None, metavar="N",
        help="instead: cProfile 2 s of ours (sync, next-step) at N envs and print the top functions",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.workers is not None:
        WORKERS = args.workers
    if args.profile:
        return profile(args.profile)
    budget = args.seconds or (0.2 if args.quick else 1.0)
    repeats = args.repeats or (1 if args.quick else 2)
    sizes = args.num_envs or ([1, 4, 8] if args.quick else [1, 2, 4, 8, 16])
    notes: list[str] = []
    libraries = {
        OURS_LIST: make_ours_list,
        OURS: make_ours,
        OURS_NEXT_STEP: make_ours_next_step,
        GYMNASIUM: make_ours_gymnasium,
    }
    try:
        import gem  # noqa: F401

        logging.getLogger().setLevel(logging.WARNING)  # gem's import sets the root logger to INFO
        libraries["GEM"] = make_gem
    except ImportError as error:
        notes.append(f"GEM not measured: import gem failed ({error}); see the `bench` extra")
    rng = random.Random(0)
    guesses = [f"\\boxed{{{rng.randint(1, 10)}}}" for _ in range(4096)]
    load_before = os.getloadavg()[0]

    rows: list[dict[str, Any]] = []
    for mode in args.modes:
        for num_envs in sizes:
            vectors = {name: make(mode, num_envs) for name, make in libraries.items()}
            try:
                best: dict[str, dict[str, float]] = {}
                for name, vector in vectors.items():  # warm-up
                    run(vector, num_envs, guesses, 0.02, name in NEXT_STEP)
                for _ in range(repeats):
                    for name, vector in vectors.items():
                        result = run(vector, num_envs, guesses, budget, name in NEXT_STEP)
                        if name not in best or result["steps_per_s"] > best[name]["steps_per_s"]:
                            best[name] = result
            finally:
                for vector in vectors.values():
                    close(vector)
            for name, result in best.items():
                rows.append({"library": name, "mode": mode, "num_envs": num_envs, **result})

    def rate(library: str, mode: str, num_envs: int) -> float | None:
        found = [r for r in rows if (r["library"], r["mode"], r["num_envs"]) == (library, mode, num_envs)]
        return found[0]["steps_per_s"] if found else None

    names = list(libraries)
    compared = {OURS_LIST: "list/GEM", OURS: "dict/GEM", OURS_NEXT_STEP: "NextStep/GEM"}
    print(
        f"{'mode':<6} {'envs':>4} "
        + " ".join(f"{name:>19}" for name in names)
        + "".join(f"{label:>14}" for label in compared.values())
    )
    for mode in args.modes:
        for num_envs in sizes:
            rates = {name: rate(name, mode, num_envs) for name in names}
            gem_rate = rates.get("GEM")
            ratios = [
                f"{rates[name] / gem_rate:.2f}x" if rates[name] and gem_rate else "-" for name in compared
            ]
            cells = " ".join(f"{r:>19,.0f}" if r else f"{'-':>19}" for r in rates.values())
            print(f"{mode:<6} {num_envs:>4} {cells}" + "".join(f"{ratio:>14}" for ratio in ratios))
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) before/after: {load_before:.2f}/{load_after:.2f} on {os.cpu_count()} CPUs")
    print(f"async: ours with workers={WORKERS}")
    for note in notes:
        print(f"note: {note}")
    report = {
        "benchmark": "vector_scaling",
        "command": "python bench/vector_scaling.py " + " ".join(argv or []),
        "task": {"ours": [OURS_ID, {"dataset": "secrets 1-10", "max_turns": 4}], "gem": GEM_ID},
        "async_workers": WORKERS,
        "seconds_per_measurement": budget,
        "repeats": repeats,
        "machine": machine(load_before, load_after),
        "rows": rows,
        "notes": notes,
    }
    write_report(args.out, report)
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
