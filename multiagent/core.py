"""`TurnBasedTextGame`: the base class of the turn-based (AEC) text games.

Its wrappers (:func:`turn_based_env`, :func:`turn_based_parallel_env`) live in
:mod:`multiagent.wrappers` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar

import gymnasium
import numpy as np
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS, cap_action, check_max_action_chars
from gym_tinker.spaces import TextObservation, TextSpace
from multiagent.parsing import snippet
from multiagent.wrappers import TextGameWrapper, turn_based_env, turn_based_parallel_env

__all__ = [
    "GameOver",
    "Move",
    "TextGameWrapper",
    "TurnBasedTextGame",
    "turn_based_env",
    "turn_based_parallel_env",
]

Move = TypeVar("Move")
"""A game's parsed move: an int square or column, a word such as ``"bet"``, an offer..."""


class GameOver(NamedTuple):
    """What :meth:`TurnBasedTextGame._apply_move` returns when a move ends the game."""

    rewards: Mapping[str, float]
    """Final reward of every agent."""
    result: str
    """One sentence every agent sees, e.g. ``"X (player_0) wins with three in a row."``"""


class TurnBasedTextGame(AECEnv[str, str, str | None], Generic[Move]):
    """An AEC game where agents take turns and every observation and action is text.

    The base class does what every text game must do the same way, so a game only writes its
    rules:

    * seeding: ``reset(seed=...)`` seeds ``self.np_random`` (same seed, same game);
    * spaces: :class:`~gym_tinker.spaces.TextSpace` for observations and actions (any string is
      a legal action); observations are :class:`~gym_tinker.spaces.TextObservation` strings;
    * retries and forfeits: an unparsable or illegal answer costs a retry (the same agent moves
      again, its next observation says what was wrong); after ``max_retries`` retries in one
      turn, the next bad answer forfeits the game for ``forfeit_penalty``;
    * truncation after ``max_cycles`` cycles (a cycle is ``steps_per_cycle`` calls to
      ``step`` by live agents, by default one per agent; invalid attempts count);
    * a size cap: at most ``max_action_chars`` characters of an action are read; a longer one
      is cut (only the cut text is parsed and kept), the acting agent's next observation
      starts with a note saying so and ``infos[agent]["action_truncated"]`` is True on that
      step (see :mod:`gym_tinker.limits`);
    * lazy observations: :meth:`observe` renders text only when asked, and caches it until the
      next ``step``;
    * ``infos[agent]``: ``"legal_moves"`` (machine-readable, empty when it is not the agent's
      turn), ``"retries_left"``, ``"error"`` after a rejected answer, and
      ``"action_truncated"`` after a cut one;
    * PettingZoo bookkeeping: rewards, cumulative rewards, terminations, truncations, dead
      steps (``None`` actions), ``render`` in ``"ansi"`` and ``"human"`` modes.

    Extension points (implement the first five; the rest have defaults):

    * ``players`` (class attribute): the agent names, in turn order.
    * :meth:`_new_game`: set up a game from ``self.np_random`` and ``reset``'s ``options``;
      return the first agent to move.
    * :meth:`_legal_moves`: the legal moves of the agent to move, machine-readable.
    * :meth:`_interpret`: turn an answer (any string, at most ``max_action_chars`` long) into a
      legal move, or explain why it is not one; the base appends the explanation to that
      agent's next observation. It must take time linear in the answer's length
      (:func:`multiagent.testing.check_game_linear_step` checks it).
    * :meth:`_apply_move`: play a legal move; return :class:`GameOver` when the game ends.
    * :meth:`_observation_text`: what one agent sees (board, whose turn, legal moves, last move).
    * :meth:`_board_text`: the board for ``render()`` (default: the first agent's view).
    * :meth:`_next_agent`: whose turn after a legal move (default: the next in ``players``).
    * :meth:`_forfeit_rewards`: rewards when an agent forfeits (default: the offender gets
      ``forfeit_penalty``, everyone else 0).

    State a subclass can read: ``self.game_over``, ``self.result`` (the result sentence),
    ``self.num_steps``, ``self.agent_selection``.

    Args:
        max_retries: Invalid answers an agent may give per turn before the next one forfeits;
            ``None`` for no limit (``max_cycles`` still ends the game).
        forfeit_penalty: Reward of an agent that forfeits.
        max_cycles: Cycles before the game is truncated (``None``: the class default).
        steps_per_cycle: ``step`` calls per cycle; ``None`` means one per agent. The parallel
            view of a turn-based game uses 1, because there each parallel step is a cycle.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the board) or ``"human"``.
        max_action_chars: Characters of an action that are read; a longer action is cut, with
            a note in the observation (``None``: no cap; see :mod:`gym_tinker.limits`).

    Example:
        >>> class Race(TurnBasedTextGame[int]):
        ...     '''First to say 3 wins.'''
        ...     players = ("player_0", "player_1")
        ...     def _new_game(self, options):
        ...         return "player_0"
        ...     def _legal_moves(self, agent):
        ...         return [1, 2, 3]
        ...     def _interpret(self, agent, text):
        ...         ok = text.strip() in ("1", "2", "3")
        ...         return (int(text), "") if ok else (None, "say 1, 2 or 3")
        ...     def _apply_move(self, agent, move):
        ...         if move == 3:
        ...             other = self._next_agent(agent)
        ...             return GameOver({agent: 1.0, other: -1.0}, f"{agent} said 3.")
        ...         return None
        ...     def _observation_text(self, agent):
        ...         return self.result or f"{self.agent_selection} to move"
        >>> game = Race(max_retries=1)
        >>> game.reset(seed=0)
        >>> game.step("two"); game.infos["player_0"]["error"]
        'say 1, 2 or 3'
        >>> game.step("2"); game.step("3")
        >>> game.rewards, game.observe("player_0")
        ({'player_0': -1.0, 'player_1': 1.0}, 'player_1 said 3.')
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "turn_based_text_game",
        "is_parallelizable": False,
        "render_fps": 1,
    }
    #: Agent names in turn order.
    players: ClassVar[tuple[str, ...]] = ()
    #: One line describing the game (``multiagent.GAMES`` holds the same line for listing games
    #: without importing them).
    description: ClassVar[str] = ""
    #: Default for ``max_cycles``.
    default_max_cycles: ClassVar[int] = 100

    def __init__(
        self,
        *,
        max_retries: int | None = 2,
        forfeit_penalty: float = -1.0,
        max_cycles: int | None = None,
        steps_per_cycle: int | None = None,
        render_mode: str | None = None,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        super().__init__()
        if len(self.players) < 1:
            raise TypeError(f"{type(self).__name__} must set the class attribute `players`")
        if max_retries is not None and (not _is_int(max_retries) or max_retries < 0):
            raise ValueError(f"Expected `max_retries` to be None or an int >= 0, got {max_retries!r}")
        if isinstance(forfeit_penalty, bool) or not isinstance(forfeit_penalty, (int, float)):
            raise ValueError(f"Expected `forfeit_penalty` to be a number, got {forfeit_penalty!r}")
        max_cycles = self.default_max_cycles if max_cycles is None else max_cycles
        if not _is_int(max_cycles) or max_cycles < 1:
            raise ValueError(f"Expected `max_cycles` to be an int >= 1, got {max_cycles!r}")
        steps_per_cycle = len(self.players) if steps_per_cycle is None else steps_per_cycle
        if not _is_int(steps_per_cycle) or steps_per_cycle < 1:
            raise ValueError(f"Expected `steps_per_cycle` to be None or an int >= 1, got {steps_per_cycle!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"Unsupported render_mode {render_mode!r}; expected one of {self.metadata['render_modes']} or None"
            )
        self.max_retries = max_retries
        self.forfeit_penalty = float(forfeit_penalty)
        self.max_cycles = max_cycles
        self.steps_per_cycle = steps_per_cycle
        self.render_mode = render_mode
        self.max_action_chars = check_max_action_chars(max_action_chars)
        self.possible_agents = list(self.players)
        self._successor = dict(zip(self.players, self.players[1:] + self.players[:1], strict=True))
        self._observation_spaces = {a: TextSpace() for a in self.possible_agents}
        self._action_spaces = {a: TextSpace() for a in self.possible_agents}
        self._np_random: np.random.Generator | None = None
        self._np_random_seed: int | None = None
        self.agents: list[str] = []
        self.game_over = True
        self.result = ""
        self.num_steps = 0
        self._retries_used = 0
        # agent -> (the message shown in its observation, the bare reason for infos["error"])
        self._errors: dict[str, tuple[str, str]] = {}
        # agent -> the note that its last action was cut, shown until it acts again
        self._cut_notes: dict[str, str] = {}
        self._obs_cache: dict[str, TextObservation] = {}

    # --- to implement ---------------------------------------------------------------------

    def _new_game(self, options: dict[str, Any] | None) -> str:
        """Set up a new game using ``self.np_random``; return the agent that moves first.

        ``options`` is what the user passed to ``reset``; ignore keys you do not know
        (PettingZoo's ``api_test`` passes ``{"options": 1}``).
        """
        raise NotImplementedError

    def _legal_moves(self, agent: str) -> list[Any]:
        """The legal moves of ``agent``, the agent to move, as ints or strings."""
        raise NotImplementedError

    def _interpret(self, agent: str, text: str) -> tuple[Move | None, str]:
        """``(move, "")`` for a legal move, or ``(None, why)`` for an unparsable or illegal one.

        Must accept any string without raising. ``why`` is shown to the agent.
        """
        raise NotImplementedError

    def _apply_move(self, agent: str, move: Move) -> GameOver | None:
        """Play a legal move; return :class:`GameOver` if the game ended, else None."""
        raise NotImplementedError

    def _observation_text(self, agent: str) -> str:
        """What ``agent`` sees now, including when it is not its turn and after the game."""
        raise NotImplementedError

    # --- may override ---------------------------------------------------------------------

    def _board_text(self) -> str:
        """The game as ``render()`` shows it; by default the first agent's view."""
        return self._observation_text(self.possible_agents[0])

    def _next_agent(self, agent: str) -> str:
        """Whose turn after ``agent`` made a legal move: the next agent in ``players``."""
        return self._successor[agent]

    #: What the other agents get when one forfeits (board games count it as their win).
    forfeit_opponent_reward: float = 0.0

    def _forfeit_rewards(self, agent: str) -> dict[str, float]:
        """Rewards when ``agent`` forfeits: ``forfeit_penalty`` for it, ``forfeit_opponent_reward`` for the others."""
        return {
            a: (self.forfeit_penalty if a == agent else self.forfeit_opponent_reward)
            for a in self.possible_agents
        }

    # --- the PettingZoo API ---------------------------------------------------------------

    @property
    def np_random(self) -> np.random.Generator:
        """The game's random generator, seeded by ``reset(seed=...)`` (randomly without a seed)."""
        if self._np_random is None:
            self._np_random, seed = seeding.np_random(self._np_random_seed)
            self._np_random_seed = seed
        return self._np_random

    @property
    def np_random_seed(self) -> int | None:
        """The seed of :attr:`np_random`."""
        self.np_random  # noqa: B018 (creates the generator, and so the seed, if needed)
        return self._np_random_seed

    def observation_space(self, agent: str) -> gymnasium.spaces.Space[str]:
        """The (shared, unbounded) text space of ``agent``'s observations."""
        return self._observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> gymnasium.spaces.Space[str]:
        """The text space of ``agent``'s actions: any string."""
        return self._action_spaces[self._known(agent)]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new game. Same ``seed``, same game."""
        if seed is not None:
            # Created on first use: games without chance (tic-tac-toe) never pay for seeding.
            self._np_random, self._np_random_seed = None, seed
        # The game first: if the options are bad it raises before the bookkeeping is touched.
        first = self._known(self._new_game(options))
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.game_over = False
        self.result = ""
        self.num_steps = 0
        self._step_limit = self.max_cycles * self.steps_per_cycle
        self._retries_used = 0
        self._errors = {}
        self._cut_notes = {}
        self._skip_agent_selection = None
        self.agent_selection = first
        self._obs_cache = {}
        self._update_infos()
        if self.render_mode == "human":
            self.render()

    def step(self, action: str | None) -> None:
        """Play ``action`` (any string) for ``agent_selection``; ``None`` for a finished agent."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if not isinstance(action, str):
            raise TypeError(
                f"{type(self).__name__}.step expects the move of {agent!r} as a str, "
                f"got {type(action).__name__}: {action!r:.80}"
            )
        self._cumulative_rewards[agent] = 0.0
        for a in self.rewards:
            self.rewards[a] = 0.0
        self.num_steps += 1
        # Only the cut text is parsed or kept: a huge answer costs no more than a capped one.
        action, note = cap_action(action, self.max_action_chars)
        if note:
            self._cut_notes[agent] = note
        elif self._cut_notes:
            self._cut_notes.pop(agent, None)
        move, error = self._interpret(agent, action)
        if move is None:
            self._reject(agent, action, error or "not a legal move")
        else:
            self._retries_used = 0
            if self._errors:
                self._errors.pop(agent, None)
            over = self._apply_move(agent, move)
            if over is not None:
                self._end(over.rewards, over.result)
            else:
                self.agent_selection = self._next_agent(agent)
        if not self.game_over and self.num_steps >= self._step_limit:
            self.game_over = True
            self.result = f"The game was stopped after {self.max_cycles} cycles without a result."
            for a in self.agents:
                self.truncations[a] = True
        self._accumulate_rewards()
        self._obs_cache.clear()
        self._update_infos()
        if note and agent in self.infos:
            self.infos[agent]["action_truncated"] = True
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> TextObservation:
        """The text ``agent`` sees now (rendered on demand, cached until the next step)."""
        cached = self._obs_cache.get(agent)
        if cached is not None:
            return cached
        text = self._observation_text(self._known(agent))
        error = self._errors.get(agent)
        if error is not None and not self.game_over:
            text = f"{text}\n{error[0]}"
        note = self._cut_notes.get(agent)
        if note is not None:
            text = f"{note}\n{text}"
        obs = self._obs_cache[agent] = TextObservation(text)
        return obs

    def render(self) -> str | None:
        """The board as text (``"ansi"``), or print it (``"human"``)."""
        if self.render_mode is None:
            gymnasium.logger.warn(f"render() called without a render_mode on {type(self).__name__}")
            return None
        text = self._board_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release; present because PettingZoo expects ``close`` beside ``render``."""

    # --- internals ------------------------------------------------------------------------

    def _known(self, agent: str) -> str:
        if agent not in self._observation_spaces:
            raise KeyError(f"Unknown agent {agent!r}; expected one of {self.possible_agents}")
        return agent

    def _reject(self, agent: str, action: str, error: str) -> None:
        self._retries_used += 1
        if self.max_retries is not None and self._retries_used > self.max_retries:
            self._end(
                self._forfeit_rewards(agent),
                f"{agent} forfeits after {self._retries_used} invalid answers "
                f"(the last, {snippet(action)}: {error}).",
            )
            return
        if self.max_retries is None:
            left = "unlimited retries"
        else:
            n = self.max_retries - self._retries_used
            left = f"{n} {'retry' if n == 1 else 'retries'}"
        self._errors[agent] = (
            f"Your answer {snippet(action)} was not accepted: {error}. Try again ({left} left).",
            error,
        )

    def _end(self, rewards: Mapping[str, float], result: str) -> None:
        self.game_over = True
        self.result = result
        for a in self.agents:
            self.rewards[a] = float(rewards.get(a, 0.0))
            self.terminations[a] = True
        self._errors = {}

    def _update_infos(self) -> None:
        selected = self.agent_selection
        live = not self.game_over
        left = None if self.max_retries is None else self.max_retries - self._retries_used
        infos: dict[str, dict[str, Any]] = {}
        for a in self.agents:
            if live and a == selected:
                info: dict[str, Any] = {"legal_moves": self._legal_moves(a), "retries_left": left}
                error = self._errors.get(a)
                if error is not None:
                    info["error"] = error[1]
                infos[a] = info
            else:
                infos[a] = {"legal_moves": [], "retries_left": left if live else 0}
        self.infos = infos


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
