"""An LLM plays tic-tac-toe against a bot: wins, draws and losses, with the seats alternating.

The model (``executors.sampling.HFSampler``, SmolLM2-135M-Instruct by default) answers each
board with a move in text; :func:`multiagent.selfplay.chat_batch_policy` turns it into a game
policy that batches the model's moves across all games in play. An unparsable or illegal move
costs a retry, and too many forfeit the game (a loss). Expect a 135M model to lose most games,
even against ``random`` (1 win in 4 in our run, the rest mostly forfeits): this is the baseline
that self-play training improves on.

Run::

    python examples/llm_vs_bot.py                          # 10 games vs the random bot
    python examples/llm_vs_bot.py --bot minimax --games 4
    python examples/llm_vs_bot.py --quick                  # tiny random model, 2 games (the test)
"""

from __future__ import annotations

import argparse
from typing import Any

from gym_tinker.policy import SamplingParams
from multiagent import tictactoe_v0
from multiagent.bots import get_bot
from multiagent.selfplay import chat_batch_policy, play_matches

SYSTEM_PROMPT = "You play tic-tac-toe. Reply with only the number (1-9) of a free square."


def main(argv: list[str] | None = None) -> dict[str, int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="model reference")
    parser.add_argument("--bot", default="random", choices=["random", "minimax"])
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument(
        "--temperature", type=float, default=0.7, help="0: greedy (the same move every retry)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny random model, 2 games (for the test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.model, args.games = "tiny-random", 2

    from executors.sampling import HFSampler  # loads torch; kept here so --help is instant

    sampler = HFSampler(args.model)
    llm = chat_batch_policy(
        sampler,
        system_prompt=SYSTEM_PROMPT,
        # A move is a few tokens; stopping at the first newline keeps the model from rambling on.
        params=SamplingParams(max_tokens=8, temperature=args.temperature, stop=("\n",), seed=0),
    )
    policies: dict[str, Any] = {"llm": llm, args.bot: get_bot("tictactoe_v0", args.bot, seed=0)}
    report = play_matches(tictactoe_v0.env, policies, games=args.games, seed=0)

    first = report.results[0]
    llm_seat = next(agent for agent, name in first.seats.items() if name == "llm")
    turns = first.trajectory(llm_seat).turns
    print(
        f"game 1, the LLM as {llm_seat} ({first.outcome(llm_seat)}); its first board:\n{turns[0].observation}"
    )
    print("its answers:", [turn.action.strip()[:40] for turn in turns])
    record = report.summary()["llm"]
    print(
        f"\n{args.model} vs the {args.bot} bot over {record.games} games: "
        f"{record.wins} wins, {record.draws} draws, {record.losses} losses "
        f"(per seat {dict(record.per_seat)})"
    )
    return {"wins": record.wins, "draws": record.draws, "losses": record.losses}


if __name__ == "__main__":
    main()
