"""Game throughput: steps and games per second of every text game with random legal moves.

Every game is played through PettingZoo's AEC API as a user's loop would: ``env()`` (with its
wrappers), ``agent_iter``, ``last()`` (which renders the text observation), and a random
legal move from ``infos[agent]["legal_moves"]``. Parallel-native games are also played through
``parallel_env()``. A step is one move (an ``env.step`` for a live agent; the ``None`` steps
of finished agents are not counted). Tic-tac-toe is also played for 10k games in one env to
check that the rate stays flat (best of ``--repeats`` runs per block of 1k games), and
PettingZoo's own numpy ``classic/tictactoe_v3`` is measured in the same loop for comparison.

Usage::

    python bench/game_throughput.py            # full run, a minute or two
    python bench/game_throughput.py --quick    # a few seconds

Each measurement is run ``--repeats`` times (default 3) and the fastest kept, as ``timeit``
does: on a shared machine the slower runs measure the neighbours. PettingZoo's tic-tac-toe
imports pygame; without it that row is skipped with a note.

Prints a table and writes ``bench/results/game_throughput.json``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from multiagent import GAMES

RESULTS = Path(__file__).parent / "results" / "game_throughput.json"


def play_aec(env: Any, games: int, rng: np.random.Generator, seed0: int = 0) -> tuple[int, float]:
    """Play ``games`` games with random legal moves; return (moves, seconds)."""
    moves = 0
    start = time.perf_counter()
    for g in range(games):
        env.reset(seed=seed0 + g)
        for _agent in env.agent_iter():
            _obs, _reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = info["legal_moves"]
            env.step(str(legal[int(rng.random() * len(legal))]))
            moves += 1
    return moves, time.perf_counter() - start


def play_parallel(env: Any, games: int, rng: np.random.Generator) -> tuple[int, float]:
    """Parallel API: every step, every live agent sends a random legal move (or "" if none)."""
    steps = 0
    start = time.perf_counter()
    for g in range(games):
        _, infos = env.reset(seed=g)
        while env.agents:
            actions = {}
            for agent in env.agents:
                legal = infos[agent].get("legal_moves") or [""]
                actions[agent] = str(legal[int(rng.random() * len(legal))])
            _, _, _, _, infos = env.step(actions)
            steps += 1
    return steps, time.perf_counter() - start


def play_pettingzoo_tictactoe(games: int, rng: np.random.Generator) -> tuple[int, float]:
    """PettingZoo's numpy tic-tac-toe, random legal moves from its action mask (needs pygame)."""
    from pettingzoo.classic.tictactoe import tictactoe

    env = tictactoe.env()
    moves = 0
    start = time.perf_counter()
    for g in range(games):
        env.reset(seed=g)
        for _agent in env.agent_iter():
            obs, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[int(rng.random() * len(legal))]))
            moves += 1
    return moves, time.perf_counter() - start


def best_of(repeats: int, play: Any, *args: Any) -> tuple[int, float]:
    """The fastest of ``repeats`` runs (the machine is shared: slower runs measure the neighbours)."""
    runs = [play(*args) for _ in range(repeats)]
    return min(runs, key=lambda run: run[1])


def row(name: str, api: str, games: int, moves: int, seconds: float) -> dict[str, Any]:
    return {
        "game": name,
        "api": api,
        "games": games,
        "steps": moves,
        "seconds": round(seconds, 4),
        "steps_per_s": round(moves / seconds),
        "games_per_s": round(games / seconds),
        "steps_per_game": round(moves / games, 2),
    }


def flatness(total_games: int, block: int, repeats: int, rng: np.random.Generator) -> dict[str, Any]:
    """Tic-tac-toe for ``total_games`` games in one env: the rate of each block of games.

    The whole run is repeated ``repeats`` times (a fresh env each time) and each block keeps its
    best rate, so a busy neighbour during one block does not read as a slowdown of the game.
    """
    from multiagent import tictactoe_v0

    best = [0.0] * (total_games // block)
    for _ in range(repeats):
        env = tictactoe_v0.env()
        for b in range(len(best)):
            moves, seconds = play_aec(env, block, rng, seed0=b * block)
            best[b] = max(best[b], moves / seconds)
    return {
        "games": total_games,
        "block": block,
        "repeats": repeats,
        "first_block_steps_per_s": round(best[0]),
        "last_block_steps_per_s": round(best[-1]),
        "last_over_first": round(best[-1] / best[0], 3),
        "min_block_steps_per_s": round(min(best)),
        "block_steps_per_s": [round(rate) for rate in best],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer games (a few seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement; the fastest is kept")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    scale = 0.1 if args.quick else 1.0
    rng = np.random.default_rng(0)
    load_before = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    per_game = {"tictactoe_v0": 20000, "connect_four_v0": 4000, "kuhn_poker_v0": 20000}

    for game, (module_name, native, _) in GAMES.items():
        if importlib.util.find_spec(module_name) is None:
            notes.append(f"{game}: skipped, {module_name} is not installed")
            continue
        module = importlib.import_module(module_name)
        games = max(100, int(per_game.get(game, 5000) * scale))
        play_aec(module.env(), max(10, games // 20), rng)  # warm-up
        rows.append(row(game, "aec", games, *best_of(args.repeats, play_aec, module.env(), games, rng)))
        if native == "parallel":
            measured = best_of(args.repeats, play_parallel, module.parallel_env(), games, rng)
            rows.append(row(game, "parallel", games, *measured))

    games = max(100, int(20000 * scale))
    from multiagent import tictactoe_v0

    measured = best_of(args.repeats, play_aec, tictactoe_v0.raw_env(), games, rng)
    rows.append(row("tictactoe_v0 raw_env (no wrapper)", "aec", games, *measured))
    if importlib.util.find_spec("pygame") is None:
        notes.append("pettingzoo classic/tictactoe_v3: skipped, it imports pygame (pip install pygame)")
    else:
        play_pettingzoo_tictactoe(200, rng)
        rows.append(
            row("pettingzoo classic/tictactoe_v3", "aec", games, *play_pettingzoo_tictactoe(games, rng))
        )

    total = 2000 if args.quick else 10000
    flat = flatness(total, total // 10, args.repeats, rng)

    print(f"{'game':34} {'api':9} {'games':>7} {'steps/game':>10} {'steps/s':>10} {'games/s':>9}")
    for r in rows:
        print(
            f"{r['game']:34} {r['api']:9} {r['games']:7d} {r['steps_per_game']:10.2f} "
            f"{r['steps_per_s']:10,d} {r['games_per_s']:9,d}"
        )
    print(
        f"\ntictactoe_v0 over {flat['games']} games in one env (blocks of {flat['block']}, best of "
        f"{flat['repeats']} runs): first block {flat['first_block_steps_per_s']:,} steps/s, last "
        f"{flat['last_block_steps_per_s']:,} (ratio {flat['last_over_first']}), slowest block "
        f"{flat['min_block_steps_per_s']:,}"
    )
    print(
        f"load average (1 min) before/after: {load_before:.2f}/{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    for note in notes:
        print(note)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "quick": args.quick,
                "repeats": args.repeats,
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                # Other processes share the CPUs: a load above the CPU count slows every figure.
                "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                "rows": rows,
                "tictactoe_flatness": flat,
                "notes": notes,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
