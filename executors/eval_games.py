"""``gym-tinker eval`` on games: a model's win, draw and loss rates against a bot, seats alternating."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from executors.rollout_jobs import wilson_interval

__all__ = ["model_policy"]

console = Console(width=140)


def model_policy(base: str, adapter: str | None, params: Any) -> Any:
    """A batch policy for games: an :class:`~executors.sampling.HFSampler` over ``base`` (plus ``adapter``).

    Each observation is one user message (game observations restate the board); each call
    samples with ``params`` and the next seed, so decisions do not share a random stream.
    """
    from dataclasses import replace

    from executors.eval_cli import EvalInputError
    from executors.models import ModelLoadError
    from executors.rollout_jobs import load_adapter_once
    from executors.sampling import HFSampler
    from executors.sampling.hf import AdapterError
    from multiagent.selfplay import batch_policy

    try:
        sampler = HFSampler(base)
        policy: Any = sampler
        if adapter is not None:
            policy = sampler.with_adapter(load_adapter_once(sampler, adapter))
    except (ModelLoadError, AdapterError) as exc:
        raise EvalInputError(str(exc)) from None
    calls = [0]

    @batch_policy
    def ask(observations: list[str], infos: list[Mapping[str, Any]]) -> Sequence[Any]:
        call_params = replace(params, seed=None if params.seed is None else params.seed + calls[0])
        calls[0] += 1
        return policy([[{"role": "user", "content": str(o)}] for o in observations], params=call_params)  # type: ignore[no-any-return]

    return ask


def _eval_game(
    game: str, base: str, adapter: str | None, opponent: str, settings: dict[str, Any], out_dir: Path | None
) -> dict[str, Any]:
    import pettingzoo

    from executors.eval_cli import EvalInputError, _rate_line
    from gym_tinker.policy import SamplingParams
    from gym_tinker.trajectory import save_jsonl
    from multiagent.bots import get_bot
    from multiagent.selfplay import MatchReport, play_matches, rotated_lineups

    env_kwargs = settings["env_kwargs"]

    def env_fn() -> Any:
        return pettingzoo.make("aec", f"tinker/{game}", **env_kwargs)  # type: ignore[attr-defined]

    try:
        probe = env_fn()
    except (TypeError, ValueError) as exc:
        raise EvalInputError(f"bad --env-kwarg for {game} ({env_kwargs}): {exc}") from None
    agents = list(probe.possible_agents)
    probe.close()
    params = SamplingParams(
        max_tokens=settings["max_tokens"], temperature=settings["temperature"], seed=settings["seed"]
    )
    policies = {
        "model": model_policy(base, adapter, params),
        "opponent": get_bot(game, opponent, seed=settings["seed"]),
    }
    games, seed, batch = settings["episodes"], settings["seed"], settings["batch_size"]
    # Seats rotate game by game; the games of one rotation share a seed (same deal from each seat).
    lineups = rotated_lineups(list(policies), agents, games)
    seeds = [seed + g // len(agents) for g in range(games)]
    began = time.perf_counter()
    results: list[Any] = []
    for start in range(0, games, batch):
        chunk = play_matches(
            env_fn, policies, lineups=lineups[start : start + batch], seeds=seeds[start : start + batch]
        )
        results += chunk.results
        console.print(f"games {start}-{start + len(chunk) - 1} done", highlight=False)
    seconds = time.perf_counter() - began
    report = MatchReport(tuple(results))
    record = report.summary()["model"]
    trajectories = report.trajectories(["model"])
    tokens = sum(len(turn.completion_ids or ()) for t in trajectories for turn in t.turns)
    sampling = "greedy" if params.temperature == 0 else f"temperature {params.temperature:g}"
    console.print(
        f"\n{game}: {base}{f' + adapter {adapter}' if adapter else ''} vs bot {opponent!r}, "
        f"{games} games (seats alternate), {sampling}",
        highlight=False,
    )
    counts = {"win": record.wins, "draw": record.draws, "loss": record.losses}
    for label, count in counts.items():
        console.print(_rate_line(label, count, games), highlight=False)
    console.print(f"{'mean reward':<13}{record.mean_reward:>7.3f}", highlight=False)
    rate = tokens / seconds if seconds else 0.0
    console.print(f"{'tokens/s':<13}{rate:>7.1f} ({tokens} sampled tokens)", highlight=False)
    for seat, (w, d, lo) in record.per_seat.items():
        console.print(f"  as {seat}: {w} wins, {d} draws, {lo} losses", highlight=False)
    _print_game_transcript(env_fn, results[0])
    summary: dict[str, Any] = {
        "env": game,
        "model": base,
        "adapter": adapter,
        "opponent": opponent,
        "games": games,
        "wins": record.wins,
        "draws": record.draws,
        "losses": record.losses,
        **{f"{key}_rate": count / games for key, count in counts.items()},
        **{f"{key}_ci95": list(wilson_interval(count, games)) for key, count in counts.items()},
        "mean_reward": record.mean_reward,
        "per_seat": {seat: list(counts) for seat, counts in record.per_seat.items()},
        "sampled_tokens": tokens,
        "tokens_per_s": tokens / seconds if seconds else 0.0,
        "trajectories": None,
    }
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        summary["trajectories"] = str(out_dir / "trajectories.jsonl")
        save_jsonl(out_dir / "trajectories.jsonl", trajectories)
    return summary


def _print_game_transcript(env_fn: Callable[[], Any], result: Any) -> None:
    """Replay a finished game from its seed and recorded moves, printing the moves in order."""
    from executors.eval_cli import _clip

    model_seat = next(agent for agent, name in result.seats.items() if name == "model")
    console.print(
        f"\n--- sample game: seed {result.seed}, model as {model_seat}, {result.outcome(model_seat)} ---",
        highlight=False,
    )
    moves = {agent: [turn.action for turn in turns] for agent, turns in result.turns.items()}
    env = env_fn()
    env.reset(seed=result.seed)
    shown_first, final = False, ""
    while env.agents:
        agent = env.agent_selection
        observation, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            if agent == model_seat:
                final = str(observation)
            env.step(None)
            continue
        if "legal_moves" in info and not info["legal_moves"]:
            env.step("")  # a waiting seat, as in play_matches
            continue
        if not moves[agent]:
            break
        if agent == model_seat and not shown_first:
            console.print(_clip(str(observation), 600), highlight=False, markup=False)
            shown_first = True
        action = moves[agent].pop(0)
        console.print(
            f">>> {agent} ({result.seats[agent]}): {_clip(action, 200)!r}", highlight=False, markup=False
        )
        env.step(action)
    env.close()
    if final:
        console.print(_clip(final, 600), highlight=False, markup=False)
