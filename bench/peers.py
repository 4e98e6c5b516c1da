"""Peers side by side: step cost of our envs and games against PettingZoo, TextArena and GEM, same tasks.

Run ``python bench/peers.py`` (``--quick`` for a short run). Every implementation of a task is
measured in this one process, in turns (``--repeats`` rounds; the fastest round of each is
kept, as ``timeit`` does), so the machine's load weighs on all of them alike. Prints a table
and writes ``bench/results/peers.json``.

Tasks and implementations (random legal play; actions pre-drawn, so sampling is not timed):

* **tic-tac-toe**, random legal moves: ours (``multiagent.tictactoe_v0``) through ``env()``
  (its wrappers) and ``raw_env``, the loop ``agent_iter`` / ``last()`` (which renders the text
  observation) / ``step``, moves from ``infos[agent]["legal_moves"]``; PettingZoo's
  ``classic.tictactoe_v3`` (numpy observations, moves from the action mask; not a text env);
  TextArena ``TicTacToe-v0`` with its default wrappers and ``TicTacToe-v0-train`` (board
  wrappers), a fresh env per game because its ``LLMObservationWrapper`` never clears its history
  on ``reset`` (one env reused for every game is also measured, for a few games), and
  ``TicTacToe-v0-raw`` (no wrappers; its observation is a list of message tuples, not one text).
  TextArena moves are ``"[k]"`` for an empty cell read from its board.
* **GuessNumber**: GEM ``game:GuessTheNumber-v0-easy`` (secret 1-10, 4 turns) against ours set to
  the same task (``GuessNumberEnv`` with the secrets 1-10 as a dataset, ``max_turns=4``),
  unwrapped and through ``gym.make``; the same pre-drawn ``\\boxed{k}`` guesses, k uniform in
  1-10, feed both. And ours at its own default (1-100, 10 turns) against GEM's
  ``GuessTheNumberEnv`` class set to the same range and turns (guesses uniform in 1-100).
* **Wordle**: ours (``easy``: 648 everyday words, 6 turns) against GEM's ``WordleEnv`` with
  five letters and 6 turns. GEM's Wordle calls ``nltk.download("words")`` when built, which
  cannot happen offline; when that fails, GEM's own class runs with our 648 answer words as its
  NLTK corpus (``nltk.download`` made a no-op), and the table says so. Guesses are the same
  pre-drawn ``\\boxed{word}`` strings from those words. We have no Mastermind env, so GEM's
  Mastermind is not compared.

A step is one action of a live agent. ``steps/CPU-s`` divides by this process's CPU time, which
other work on the machine changes less than wall time. The summary compares ours against the
fastest *text* peer on each task (ours through ``gym.make`` / ``env()``, the API a user calls),
and reads the env's share of rollout time from ``bench/results/rollout_throughput*.json`` when
``bench/rollout_throughput.py`` has been run (goal: under 1%).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import random
import sys
import time
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from _report import machine, write_report

import gym_tinker  # noqa: F401 (registers the tinker/ envs)

RESULTS_DIR = Path(__file__).parent / "results"
RESULTS = RESULTS_DIR / "peers.json"

PlayEpisode = Callable[[], int]
"""Plays one episode (or game) and returns the number of steps it took."""


@dataclass
class Contestant:
    task: str
    name: str
    library: str
    text: bool
    """Whether the observation the loop reads is one text (False: numpy, or a list of messages)."""
    ours: bool
    play: PlayEpisode = field(repr=False)
    headline: bool = False
    """Ours: the row judged against the peers (the API a user calls)."""
    best: dict[str, float] = field(default_factory=dict)


def measure(play: PlayEpisode, budget: float) -> dict[str, float]:
    """Plays episodes for about ``budget`` seconds; steps, episodes, wall and CPU seconds."""
    steps = episodes = 0
    cpu0, start = time.process_time(), time.perf_counter()
    deadline = start + budget
    while True:
        steps += play()
        episodes += 1
        if time.perf_counter() >= deadline:
            break
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    return {
        "steps": steps,
        "episodes": episodes,
        "seconds": wall,
        "cpu_seconds": cpu,
        "steps_per_s": steps / wall,
        "steps_per_cpu_s": steps / cpu if cpu > 0 else float("nan"),
        "episodes_per_s": episodes / wall,
    }


# --- single-agent envs ------------------------------------------------------------------------


def episode_player(env: Any, actions: list[str]) -> PlayEpisode:
    """Episodes of a Gymnasium-style env (``reset()``, 5-tuple ``step``) fed ``actions`` in a cycle."""
    step, reset, n = env.step, env.reset, len(actions)
    position = [0]

    def play() -> int:
        reset()
        i = start = position[0]
        while True:
            _, _, terminated, truncated, _ = step(actions[i % n])
            i += 1
            if terminated or truncated:
                position[0] = i
                return i - start

    return play


def guess_number_contestants(rng: random.Random, notes: list[str]) -> list[Contestant]:
    easy_like_gem = {
        "dataset": [{"secret": k, "low": 1, "high": 10} for k in range(1, 11)],
        "max_turns": 4,
    }
    guesses = [f"\\boxed{{{rng.randint(1, 10)}}}" for _ in range(4096)]
    wrapped = gym.make("tinker/GuessNumber-v0", **easy_like_gem)
    wrapped.reset(seed=0)
    bare = gym.make("tinker/GuessNumber-v0", **easy_like_gem).unwrapped
    bare.reset(seed=0)
    default_wrapped = gym.make("tinker/GuessNumber-v0")
    default_wrapped.reset(seed=0)
    default = gym.make("tinker/GuessNumber-v0").unwrapped
    default.reset(seed=0)
    wide = [f"\\boxed{{{rng.randint(1, 100)}}}" for _ in range(4096)]
    task, task_wide = "GuessNumber (1-10, 4 turns)", "GuessNumber (1-100, 10 turns)"
    rows = [
        Contestant(task, "ours, gym.make", "gym_tinker", True, True, episode_player(wrapped, guesses), True),
        Contestant(task, "ours, unwrapped", "gym_tinker", True, True, episode_player(bare, guesses)),
        Contestant(
            task_wide, "ours, gym.make", "gym_tinker", True, True, episode_player(default_wrapped, wide), True
        ),
        Contestant(task_wide, "ours, unwrapped", "gym_tinker", True, True, episode_player(default, wide)),
    ]
    gem = load_gem(notes)
    if gem is not None:
        from gem.envs.game_env.guess_the_number import GuessTheNumberEnv

        env = gem.make("game:GuessTheNumber-v0-easy")
        env.reset(seed=0)
        play = episode_player(env, guesses)
        rows.append(Contestant(task, "GEM game:GuessTheNumber-v0-easy", "gem", True, False, play))
        env = GuessTheNumberEnv(min_number=1, max_number=100, max_turns=10)
        env.reset(seed=0)
        play = episode_player(env, wide)
        rows.append(
            Contestant(task_wide, "GEM GuessTheNumberEnv(1, 100, max_turns=10)", "gem", True, False, play)
        )
    return rows


def wordle_contestants(rng: random.Random, notes: list[str]) -> list[Contestant]:
    from gym_tinker.envs.wordle_words import COMMON_WORDS

    guesses = [f"\\boxed{{{rng.choice(COMMON_WORDS)}}}" for _ in range(4096)]
    wrapped = gym.make("tinker/Wordle-v0", difficulty="easy")
    wrapped.reset(seed=0)
    bare = gym.make("tinker/Wordle-v0", difficulty="easy").unwrapped
    bare.reset(seed=0)
    task = "Wordle (5 letters, 6 turns)"
    rows = [
        Contestant(task, "ours, gym.make", "gym_tinker", True, True, episode_player(wrapped, guesses), True),
        Contestant(task, "ours, unwrapped", "gym_tinker", True, True, episode_player(bare, guesses)),
    ]
    gem = load_gem(notes)
    if gem is not None:
        env, label = gem_wordle(gem, list(COMMON_WORDS), notes)
        env.reset(seed=0)
        rows.append(Contestant(task, label, "gem", True, False, episode_player(env, guesses)))
    return rows


def gem_wordle(gem: Any, words: list[str], notes: list[str]) -> tuple[Any, str]:
    """GEM's WordleEnv (5 letters, 6 turns): as shipped if its NLTK corpus loads, else on ``words``."""
    import gem.envs.game_env.wordle as gem_wordle_module

    try:
        env = gem.make("game:Wordle-v0-easy")  # what a GEM user runs; downloads NLTK's `words`
        del env
    except LookupError as error:
        notes.append(
            "GEM game:Wordle-v0-easy cannot run here: its constructor calls nltk.download('words') "
            f"(no network; {type(error).__name__}). Measured instead: GEM's own WordleEnv class with "
            f"our {len(words)} easy answer words as its NLTK corpus (nltk.download made a no-op)."
        )
        gem_wordle_module.nltk = types.SimpleNamespace(download=lambda *args, **kwargs: True)  # type: ignore[attr-defined]
        gem_wordle_module.words = types.SimpleNamespace(words=lambda fileid=None: list(words))  # type: ignore[attr-defined]
        return gem_wordle_module.WordleEnv(
            word_length=5, max_turns=6
        ), "GEM WordleEnv (our words as its corpus)"
    return gem_wordle_module.WordleEnv(word_length=5, max_turns=6), "GEM WordleEnv"


# --- tic-tac-toe ------------------------------------------------------------------------------


def ours_tictactoe(env: Any, rng: random.Random) -> PlayEpisode:
    """Our AEC loop: ``last()`` renders the text observation; a random move from the legal ones."""
    seed = [0]

    def play() -> int:
        env.reset(seed=seed[0])
        seed[0] += 1
        moves = 0
        for _agent in env.agent_iter():
            _obs, _reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = info["legal_moves"]
            env.step(str(legal[int(rng.random() * len(legal))]))
            moves += 1
        return moves

    return play


def pettingzoo_tictactoe(rng: random.Random) -> PlayEpisode:
    from pettingzoo.classic import tictactoe_v3

    env = tictactoe_v3.env()
    seed = [0]

    def play() -> int:
        env.reset(seed=seed[0])
        seed[0] += 1
        moves = 0
        for _agent in env.agent_iter():
            obs, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[int(rng.random() * len(legal))]))
            moves += 1
        return moves

    return play


def textarena_tictactoe(ta: Any, env_id: str, rng: random.Random, fresh: bool) -> PlayEpisode:
    """TextArena's loop (``get_observation``, ``step``, ``close``); ``fresh``: ``ta.make`` per game."""
    shared = None if fresh else ta.make(env_id)
    seed = [0]

    def play() -> int:
        env = ta.make(env_id) if shared is None else shared
        raw = env
        while hasattr(raw, "env"):
            raw = raw.env
        env.reset(num_players=2, seed=seed[0])
        seed[0] += 1
        moves, done = 0, False
        while not done:
            _player, _observation = env.get_observation()
            board = raw.state.game_state["board"]
            legal = [3 * r + c for r in range(3) for c in range(3) if not board[r][c]]
            done, _info = env.step(f"[{legal[int(rng.random() * len(legal))]}]")
            moves += 1
        env.close()
        return moves

    return play


def tictactoe_contestants(rng: random.Random, notes: list[str]) -> list[Contestant]:
    from multiagent import tictactoe_v0

    task = "tic-tac-toe"
    rows = [
        Contestant(
            task, "ours, env()", "multiagent", True, True, ours_tictactoe(tictactoe_v0.env(), rng), True
        ),
        Contestant(
            task, "ours, raw_env", "multiagent", True, True, ours_tictactoe(tictactoe_v0.raw_env(), rng)
        ),
    ]
    if importlib.util.find_spec("pygame") is None:  # PettingZoo's classic games import it
        notes.append("PettingZoo classic.tictactoe_v3 skipped: it imports pygame (pip install -e .[bench])")
    else:
        play = pettingzoo_tictactoe(rng)
        rows.append(Contestant(task, "PettingZoo classic.tictactoe_v3", "pettingzoo", False, False, play))
    ta = load_textarena(notes)
    if ta is not None:
        for env_id, label in (
            ("TicTacToe-v0", "default wrappers"),
            ("TicTacToe-v0-train", "-train wrappers"),
        ):
            play = textarena_tictactoe(ta, env_id, rng, fresh=True)
            rows.append(
                Contestant(
                    task, f"TextArena {env_id} ({label}, new env per game)", "textarena", True, False, play
                )
            )
        play = textarena_tictactoe(ta, "TicTacToe-v0-raw", rng, fresh=False)
        rows.append(
            Contestant(task, "TextArena TicTacToe-v0-raw (message list)", "textarena", False, False, play)
        )
    return rows


def textarena_reused_env(ta: Any, rng: random.Random, games: int) -> dict[str, float]:
    """TicTacToe-v0 with one env for ``games`` games: its observation history grows without bound."""
    play = textarena_tictactoe(ta, "TicTacToe-v0", rng, fresh=False)
    first = measure_games(play, games // 10)
    for _ in range(games - 2 * (games // 10)):
        play()
    last = measure_games(play, games // 10)
    return {"games": games, "first_tenth_steps_per_s": first, "last_tenth_steps_per_s": last}


def measure_games(play: PlayEpisode, games: int) -> float:
    start, steps = time.perf_counter(), 0
    for _ in range(games):
        steps += play()
    return steps / (time.perf_counter() - start)


# --- peers ------------------------------------------------------------------------------------


def load_gem(notes: list[str]) -> Any:
    try:
        import gem
    except ImportError as error:
        note = f"GEM not measured: import gem failed ({error}); see the `bench` extra in pyproject.toml"
        if note not in notes:
            notes.append(note)
        return None
    logging.getLogger().setLevel(logging.WARNING)  # importing gem sets the root logger to INFO
    return gem


def load_textarena(notes: list[str]) -> Any:
    try:
        import textarena
    except ImportError as error:
        notes.append(f"TextArena not measured: import textarena failed ({error}); see the `bench` extra")
        return None
    return textarena


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("gym-tinker", "gymnasium", "pettingzoo", "textarena", "gem-llm", "nltk"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def rollout_env_share() -> list[dict[str, Any]]:
    """The env's share of rollout wall time, per rollout benchmark result found on disk."""
    shares = []
    for path in sorted(RESULTS_DIR.glob("rollout_throughput*.json")):
        report = json.loads(path.read_text())
        rows = report.get("rows", [])
        if rows:
            worst = max(rows, key=lambda row: row["env_share"])
            shares.append(
                {
                    "file": path.name,
                    "model": report.get("model"),
                    "max_env_share": worst["env_share"],
                    "at": f"{worst['env']} x{worst['num_envs']}",
                }
            )
    return shares


def summarize(contestants: list[Contestant]) -> list[dict[str, Any]]:
    summary = []
    for task in dict.fromkeys(c.task for c in contestants):
        rows = [c for c in contestants if c.task == task]
        ours = next((c for c in rows if c.headline), None)
        peers = [c for c in rows if not c.ours]
        text_peers = [c for c in peers if c.text] or peers
        if ours is None or not peers:
            continue
        fastest = max(text_peers, key=lambda c: c.best["steps_per_s"])
        fastest_any = max(peers, key=lambda c: c.best["steps_per_s"])
        ratio = ours.best["steps_per_s"] / fastest.best["steps_per_s"]
        summary.append(
            {
                "task": task,
                "ours": ours.name,
                "ours_steps_per_s": ours.best["steps_per_s"],
                "fastest_text_peer": fastest.name,
                "peer_steps_per_s": fastest.best["steps_per_s"],
                "ratio": ratio,
                "ratio_cpu": ours.best["steps_per_cpu_s"] / fastest.best["steps_per_cpu_s"],
                "ratio_vs_fastest_any_peer": ours.best["steps_per_s"] / fastest_any.best["steps_per_s"],
                "goal_met": min(ratio, ours.best["steps_per_cpu_s"] / fastest.best["steps_per_cpu_s"]) > 1.0,
            }
        )
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="0.2 s per measurement, 2 rounds")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per measurement (default 1)")
    parser.add_argument(
        "--repeats", type=int, default=None, help="rounds; the fastest of each is kept (default 3)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    budget = args.seconds or (0.2 if args.quick else 1.0)
    repeats = args.repeats or (2 if args.quick else 3)
    if budget <= 0 or repeats < 1:
        parser.error(f"expected --seconds > 0 and --repeats >= 1, got {budget} and {repeats}")
    load_before = os.getloadavg()[0]
    rng = random.Random(0)
    notes: list[str] = []
    contestants = [
        *tictactoe_contestants(rng, notes),
        *guess_number_contestants(rng, notes),
        *wordle_contestants(rng, notes),
    ]
    for c in contestants:  # warm-up: first-call costs (imports, caches)
        measure(c.play, 0.02)
    for _ in range(repeats):
        for c in contestants:
            run = measure(c.play, budget)
            if not c.best or run["steps_per_s"] > c.best["steps_per_s"]:
                c.best = run
    reused = None
    ta = load_textarena([])
    if ta is not None:
        reused = textarena_reused_env(ta, rng, 100 if args.quick else 500)
    summary = summarize(contestants)
    shares = rollout_env_share()

    print(f"{'task':<44} {'implementation':<66} {'text':>4} {'steps/s':>10} {'steps/CPU-s':>11} {'eps/s':>9}")
    for c in contestants:
        b = c.best
        print(
            f"{c.task:<44} {c.name:<66} {'yes' if c.text else 'no':>4} {b['steps_per_s']:>10,.0f} "
            f"{b['steps_per_cpu_s']:>11,.0f} {b['episodes_per_s']:>9,.0f}"
        )
    print()
    for s in summary:
        print(
            f"{s['task']}: {s['ours']} {s['ours_steps_per_s']:,.0f} steps/s = {s['ratio']:.2f}x the fastest "
            f"text peer ({s['fastest_text_peer']}, {s['peer_steps_per_s']:,.0f}); per CPU-second "
            f"{s['ratio_cpu']:.2f}x; goal (ahead by wall and CPU time) {'met' if s['goal_met'] else 'NOT met'}"
        )
    if reused is not None:
        print(
            f"TextArena TicTacToe-v0, one env for {reused['games']} games: "
            f"{reused['first_tenth_steps_per_s']:,.0f} steps/s over the first tenth of the games, "
            f"{reused['last_tenth_steps_per_s']:,.0f} over the last (its history is never cleared)"
        )
    for share in shares:
        print(
            f"env time in rollouts ({share['file']}, {share['model']}): at most "
            f"{100 * share['max_env_share']:.3f}% of wall time ({share['at']}); goal < 1%"
        )
    if not shares:
        print("env time in rollouts: run bench/rollout_throughput.py first (no result file found)")
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) before/after: {load_before:.2f}/{load_after:.2f} on {os.cpu_count()} CPUs")
    for note in notes:
        print(f"note: {note}")

    report = {
        "benchmark": "peers",
        "command": "python bench/peers.py" + (" --quick" if args.quick else ""),
        "seconds_per_measurement": budget,
        "repeats": repeats,
        "machine": machine(load_before, load_after),
        "versions": versions(),
        "rows": [{k: v for k, v in asdict(c).items() if k != "play"} for c in contestants],
        "summary": summary,
        "textarena_reused_env": reused,
        "rollout_env_share": shares,
        "notes": notes,
    }
    write_report(args.out, report)
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
