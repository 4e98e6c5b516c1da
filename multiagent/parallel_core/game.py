"""`IteratedTextGame`, the base class of the parallel-native iterated games, and its records."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

import numpy as np
from gymnasium import logger
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import parallel_to_aec, wrappers

from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS, cap_action, check_max_action_chars
from gym_tinker.spaces import TextObservation, TextSpace
from multiagent.parallel_core.choice import ParsedMove, choice_pattern, parse_choice
from multiagent.parsing import snippet

__all__ = ["IteratedTextGame", "ParallelStep", "RoundRecord", "aec_from_parallel"]


@dataclass(frozen=True)
class RoundRecord:
    """One resolved round."""

    number: int
    """1-based round number."""
    moves: Mapping[str, str | None]
    """Each player's move; ``None`` for a player that forfeited the round."""
    payoffs: Mapping[str, float]
    """Each player's reward for the round."""
    messages: Mapping[str, str] = field(default_factory=dict)
    """Cheap-talk messages sent with the moves (games that have them)."""


_Pair: TypeAlias = tuple[str | None, str | None]
ParallelStep: TypeAlias = tuple[
    dict[str, TextObservation], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
]
"""What ``step`` returns: observations, rewards, terminations, truncations, infos."""


def aec_from_parallel(parallel: ParallelEnv) -> AECEnv:
    """The AEC form of a parallel game, as PettingZoo builds it for its own parallel games."""
    return wrappers.OrderEnforcingWrapper(parallel_to_aec(parallel))


class IteratedTextGame(ParallelEnv[str, str, str]):
    """Base class: an iterated simultaneous-move game for ``player_0`` and ``player_1``.

    Subclasses set :attr:`title`, :attr:`rules`, :attr:`moves` and :attr:`aliases`, and
    implement :meth:`score_round`. They may override :meth:`parse_action` (to read more than
    the move, e.g. a message), :meth:`score_forfeit`, :meth:`reset_game` and the text hooks.

    Args:
        rounds: Rounds per game.
        max_cycles: Most ``step`` calls per game, retries included (``None``: never cuts a game).
        max_retries: Replies a player may get wrong in a round before forfeiting it.
        forfeit_penalty: A forfeiting player's reward for the round.
        history_window: Most recent rounds listed in an observation.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the game so far) or ``"human"``.
        max_action_chars: Characters of an action that are read; a longer action is cut, with
            a note in the observation (``None``: no cap; see :mod:`gym_tinker.limits`). Only
            the cut text is parsed and kept; ``infos[agent]["action_truncated"]`` is True on
            the step that cut it.

    Example:
        >>> class Pennies(IteratedTextGame):
        ...     title, moves = "Matching pennies", ("heads", "tails")
        ...     aliases = {"heads": "heads", "tails": "tails"}
        ...     def score_round(self, moves):
        ...         same = moves["player_0"] == moves["player_1"]
        ...         return {"player_0": 1.0 if same else -1.0, "player_1": -1.0 if same else 1.0}
        >>> game = Pennies(rounds=1)
        >>> _ = game.reset(seed=0)
        >>> _, rewards, terminations, _, _ = game.step({"player_0": "heads", "player_1": "<move>heads</move>"})
        >>> rewards, terminations["player_0"], game.agents
        ({'player_0': 1.0, 'player_1': -1.0}, True, [])
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "iterated_text_game",
        "is_parallelizable": True,
        "render_fps": 1,
    }
    title: ClassVar[str] = "Iterated game"
    #: One or two sentences of rules shown in every observation (instances may set their own).
    rules: str = ""
    moves: ClassVar[tuple[str, ...]] = ()
    aliases: ClassVar[Mapping[str, str]] = {}
    default_rounds: ClassVar[int] = 10
    _pattern: ClassVar[re.Pattern[str] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.aliases and "aliases" in cls.__dict__:
            cls._pattern = choice_pattern(cls.aliases)  # once per game class, never per move

    def __init__(
        self,
        *,
        rounds: int | None = None,
        max_cycles: int | None = None,
        max_retries: int | None = 2,
        forfeit_penalty: float = -1.0,
        history_window: int = 10,
        render_mode: str | None = None,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        rounds = self.default_rounds if rounds is None else rounds
        _check_int("rounds", rounds, 1)
        _check_int("history_window", history_window, 0)
        _check_int("max_retries", max_retries, 0, optional=True)
        if isinstance(forfeit_penalty, bool) or not isinstance(forfeit_penalty, (int, float)):
            raise ValueError(f"Expected `forfeit_penalty` to be a number, got {forfeit_penalty!r}")
        if max_cycles is None:
            # The most steps a game can take; with unlimited retries, a generous multiple.
            max_cycles = rounds * ((max_retries if max_retries is not None else 9) + 1)
        _check_int("max_cycles", max_cycles, 1, optional=True)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"Unsupported render_mode {render_mode!r}; expected one of {self.metadata['render_modes']} or None"
            )
        self.rounds = rounds
        self.max_cycles = max_cycles
        self.max_retries = max_retries
        self.forfeit_penalty = float(forfeit_penalty)
        self.history_window = history_window
        self.render_mode = render_mode
        self.max_action_chars = check_max_action_chars(max_action_chars)
        self.possible_agents = ["player_0", "player_1"]
        self.agents: list[str] = []
        self._observation_spaces = {agent: TextSpace() for agent in self.possible_agents}
        self._action_spaces = {agent: TextSpace() for agent in self.possible_agents}
        self.np_random, _ = seeding.np_random(None)
        self._legal = list(self.moves)
        self.history: list[RoundRecord] = []
        self.cycles = 0

    # --- what a game defines --------------------------------------------------------------

    def score_round(self, moves: Mapping[str, str]) -> dict[str, float]:
        """Each player's payoff for a round in which both moved legally."""
        raise NotImplementedError

    def score_forfeit(self, moves: Mapping[str, str | None]) -> dict[str, float]:
        """Payoffs when some player forfeited (its move is ``None``): it gets the penalty, the
        other gets 0. Games override this to give the other player a win."""
        return {agent: self.forfeit_penalty if move is None else 0.0 for agent, move in moves.items()}

    def parse_action(self, agent: str, text: str) -> tuple[ParsedMove, str]:
        """The move in ``text`` and the message sent with it (none by default)."""
        assert self._pattern is not None, f"{type(self).__name__} must set `aliases`"
        return parse_choice(text, self.aliases, self._pattern), ""

    def history_line(self, agent: str, record: RoundRecord) -> str:
        """One line of history from ``agent``'s point of view."""
        other = self._other(agent)
        return (
            f"Round {record.number}: you {record.moves[agent] or '(forfeit)'}, "
            f"opponent {record.moves[other] or '(forfeit)'}: you {_signed(record.payoffs[agent])}"
        )

    def last_round_text(self, agent: str, record: RoundRecord) -> str:
        """What ``agent`` is told about the round that just resolved."""
        return "Last round: " + self.history_line(agent, record).split(": ", 1)[1]

    def move_example(self) -> str:
        return f"<move>{self.moves[0]}</move>"

    # --- PettingZoo API -------------------------------------------------------------------

    def observation_space(self, agent: str) -> TextSpace:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> TextSpace:
        return self._action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, TextObservation], dict[str, dict[str, Any]]]:
        """Start a game: observations and infos of both players. Same seed, same game."""
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        self.agents = list(self.possible_agents)
        self.history = []
        self.cycles = 0
        self.scores = dict.fromkeys(self.agents, 0.0)
        self._locked: dict[str, tuple[str | None, str]] = {}
        self._retries_used = dict.fromkeys(self.agents, 0)
        # agent -> (the message for its observation, the bare reason for infos["error"])
        self._errors: dict[str, tuple[str, str]] = {}
        # agent -> the note that its action this step was cut
        self._cut_notes: dict[str, str] = {}
        self._lines: dict[str, list[str]] = {agent: [] for agent in self.agents}
        self._views: dict[str, tuple[_Pair, ...]] = {agent: () for agent in self.agents}
        self.reset_game(self.np_random)
        return self._observe_all(), self._infos()

    def reset_game(self, rng: np.random.Generator) -> None:
        """Hook for games with random setup (none by default)."""

    def step(self, actions: Mapping[str, str]) -> ParallelStep:
        """Apply every waiting player's answer (locked players may be left out).

        Raises:
            TypeError: an answer is not a ``str``.
            ValueError: a waiting player has no answer in ``actions``.
            gymnasium.error.ResetNeeded: the game is over (or was never reset).
        """
        if not self.agents:
            raise ResetNeeded(
                f"{type(self).__name__}.step was called with no live agents; call reset() first"
            )
        waiting = [agent for agent in self.agents if agent not in self._locked]
        for agent in waiting:  # validate everything before changing any state
            if agent not in actions:
                raise ValueError(f"No action for {agent!r}; expected an action for each of {waiting}")
            if not isinstance(actions[agent], str):
                action = actions[agent]
                raise TypeError(
                    f"Expected the action of {agent!r} to be a str, got {type(action).__name__}: {action!r:.80}"
                )
        self.cycles += 1
        self._errors = {}
        self._cut_notes = {}
        for agent in waiting:
            # Only the cut text is parsed or kept: a huge answer costs no more than a capped one.
            text, note = cap_action(actions[agent], self.max_action_chars)
            if note:
                self._cut_notes[agent] = note
            parsed, message = self.parse_action(agent, text)
            if parsed.move is not None:
                self._locked[agent] = (parsed.move, message)
                continue
            self._retries_used[agent] += 1
            said = f"Your answer {snippet(text)} was not accepted: {parsed.error}."
            if self.max_retries is not None and self._retries_used[agent] > self.max_retries:
                self._locked[agent] = (None, "")
                self._errors[agent] = (f"{said} Out of retries: you forfeit the round.", parsed.error)
            else:
                left = (
                    "unlimited" if self.max_retries is None else self.max_retries - self._retries_used[agent]
                )
                self._errors[agent] = (f"{said} Try again ({left} retries left).", parsed.error)
        rewards = dict.fromkeys(self.agents, 0.0)
        if len(self._locked) == len(self.agents):
            rewards = self._resolve_round()
        terminated = len(self.history) >= self.rounds
        truncated = not terminated and self.cycles >= self.max_cycles
        observations, infos = self._observe_all(), self._infos()
        agents = self.agents
        if terminated or truncated:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return (
            observations,
            rewards,
            dict.fromkeys(agents, terminated),
            dict.fromkeys(agents, truncated),
            infos,
        )

    def _resolve_round(self) -> dict[str, float]:
        moves = {agent: self._locked[agent][0] for agent in self.agents}
        messages = {agent: self._locked[agent][1] for agent in self.agents}
        if any(move is None for move in moves.values()):
            payoffs = self.score_forfeit(moves)
        else:
            payoffs = self.score_round(moves)  # type: ignore[arg-type]
        record = RoundRecord(len(self.history) + 1, moves, payoffs, messages)
        self.history.append(record)
        for agent in self.agents:
            self.scores[agent] += payoffs[agent]
            self._lines[agent].append(self.history_line(agent, record))
            self._views[agent] += ((moves[agent], moves[self._other(agent)]),)
        self._locked = {}
        self._retries_used = dict.fromkeys(self.agents, 0)
        return dict(payoffs)

    def _other(self, agent: str) -> str:
        return "player_1" if agent == "player_0" else "player_0"

    def _game_over(self) -> bool:
        return len(self.history) >= self.rounds or self.cycles >= self.max_cycles

    def _observe_all(self) -> dict[str, TextObservation]:
        return {agent: TextObservation(self.observe(agent)) for agent in self.agents}

    def observe(self, agent: str) -> str:
        """The text ``agent`` sees now."""
        done = self._game_over()
        played = len(self.history)
        other = self._other(agent)
        header = (
            f"{self.title}: game over after {played} of {self.rounds} rounds."
            if done
            else f"{self.title}: round {played + 1} of {self.rounds}. You are {agent}."
        )
        parts = [header]
        if agent in self._cut_notes:
            parts.insert(0, self._cut_notes[agent])
        if self.rules:
            parts.append(self.rules)
        parts.append(f"Score: you {_num(self.scores[agent])}, opponent {_num(self.scores[other])}.")
        earlier = self._lines[agent][:-1]
        if earlier and self.history_window:
            shown = earlier[-self.history_window :]
            more = f" (last {len(shown)} of {len(earlier)})" if len(shown) < len(earlier) else ""
            parts.append(f"Earlier rounds{more}:\n  " + "\n  ".join(shown))
        if self.history:
            parts.append(self.last_round_text(agent, self.history[-1]))
        if agent in self._errors:
            parts.append(self._errors[agent][0])
        if done:
            return "\n".join(parts)
        if agent in self._locked:
            parts.append("Your move is locked in; waiting for the opponent. Your reply this turn is ignored.")
        else:
            parts.append(
                f"Legal moves: {', '.join(self.moves)}. Answer with one move, e.g. {self.move_example()}."
            )
        return "\n".join(parts)

    def _infos(self) -> dict[str, dict[str, Any]]:
        done = self._game_over()
        infos = {}
        for agent in self.agents:
            locked = agent in self._locked and not done
            info: dict[str, Any] = {
                "legal_moves": [] if done or locked else list(self._legal),
                "retries_left": None
                if self.max_retries is None
                else self.max_retries - self._retries_used[agent],
                "round": min(len(self.history) + 1, self.rounds),
                "rounds": self.rounds,
                "locked": locked,
                "history": self._views[agent],
            }
            if agent in self._errors:
                info["error"] = self._errors[agent][1]
            if agent in self._cut_notes:
                info["action_truncated"] = True
            infos[agent] = info
        return infos

    def render(self) -> str | None:
        """The game so far: every round, both moves and the scores."""
        if self.render_mode is None:
            logger.warn("render() called without a render_mode; pass render_mode='ansi'")
            return None
        agents, scores = self.possible_agents, getattr(self, "scores", {})
        lines = [f"{self.title}, {len(self.history)} of {self.rounds} rounds played"]
        for r in self.history:
            cells = (f"{a} {r.moves[a] or '(forfeit)'} ({_signed(r.payoffs[a])})" for a in agents)
            lines.append(f"  round {r.number}: {', '.join(cells)}")
        lines.append("Score: " + ", ".join(f"{a} {_num(scores.get(a, 0.0))}" for a in agents))
        text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text


def _check_int(name: str, value: Any, low: int, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(
            f"Expected `{name}` to be {'None or ' if optional else ''}an int >= {low}, got {value!r}"
        )


def _num(value: float) -> str:
    return f"{value:g}"


def _signed(value: float) -> str:
    return f"{value:+g}" if value else "0"
