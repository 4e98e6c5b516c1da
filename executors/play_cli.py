"""``gym-tinker play GAME``: a person plays a text game in the terminal against a bot or a model.

The person sees exactly what a model would see (the board as text, the legal moves, the
game's feedback on a rejected answer) and types an answer; the game's own parser decides what
it means, and an unaccepted answer is asked again as the game does (with its retry limit).
``quit`` or end of input (Ctrl-D) ends the game early.

Exit codes: 0 the game was played (or quit); 2 bad input (unknown game, bot, model or seat).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer
from rich.console import Console

from executors.eval_cli import EvalInputError, game_id, model_policy, resolve_model

__all__ = ["QUIT_WORDS", "parse_seat", "play_command"]

console = Console(width=140)
err = Console(stderr=True, width=140)

EXIT_BAD_INPUT = 2

QUIT_WORDS = frozenset({"quit", "exit"})
"""Answers that end the game instead of being sent to it."""


def parse_seat(seat: str, players: list[str]) -> str:
    """The agent a person plays for ``--seat`` (``1``/``first``, ``2``/``second``, or an agent name).

    Example:
        >>> parse_seat("second", ["player_0", "player_1"]), parse_seat("1", ["player_0", "player_1"])
        ('player_1', 'player_0')
        >>> parse_seat("3", ["player_0", "player_1"])
        Traceback (most recent call last):
        ...
        executors.eval_cli.EvalInputError: bad --seat '3': expected 1, 2, first, second, player_0 or player_1
    """
    names = {"1": 0, "first": 0, "2": 1, "second": 1}
    key = seat.strip().lower()
    if key in names and names[key] < len(players):
        return players[names[key]]
    if seat in players:
        return seat
    raise EvalInputError(f"bad --seat {seat!r}: expected 1, 2, first, second, {' or '.join(players)}")


def _opponent(game: str, spec: str, seed: int) -> tuple[str, Callable[[str, Mapping[str, Any]], str]]:
    """``(label, policy(observation, info) -> move)`` for ``--opponent``."""
    if spec.startswith("model:"):
        from gym_tinker.policy import SamplingParams

        ref = spec.removeprefix("model:")
        if not ref:
            raise EvalInputError("bad --opponent 'model:': expected model:REF, e.g. model:tiny-random")
        base, adapter = resolve_model(ref)
        batch = model_policy(base, adapter, SamplingParams(max_tokens=64, temperature=0.0, seed=seed))

        def ask(observation: str, info: Mapping[str, Any]) -> str:
            return str(batch([observation], [info])[0].text)

        return f"model {ref}", ask
    from multiagent.bots import BOTS, get_bot

    bots = BOTS.get(game, {})
    if spec not in bots:
        raise EvalInputError(
            f"unknown opponent {spec!r} for {game}: expected one of its bots ({', '.join(bots)}) or model:REF"
        )
    return f"bot {spec}", get_bot(game, spec, seed=seed)


def _outcome(totals: Mapping[str, float], me: str) -> str:
    best_other = max(reward for agent, reward in totals.items() if agent != me)
    return "win" if totals[me] > best_other else "draw" if totals[me] == best_other else "loss"


def play_command(
    game: Annotated[str, typer.Argument(help="Game id, e.g. tictactoe_v0 (see gym-tinker games).")],
    opponent: Annotated[
        str, typer.Option(help="A bot of the game (random, minimax, ...) or model:REF.")
    ] = "random",
    seat: Annotated[str, typer.Option(help="Your seat: 1 or first, 2 or second.")] = "1",
    seed: Annotated[int, typer.Option(help="Seed of the game and of the opponent.")] = 0,
) -> None:
    """Play a game in the terminal against a bot or a model; type quit (or Ctrl-D) to stop."""
    import pettingzoo

    import multiagent

    try:
        name = game_id(game)
        if name is None:
            games = ", ".join(g for g, _ in multiagent.list_games())
            raise EvalInputError(f"unknown game {game!r}; games: {games}")
        env = pettingzoo.make("aec", f"tinker/{name}")  # type: ignore[attr-defined]
        me = parse_seat(seat, list(env.possible_agents))
        label, policy = _opponent(name, opponent, seed)
    except EvalInputError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None

    env.reset(seed=seed)
    console.print(
        f"{name}: you are {me}, against {label} (seed {seed}); type quit to stop\n", highlight=False
    )
    totals = dict.fromkeys(env.possible_agents, 0.0)
    final = ""
    while env.agents:
        agent = env.agent_selection
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += float(reward)
        if terminated or truncated:
            if agent == me:
                final = str(observation)
            env.step(None)
            continue
        if "legal_moves" in info and not info["legal_moves"]:
            env.step("")  # nothing to decide (a waiting seat)
            continue
        if agent != me:
            move = policy(str(observation), info)
            console.print(f">>> {agent} ({label}) plays: {move!r}", highlight=False, markup=False)
            env.step(move)
            continue
        console.print(str(observation), highlight=False, markup=False)
        try:
            answer = str(typer.prompt("your move", prompt_suffix=" > "))
        except typer.Abort:  # end of input or Ctrl-C
            answer = "quit"
        if answer.strip().lower() in QUIT_WORDS:
            console.print("\ngame abandoned: no result", highlight=False)
            env.close()
            return
        env.step(answer)
        console.print()
    env.close()
    if final:
        console.print(final, highlight=False, markup=False)
    outcome = _outcome(totals, me)
    scores = ", ".join(f"{agent} {total:g}" for agent, total in totals.items())
    console.print(f"\nresult: {outcome} ({scores})", highlight=False)
