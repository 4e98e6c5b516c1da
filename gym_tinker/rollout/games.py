"""Rollouts of PettingZoo (AEC) text games: many games at once, a policy per seat or one shared, per-agent trajectories.

Each engine turn, every running game's agent-to-move is collected; the requests are grouped by
policy and each policy is called once with its whole batch. An agent's turn ends at its next
decision (its reward is everything it earned in between) or at the end of the game. With a
token sampler, each seat's dialogue is token-exact, as in :func:`gym_tinker.rollout.rollout`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_tinker.policy import SamplingParams
from gym_tinker.rollout.dialogue import Dialogue, jsonable, messages_for_reply
from gym_tinker.rollout.results import RolloutResult, RolloutStats, check_limits, check_seeds
from gym_tinker.rollout.sampling import PolicyCallError, PolicyRunner
from gym_tinker.trajectory import StopReason, Trajectory

__all__ = ["rollout_games"]


@dataclass
class _Game:
    index: int
    seed: int
    attempt: int
    env: Any
    dialogues: dict[str, Dialogue] = field(default_factory=dict)
    pending_reward: dict[str, float] = field(default_factory=dict)
    decision_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    decisions: dict[str, int] = field(default_factory=dict)


def _make_game_factory(game: Any, game_kwargs: Mapping[str, Any]) -> tuple[Callable[[], Any], str]:
    if isinstance(game, str):
        import pettingzoo

        return (lambda: pettingzoo.make("aec", game, **game_kwargs)), game  # type: ignore[attr-defined]
    maker = getattr(game, "env", None)
    if callable(maker) and not callable(game):  # a game module such as multiagent.tictactoe_v0
        name = str(getattr(game, "__name__", "game")).rsplit(".", 1)[-1]
        return (lambda: maker(**game_kwargs)), name
    if callable(game):
        return (lambda: game(**game_kwargs)), str(getattr(game, "__name__", type(game).__name__))
    raise TypeError(f"Expected a game module, a factory or a registered game id, got {type(game).__name__}")


class _GameRollout:
    def __init__(
        self,
        factory: Callable[[], Any],
        name: str,
        runners: dict[str, PolicyRunner],
        seeds: list[int],
        *,
        num_games: int,
        max_turns: int | None,
        token_budget: int | None,
        retries: int,
        keep_failed: bool,
        metadata: Mapping[str, Any],
    ):
        self.factory, self.name, self.runners, self.seeds = factory, name, runners, seeds
        self.max_turns, self.token_budget, self.retries = max_turns, token_budget, retries
        self.keep_failed, self.metadata = keep_failed, dict(metadata)
        self.stats = RolloutStats(episodes=len(seeds))
        self.queue: deque[int] = deque(range(len(seeds)))
        self.attempts = [0] * len(seeds)
        self.slots: list[_Game | None] = [None] * num_games
        self.envs: list[Any] = [None] * num_games
        self.results: dict[int, list[Trajectory]] = {}

    def run(self) -> RolloutResult:
        start = time.perf_counter()
        try:
            while self.queue or any(self.slots):
                self._fill_slots()
                requests = self._collect()
                self._play(requests)
        finally:
            for env in self.envs:
                if env is not None:
                    env.close()
        self.stats.wall_seconds = time.perf_counter() - start
        self.stats.policy_calls = sum(r.calls for r in {id(r): r for r in self.runners.values()}.values())
        return RolloutResult([t for i in sorted(self.results) for t in self.results[i]], self.stats)

    def _runner(self, agent: str) -> PolicyRunner:
        runner = self.runners.get(agent) or self.runners.get("*")
        if runner is None:
            raise KeyError(f"No policy for seat {agent!r}; policies were given for {sorted(self.runners)}")
        return runner

    def _fill_slots(self) -> None:
        for slot, game in enumerate(self.slots):
            if game is not None or not self.queue:
                continue
            index = self.queue.popleft()
            began = time.perf_counter()
            try:
                if self.envs[slot] is None:
                    self.envs[slot] = self.factory()
                self.envs[slot].reset(seed=self.seeds[index])
            except Exception as error:
                self.envs[slot] = None
                self._fail(index, f"game reset raised {type(error).__name__}: {error}")
                continue
            finally:
                self.stats.env_seconds += time.perf_counter() - began
            env = self.envs[slot]
            self.slots[slot] = _Game(index, self.seeds[index], self.attempts[index], env)

    def _collect(self) -> list[tuple[int, _Game, str]]:
        """The agent to move in every running game, its turn opened (previous turn closed)."""
        requests = []
        for slot, game in enumerate(self.slots):
            if game is None:
                continue
            try:
                agent = self._advance(game)
                if agent is None:
                    self._finish(slot, game)
                    continue
                stop = self._open_turn(game, agent)
            except Exception as error:
                self._fail_game(slot, game, f"{type(error).__name__}: {error}")
                continue
            if stop is not None:
                self._finish(slot, game, forced=(agent, stop))
                continue
            requests.append((slot, game, agent))
        return requests

    def _advance(self, game: _Game) -> str | None:
        """Play dead steps until a live agent is to move; ``None`` when the game is over."""
        env = game.env
        while env.agents:
            agent = env.agent_selection
            if not (env.terminations.get(agent) or env.truncations.get(agent)):
                return str(agent)
            env.step(None)
        return None

    def _open_turn(self, game: _Game, agent: str) -> StopReason | None:
        env = game.env
        observation = str(env.observe(agent))
        info = dict(env.infos.get(agent, {}))
        dialogue = game.dialogues.get(agent)
        if self.max_turns is not None and game.decisions.get(agent, 0) >= self.max_turns:
            return "truncated"
        if dialogue is None:
            runner = self._runner(agent)
            system_prompt = str(
                info.get("system_prompt") or getattr(env.unwrapped, "system_prompt", "") or ""
            )
            game.dialogues[agent] = Dialogue(
                observation, system_prompt=system_prompt, renderer=runner.renderer
            )
        else:
            reward = game.pending_reward.pop(agent, 0.0)
            previous = game.decision_info.get(agent, {})
            if dialogue.token_exact:
                reply_ids = dialogue.reply_ids(messages_for_reply(observation, {}))
                if (
                    self.token_budget is not None
                    and dialogue.sequence_length() + len(reply_ids) >= self.token_budget
                ):
                    dialogue.end_turn(reward, previous)
                    return "token_budget"
                dialogue.end_turn(reward, previous, reply=observation, reply_ids=reply_ids)
            else:
                dialogue.end_turn(reward, previous, reply=observation)
        game.decision_info[agent] = info
        return None

    def _play(self, requests: list[tuple[int, _Game, str]]) -> None:
        by_runner: dict[tuple[int, int], list[tuple[int, _Game, str]]] = {}
        for request in requests:
            _, game, agent = request
            runner = self._runner(agent)
            cap = runner.params.max_tokens
            if self.token_budget is not None:
                cap = min(cap, max(1, self.token_budget - game.dialogues[agent].sequence_length()))
            by_runner.setdefault((id(runner), cap), []).append(request)
        for (_, cap), batch in by_runner.items():
            runner = self._runner(batch[0][2])
            began = time.perf_counter()
            completions = runner.sample([game.dialogues[agent] for _, game, agent in batch], cap)
            self.stats.policy_seconds += time.perf_counter() - began
            for (slot, game, agent), completion in zip(batch, completions, strict=True):
                if self.slots[slot] is not game:
                    continue  # failed earlier in this turn
                if isinstance(completion, PolicyCallError):
                    self._fail_game(slot, game, f"seat {agent}: {completion}")
                    continue
                began = time.perf_counter()
                try:
                    game.dialogues[agent].act(completion)
                    game.decisions[agent] = game.decisions.get(agent, 0) + 1
                    game.env.step(completion.text)
                    for other, reward in game.env.rewards.items():
                        game.pending_reward[other] = game.pending_reward.get(other, 0.0) + float(reward)
                except Exception as error:
                    self._fail_game(slot, game, f"seat {agent}: {type(error).__name__}: {error}")
                    continue
                finally:
                    self.stats.env_seconds += time.perf_counter() - began
                self.stats.sampled_tokens += len(completion.token_ids)

    def _trajectories(self, game: _Game, reasons: Mapping[str, StopReason], **extra: Any) -> list[Trajectory]:
        out = []
        for agent, dialogue in game.dialogues.items():
            metadata = {
                **self.metadata,
                "episode": game.index,
                "attempt": game.attempt,
                "seats": sorted(game.dialogues),
                "result": str(getattr(game.env.unwrapped, "result", "") or ""),
                "token_exact": dialogue.token_exact,
                **extra,
            }
            out.append(
                Trajectory(
                    turns=tuple(dialogue.turns),
                    env_id=self.name,
                    seed=game.seed,
                    agent=agent,
                    stop_reason=reasons[agent],
                    metadata=jsonable(metadata),
                )
            )
        return out

    def _close_turns(self, game: _Game) -> None:
        for agent, dialogue in game.dialogues.items():
            if dialogue.has_open_turn:
                dialogue.end_turn(game.pending_reward.pop(agent, 0.0), game.decision_info.get(agent, {}))

    def _finish(self, slot: int, game: _Game, forced: tuple[str, StopReason] | None = None) -> None:
        self.slots[slot] = None
        self._close_turns(game)
        env = game.env
        reasons: dict[str, StopReason] = {}
        for agent in game.dialogues:
            if forced is not None:
                reasons[agent] = forced[1] if agent == forced[0] else "truncated"
            elif env.terminations.get(agent, True):  # agents removed from a finished game ended it
                reasons[agent] = "terminated" if not env.truncations.get(agent, False) else "truncated"
            else:
                reasons[agent] = "truncated"
        self.results[game.index] = self._trajectories(game, reasons)
        self.stats.completed += 1

    def _fail_game(self, slot: int, game: _Game, reason: str) -> None:
        self.slots[slot] = None
        self.envs[slot] = None  # a game that raised may be in any state: make a fresh one
        self._fail(game.index, reason, game)

    def _fail(self, index: int, reason: str, game: _Game | None = None) -> None:
        self.stats.failures.append(
            f"game {index} (seed {self.seeds[index]}, attempt {self.attempts[index]}): {reason}"
        )
        self.attempts[index] += 1
        if self.attempts[index] <= self.retries:
            self.stats.retried += 1
            self.queue.appendleft(index)
            return
        self.stats.dropped += 1
        if self.keep_failed and game is not None:
            self._close_turns(game)
            self.results[index] = self._trajectories(
                game, dict.fromkeys(game.dialogues, "error"), error=reason
            )


def rollout_games(
    game: Any,
    policies: Any,
    *,
    seeds: Sequence[int],
    num_games: int | None = None,
    max_turns: int | None = None,
    token_budget: int | None = None,
    params: SamplingParams | None = None,
    retries: int = 1,
    token_exact: bool | None = None,
    timeout: float | None = None,
    keep_failed: bool = False,
    metadata: Mapping[str, Any] | None = None,
    game_kwargs: Mapping[str, Any] | None = None,
) -> RolloutResult:
    """Play one game per seed, batching every policy's moves across games; return per-agent trajectories.

    Args:
        game: A game module with ``env()`` (e.g. ``multiagent.tictactoe_v0``), a factory
            returning an AEC env, or a registered PettingZoo id such as ``"tinker/tictactoe_v0"``.
        policies: One policy for every seat (self-play), or a mapping from seat (agent name) to
            policy; the key ``"*"`` covers seats not named. Policies are as for
            :func:`gym_tinker.rollout.rollout`.
        seeds: One seed per game.
        num_games: Games run at once (default: all).
        max_turns: Most decisions per agent; the game then stops with every seat ``"truncated"``.
        token_budget: Most tokens per seat's dialogue; the game stops when one seat runs out
            (that seat ``"token_budget"``, the others ``"truncated"``).
        params, retries, token_exact, timeout, keep_failed, metadata: As for
            :func:`~gym_tinker.rollout.rollout`; a failed game restarts from its seed.
        game_kwargs: Keyword arguments for the game's constructor.

    Returns:
        For each game in seed order, one trajectory per seat that moved (``agent`` set), with
        ``.stats``.

    Example:
        >>> import re
        >>> import multiagent.tictactoe_v0 as tictactoe
        >>> def lowest_legal(conversations):
        ...     return [re.search(r"Legal moves: ([0-9])", c[-1]["content"]).group(1) for c in conversations]
        >>> result = rollout_games(tictactoe, lowest_legal, seeds=[0])
        >>> [(t.agent, t.total_reward, t.stop_reason) for t in result]
        [('player_0', 1.0, 'terminated'), ('player_1', -1.0, 'terminated')]
    """
    seed_list = check_seeds(seeds)
    check_limits(max_turns, token_budget, retries)
    factory, name = _make_game_factory(game, game_kwargs or {})
    if isinstance(policies, Mapping):
        if not policies:
            raise ValueError("Expected at least one policy, got an empty mapping")
        runners: dict[str, PolicyRunner] = {}
        shared: dict[int, PolicyRunner] = {}  # the same policy object on two seats batches together
        for seat, policy in policies.items():
            runner = shared.get(id(policy)) or PolicyRunner(
                policy, params, token_exact=token_exact, timeout=timeout
            )
            shared[id(policy)] = runners[str(seat)] = runner
    else:
        runners = {"*": PolicyRunner(policies, params, token_exact=token_exact, timeout=timeout)}
    count = len(seed_list) if num_games is None else num_games
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"Expected `num_games` to be an int >= 1 or None, got {num_games!r}")
    engine = _GameRollout(
        factory,
        name,
        runners,
        seed_list,
        num_games=max(1, min(count, len(seed_list))),
        max_turns=max_turns,
        token_budget=token_budget,
        retries=retries,
        keep_failed=keep_failed,
        metadata=metadata or {},
    )
    return engine.run()
