"""`TextEnv`: the base class of every text environment, a ``gymnasium.Env[str, str]``."""

from __future__ import annotations

from typing import Any, ClassVar, SupportsFloat

import gymnasium as gym
from gymnasium.error import ResetNeeded

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
    * puts the episode's ``system_prompt``, ``tools`` (OpenAI JSON schemas) and ``task_id`` into
      the reset ``info``. The answer never appears in ``info``.

    Args:
        max_turns: Actions per episode before truncation.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the transcript) or ``"human"``
            (prints it).

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

    def __init__(self, *, max_turns: int | None = None, render_mode: str | None = None):
        max_turns = self.default_max_turns if max_turns is None else max_turns
        if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
            raise ValueError(f"Expected `max_turns` to be an int >= 1, got {max_turns!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"Unsupported render_mode {render_mode!r}; expected one of {self.metadata['render_modes']} or None"
            )
        self.max_turns = max_turns
        self.render_mode = render_mode
        self.observation_space = TextSpace()
        self.action_space = TextSpace()
        self.turn = 0
        self._done = True
        self._transcript: list[tuple[str, str]] = []

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
        observation, info = self._reset(options)
        info.setdefault("system_prompt", "")
        info.setdefault("tools", [])
        info.setdefault("task_id", "")
        info["turn"] = 0
        self._transcript = [("observation", observation)]
        if self.render_mode == "human":
            self.render()
        return observation, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Take one action. Any string is legal; anything else is a ``TypeError``."""
        if not isinstance(action, str):
            raise TypeError(
                f"{type(self).__name__}.step expects the action as a str (the agent's message), "
                f"got {type(action).__name__}: {action!r:.80}"
            )
        if self._done:
            raise ResetNeeded(
                f"{type(self).__name__}.step was called "
                + ("before reset()" if not self._transcript else "after the episode ended")
                + "; call reset() to start an episode"
            )
        self.turn += 1
        observation, reward, terminated, truncated, info = self._step(action)
        if not terminated and self.turn >= self.max_turns:
            truncated = True
        self._done = bool(terminated or truncated)
        info["turn"] = self.turn
        self._transcript += [("action", action), ("observation", observation)]
        if self.render_mode == "human":
            self.render()
        return observation, reward, bool(terminated), bool(truncated), info

    def render(self) -> str | None:
        """The transcript so far (``"ansi"``), or print it (``"human"``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' to the env")
            return None
        text = "\n".join(f"[{role}] {content}" for role, content in self._transcript)
        if self.render_mode == "human":
            print(text)
            return None
        return text
