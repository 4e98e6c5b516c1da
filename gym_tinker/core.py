"""`TextEnv`: the base class of every text environment, a ``gymnasium.Env[str, str]``."""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn, SupportsFloat

import gymnasium as gym
from gymnasium.error import ResetNeeded

from gym_tinker.limits import DEFAULT_MAX_ACTION_CHARS, cap_action, check_max_action_chars
from gym_tinker.spaces import TextSpace

__all__ = ["StepResult", "TextEnv"]

StepResult = tuple[str, SupportsFloat, bool, bool, dict[str, Any]]
"""What ``step`` returns: observation, reward, terminated, truncated, info."""


class TextEnv(gym.Env[str, str]):
    """A Gymnasium environment whose observations and actions are strings.

    Subclasses implement :meth:`_reset` and :meth:`_step`. This base class does what every text
    env must do the same way:

    * seeds ``self.np_random`` through ``gymnasium.Env.reset`` (same seed, same episode);
    * rejects non-string actions with a ``TypeError`` (any string is a legal action);
    * raises :class:`gymnasium.error.ResetNeeded` when stepped before ``reset`` or after the
      episode ended;
    * counts turns and truncates at ``max_turns`` (``info["turn"]`` is the number of actions
      taken so far);
    * reads at most ``max_action_chars`` characters of an action: a longer one is cut, the
      observation starts with a note saying so and ``info["action_truncated"]`` is True (see
      :mod:`gym_tinker.limits`);
    * puts the episode's ``system_prompt``, ``tools`` (OpenAI JSON schemas) and ``task_id`` into
      the reset ``info``. The answer never appears in ``info``.

    Args:
        max_turns: Actions per episode before truncation.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the transcript) or ``"human"``
            (prints it).
        max_action_chars: Characters of an action that are read (``None``: all of them).

    Example:
        >>> class Echo(TextEnv):
        ...     def _reset(self, options):
        ...         return "Say hi.", {}
        ...     def _step(self, action):
        ...         done = action.strip().lower() == "hi"
        ...         return ("Well done." if done else "Say hi."), float(done), done, False, {}
        >>> env = Echo(max_turns=3)
        >>> env.reset(seed=0)[0]
        'Say hi.'
        >>> env.step("hello")[1:4], env.step("hi")[1:4]
        ((0.0, False, False), (1.0, True, False))
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 1}  # noqa: RUF012 (Gymnasium's own type)

    #: One line describing the task, shown by ``gym-tinker envs``.
    description: ClassVar[str] = ""
    #: Default for ``max_turns``, the turn limit the env enforces itself (see ``gym_tinker.registration``).
    default_max_turns: ClassVar[int] = 1

    def __init__(
        self,
        *,
        max_turns: int | None = None,
        render_mode: str | None = None,
        max_action_chars: int | None = DEFAULT_MAX_ACTION_CHARS,
    ):
        max_turns = self.default_max_turns if max_turns is None else max_turns
        if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
            raise ValueError(f"Expected `max_turns` to be an int >= 1, got {max_turns!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"Unsupported render_mode {render_mode!r}; expected one of {self.metadata['render_modes']} or None"
            )
        self.max_turns = max_turns
        self.render_mode = render_mode
        self.max_action_chars = check_max_action_chars(max_action_chars)
        self.observation_space = TextSpace()
        self.action_space = TextSpace()
        self.turn = 0
        self._done = True
        self._started = False
        # Observations and actions in turn, starting with an observation; kept only for `render`.
        self._transcript: list[str] = []

    # --- to implement ---------------------------------------------------------------------

    def _reset(self, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        """Start a new episode using ``self.np_random``; return the first observation and info."""
        raise NotImplementedError

    def _step(self, action: str) -> StepResult:
        """Apply one action (already checked to be a ``str``)."""
        raise NotImplementedError

    # --- the Gymnasium API ----------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode. Same ``seed``, same episode."""
        super().reset(seed=seed)
        self.turn = 0
        self._done = False
        self._started = True
        observation, info = self._reset(options)
        if "system_prompt" not in info:
            info["system_prompt"] = ""
        if "tools" not in info:
            info["tools"] = []
        if "task_id" not in info:
            info["task_id"] = ""
        info["turn"] = 0
        if self.render_mode is not None:
            self._transcript = [observation]
            if self.render_mode == "human":
                self.render()
        return observation, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Take one action. Any string is legal; anything else is a ``TypeError``."""
        if self._done or not isinstance(action, str):
            self._reject(action)
        self.turn += 1
        action, note = cap_action(action, self.max_action_chars)
        observation, reward, terminated, truncated, info = self._step(action)
        if note:
            observation = f"{note}\n{observation}"
            info["action_truncated"] = True
        terminated = bool(terminated)
        truncated = bool(truncated) or (not terminated and self.turn >= self.max_turns)
        self._done = terminated or truncated
        info["turn"] = self.turn
        if self.render_mode is not None:
            self._transcript += (action, observation)
            if self.render_mode == "human":
                self.render()
        return observation, reward, terminated, truncated, info

    def _reject(self, action: Any) -> NoReturn:
        """Raise the error for a step that cannot be taken (a non-string action, or no live episode)."""
        if not isinstance(action, str):
            raise TypeError(
                f"{type(self).__name__}.step expects the action as a str (the agent's message), "
                f"got {type(action).__name__}: {action!r:.80}"
            )
        raise ResetNeeded(
            f"{type(self).__name__}.step was called "
            + ("after the episode ended" if self._started else "before reset()")
            + "; call reset() to start an episode"
        )

    def render(self) -> str | None:
        """The transcript so far (``"ansi"``), or print it (``"human"``).

        The transcript is kept only by an env made with a ``render_mode`` (the hot path of a
        training loop skips it).
        """
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' to the env")
            return None
        roles = ("observation", "action")
        text = "\n".join(f"[{roles[i % 2]}] {content}" for i, content in enumerate(self._transcript))
        if self.render_mode == "human":
            print(text)
            return None
        return text
