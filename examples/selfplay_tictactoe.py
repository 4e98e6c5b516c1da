"""Self-play at tic-tac-toe with the plain PettingZoo loop: two bots, text in and text out.

This is the loop a PettingZoo user already writes; only the actions are text. Seats alternate
every game so both bots play X and O equally often.

Run::

    python examples/selfplay_tictactoe.py --games 100
    python examples/selfplay_tictactoe.py --games 1 --show   # print the game as it goes
"""

from __future__ import annotations

import argparse
from collections import Counter

from multiagent import tictactoe_v0
from multiagent.bots import get_bot


def main(argv: list[str] | None = None) -> dict[str, Counter[str]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100, help="games to play")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games and the random bot")
    parser.add_argument("--show", action="store_true", help="print every observation and move")
    args = parser.parse_args(argv)

    bots = {
        "minimax": get_bot("tictactoe_v0", "minimax"),
        "random": get_bot("tictactoe_v0", "random", seed=args.seed),
    }
    names = list(bots)
    results: dict[str, Counter[str]] = {name: Counter() for name in names}

    env = tictactoe_v0.env(render_mode="ansi")
    for game in range(args.games):
        env.reset(seed=args.seed + game)
        order = names if game % 2 == 0 else names[::-1]
        seats = dict(zip(env.agents, order, strict=True))
        totals = dict.fromkeys(env.agents, 0.0)
        for agent in env.agent_iter():
            observation, reward, termination, truncation, info = env.last()
            totals[agent] += reward
            if termination or truncation:
                action = None
            else:
                action = bots[seats[agent]](observation, info)
                if args.show:
                    print(f"{observation}\n>>> {seats[agent]} ({agent}): {action}\n")
            env.step(action)
        if args.show:
            print(env.render(), "\n")
        first, second = env.possible_agents
        for agent, other in ((first, second), (second, first)):
            outcome = (
                "win"
                if totals[agent] > totals[other]
                else "loss"
                if totals[agent] < totals[other]
                else "draw"
            )
            results[seats[agent]][outcome] += 1
    env.close()

    print(f"{args.games} games of tic-tac-toe")
    print(f"{'bot':<10}{'wins':>6}{'draws':>7}{'losses':>8}")
    for name in names:
        r = results[name]
        print(f"{name:<10}{r['win']:>6}{r['draw']:>7}{r['loss']:>8}")
    return results


if __name__ == "__main__":
    main()
