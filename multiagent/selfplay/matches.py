"""Playing games between policies: one (`play_match`) or many at once, batched (`play_matches`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pettingzoo import AECEnv, ParallelEnv

from gym_tinker.policy import Completion
from gym_tinker.trajectory import Turn
from multiagent.selfplay.policies import BatchPolicy, Policy, as_batch_policy
from multiagent.selfplay.results import MatchReport, MatchResult

__all__ = ["play_match", "play_matches", "rotated_lineups"]


def rotated_lineups(names: Sequence[str], agents: Sequence[str], games: int) -> list[dict[str, str]]:
    """Seat assignments for ``games`` games: game ``g`` seats ``names`` rotated by ``g``.

    Example:
        >>> rotated_lineups(["a", "b"], ["player_0", "player_1"], 3)
        [{'player_0': 'a', 'player_1': 'b'}, {'player_0': 'b', 'player_1': 'a'}, {'player_0': 'a', 'player_1': 'b'}]
    """
    if len(names) != len(agents):
        raise ValueError(f"Expected one policy per seat {list(agents)}, got {len(names)}: {list(names)}")
    n = len(agents)
    return [{agent: names[(i + g) % n] for i, agent in enumerate(agents)} for g in range(games)]


def play_match(
    env_fn: Callable[[], AECEnv | ParallelEnv],
    policies: Mapping[str, Policy | BatchPolicy],
    seed: int | None = None,
) -> MatchResult:
    """Play one game with ``policies`` keyed by agent (seat); the policies are named by their seat.

    Example:
        >>> from multiagent import rock_paper_scissors_v0
        >>> from multiagent.rock_paper_scissors.bots import ConstantBot
        >>> result = play_match(
        ...     lambda: rock_paper_scissors_v0.parallel_env(rounds=3),
        ...     {"player_0": ConstantBot("paper"), "player_1": ConstantBot("rock")},
        ...     seed=0,
        ... )
        >>> result.rewards, result.outcome("player_0")
        ({'player_0': 3.0, 'player_1': -3.0}, 'win')
    """
    lineup = {agent: agent for agent in policies}
    return play_matches(env_fn, policies, lineups=[lineup], seeds=[seed]).results[0]


def play_matches(
    env_fn: Callable[[], AECEnv | ParallelEnv],
    policies: Mapping[str, Policy | BatchPolicy],
    *,
    games: int | None = None,
    lineups: Sequence[Mapping[str, str]] | None = None,
    seed: int | None = 0,
    seeds: Sequence[int | None] | None = None,
) -> MatchReport:
    """Play many games at once, batching each policy's decisions across games.

    Args:
        env_fn: Makes a fresh env (AEC or Parallel), e.g. ``tictactoe_v0.env``.
        policies: Name -> policy (plain or batch).
        games: Number of games with rotated seats (``policies`` must have one entry per
            seat); ignored when ``lineups`` is given.
        lineups: One seat assignment (agent -> policy name) per game.
        seed: Game ``g`` of a rotation is reset with ``seed + g // n_seats``; ``None`` for
            unseeded games.
        seeds: One reset seed per game, overriding ``seed``.

    Example:
        >>> from multiagent import prisoners_dilemma_v0
        >>> from multiagent.prisoners_dilemma.bots import AlwaysDefect, TitForTat
        >>> report = play_matches(
        ...     lambda: prisoners_dilemma_v0.parallel_env(rounds=5),
        ...     {"tft": TitForTat(), "defector": AlwaysDefect()},
        ...     games=4,
        ... )
        >>> record = report.summary()["defector"]
        >>> record.wins, record.per_seat
        (4, {'player_0': (2, 0, 0), 'player_1': (2, 0, 0)})
    """
    batchers = {name: as_batch_policy(policy) for name, policy in policies.items()}
    if lineups is None:
        if not isinstance(games, int) or isinstance(games, bool) or games < 1:
            raise ValueError(f"Expected `games` to be an int >= 1 (or pass `lineups`), got {games!r}")
        probe = env_fn()
        agents = list(probe.possible_agents)
        probe.close()
        lineups = rotated_lineups(list(policies), agents, games)
        if seeds is None:
            seeds = [None if seed is None else seed + g // len(agents) for g in range(games)]
    if seeds is None:
        seeds = [None if seed is None else seed + g for g in range(len(lineups))]
    if len(seeds) != len(lineups):
        raise ValueError(f"Expected one seed per game ({len(lineups)}), got {len(seeds)}")
    for lineup in lineups:
        unknown = sorted(set(lineup.values()) - set(batchers))
        if unknown:
            raise ValueError(
                f"Lineup {dict(lineup)} names unknown policies {unknown}; known: {sorted(batchers)}"
            )
    running = [
        _Game(i, env_fn(), dict(lineup), s) for i, (lineup, s) in enumerate(zip(lineups, seeds, strict=True))
    ]
    finished: list[MatchResult] = []
    while running:
        decisions: dict[str, list[tuple[_Game, str, str, Mapping[str, Any]]]] = {}
        for game in running:
            for agent, observation, info in game.pending():
                decisions.setdefault(game.seats[agent], []).append((game, agent, observation, info))
        replies: dict[tuple[int, str], str | Completion] = {}
        for name, batch in decisions.items():
            answers = batchers[name]([d[2] for d in batch], [d[3] for d in batch])
            if len(answers) != len(batch):
                raise ValueError(
                    f"Policy {name!r} returned {len(answers)} replies for {len(batch)} observations"
                )
            for (game, agent, _, _), answer in zip(batch, answers, strict=True):
                if not isinstance(answer, (str, Completion)):
                    raise TypeError(
                        f"Policy {name!r} returned {type(answer).__name__} {answer!r:.60}; expected a str"
                    )
                replies[(game.index, agent)] = answer
        still = []
        for game in running:
            game.apply({agent: replies[(game.index, agent)] for agent in game.asked})
            if game.done:
                finished.append(game.result())
            else:
                still.append(game)
        running = still
    finished.sort(key=lambda result: result.index)
    return MatchReport(tuple(finished))


class _Game:
    """One running game: its env, seats, and the turns recorded so far."""

    def __init__(self, index: int, env: AECEnv | ParallelEnv, seats: dict[str, str], seed: int | None):
        self.index, self.env, self.seats, self.seed = index, env, seats, seed
        self.parallel = isinstance(env, ParallelEnv)
        self.turns: dict[str, list[Turn]] = {}
        self.totals: dict[str, float] = {}
        self.truncated = False
        self.done = False
        self.steps = 0
        self.asked: list[str] = []
        self._waiting: list[str] = []
        self._seen: dict[str, tuple[str, Mapping[str, Any]]] = {}
        if self.parallel:
            self._observations, self._infos = env.reset(seed=seed)
        else:
            env.reset(seed=seed)
        agents = set(env.possible_agents)
        if set(seats) != agents:
            raise ValueError(f"Lineup {seats} must seat exactly the agents {sorted(agents)}")
        for agent in env.possible_agents:
            self.turns[agent] = []
            self.totals[agent] = 0.0

    def _credit(self, agent: str, reward: float) -> None:
        if reward:
            self.totals[agent] += float(reward)
            turns = self.turns[agent]
            if turns:
                last = turns[-1]
                turns[-1] = Turn(**{**last.__dict__, "reward": last.reward + float(reward)})

    def pending(self) -> list[tuple[str, str, Mapping[str, Any]]]:
        """The decisions this game needs now: ``(agent, observation, info)``."""
        self.asked, self._waiting = [], []
        out: list[tuple[str, str, Mapping[str, Any]]] = []
        if self.parallel:
            for agent in self.env.agents:
                info = self._infos.get(agent, {})
                if "legal_moves" in info and not info["legal_moves"]:
                    self._waiting.append(agent)
                else:
                    out.append((agent, str(self._observations[agent]), info))
        else:
            env = self.env
            while env.agents:
                agent = env.agent_selection
                observation, reward, terminated, truncated, info = env.last()
                self._credit(agent, reward)
                if terminated or truncated:
                    self.truncated |= bool(truncated) and not terminated
                    env.step(None)
                    self.steps += 1
                    continue
                if "legal_moves" in info and not info["legal_moves"]:
                    self._waiting.append(agent)
                else:
                    out.append((agent, str(observation), info))
                break
            else:
                self.done = True
        self.asked = [agent for agent, _, _ in out]
        self._seen = {agent: (observation, info) for agent, observation, info in out}
        return out

    def apply(self, replies: Mapping[str, str | Completion]) -> None:
        """Record the replies as turns and step the env."""
        if self.done:
            return
        texts = {}
        for agent, reply in replies.items():
            observation, info = self._seen[agent]
            if isinstance(reply, Completion):
                text = reply.text
                turn = Turn(
                    observation,
                    text,
                    0.0,
                    dict(info),
                    prompt_ids=reply.prompt_ids,
                    completion_ids=reply.token_ids or None,
                    completion_logprobs=reply.logprobs if reply.token_ids else None,
                )
            else:
                text = reply
                turn = Turn(observation, text, 0.0, dict(info))
            self.turns[agent].append(turn)
            texts[agent] = text
        for agent in self._waiting:
            texts[agent] = ""
        self.steps += 1
        if self.parallel:
            step = self.env.step(texts)
            self._observations, rewards, terminations, truncations, self._infos = step
            for agent, reward in rewards.items():
                self._credit(agent, reward)
            if any(truncations.values()) and not any(terminations.values()):
                self.truncated = True
            self.done = not self.env.agents
        else:
            (agent,) = texts  # one agent acts per AEC step
            self.env.step(texts[agent])

    def result(self) -> MatchResult:
        self.env.close()
        return MatchResult(
            env_id=str(self.env.metadata.get("name", type(self.env.unwrapped).__name__)),
            seed=self.seed,
            seats=self.seats,
            rewards=dict(self.totals),
            stop_reason="truncated" if self.truncated else "terminated",
            steps=self.steps,
            turns={agent: tuple(turns) for agent, turns in self.turns.items()},
            index=self.index,
        )
