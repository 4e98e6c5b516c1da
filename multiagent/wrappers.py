"""The wrappers every turn-based text game uses: fast order enforcing, and the parallel view."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import turn_based_aec_to_parallel
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

__all__ = ["TextGameWrapper", "turn_based_env", "turn_based_parallel_env"]


class TextGameWrapper(OrderEnforcingWrapper[str, str, str | None]):
    """PettingZoo's :class:`~pettingzoo.utils.wrappers.OrderEnforcingWrapper`, with fast access.

    Same checks (``AttributeError`` for state read before ``reset``, errors for ``step``,
    ``observe``, ``render`` and ``agent_iter`` before ``reset``, a warning for ``step`` after the
    end), but the state the AEC loop reads every step (``agents``, ``agent_selection``,
    ``rewards``, ``terminations``, ``truncations``, ``infos``) and ``last()`` are forwarded
    directly instead of through ``__getattr__``, which raises and catches an ``AttributeError``
    per read; in a tic-tac-toe loop that overhead alone costs more than the game.

    Example:
        >>> from multiagent import tictactoe_v0
        >>> env = tictactoe_v0.env()
        >>> type(env).__name__, isinstance(env, OrderEnforcingWrapper)
        ('TextGameWrapper', True)
        >>> env.agents
        Traceback (most recent call last):
        ...
        AttributeError: agents cannot be accessed before reset
    """

    # Plain properties, not one generic helper: each read is on the hot path of every step.
    @property  # type: ignore[override]
    def agents(self) -> list[str]:
        if not self._has_reset:
            raise AttributeError("agents cannot be accessed before reset")
        return self.env.agents

    @property  # type: ignore[override]
    def agent_selection(self) -> str:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.agent_selection

    @property  # type: ignore[override]
    def rewards(self) -> dict[str, float]:
        if not self._has_reset:
            raise AttributeError("rewards cannot be accessed before reset")
        return self.env.rewards

    @property  # type: ignore[override]
    def terminations(self) -> dict[str, bool]:
        if not self._has_reset:
            raise AttributeError("terminations cannot be accessed before reset")
        return self.env.terminations

    @property  # type: ignore[override]
    def truncations(self) -> dict[str, bool]:
        if not self._has_reset:
            raise AttributeError("truncations cannot be accessed before reset")
        return self.env.truncations

    @property  # type: ignore[override]
    def infos(self) -> dict[str, dict[str, Any]]:
        if not self._has_reset:
            raise AttributeError("infos cannot be accessed before reset")
        return self.env.infos

    def last(self, observe: bool = True) -> tuple[str | None, float, bool, bool, dict[str, Any]]:
        """Observation, cumulative reward, terminated, truncated and info of the agent to act."""
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)


def turn_based_env(raw_env: Callable[..., AECEnv], **kwargs: Any) -> AECEnv:
    """``raw_env(**kwargs)`` in a :class:`TextGameWrapper`: what every game's ``env()`` returns.

    PettingZoo's ``AssertOutOfBounds``/``TerminateIllegal`` wrappers are for discrete actions;
    text games check their own moves.

    Example:
        >>> from multiagent import tictactoe_v0
        >>> env = turn_based_env(tictactoe_v0.raw_env, max_retries=0)
        >>> env.reset(); env.step("no idea")
        >>> env.terminations
        {'player_0': True, 'player_1': True}
    """
    return TextGameWrapper(raw_env(**kwargs))


def turn_based_parallel_env(raw_env: Callable[..., AECEnv], **kwargs: Any) -> ParallelEnv:
    """The parallel view of a turn-based game (PettingZoo's ``turn_based_aec_to_parallel``).

    Every step, every live agent sends an action; only the agent to move
    (``infos[agent]["active_agent"]``) is played and the others are ignored. Each parallel step
    is one cycle, so ``max_cycles`` counts parallel steps here.

    Example:
        >>> from multiagent import tictactoe_v0
        >>> env = turn_based_parallel_env(tictactoe_v0.raw_env)
        >>> observations, infos = env.reset(seed=0)
        >>> _, _, _, _, infos = env.step({"player_0": "5", "player_1": "ignored"})
        >>> infos["player_1"]["active_agent"], infos["player_1"]["legal_moves"]
        ('player_1', [1, 2, 3, 4, 6, 7, 8, 9])
    """
    kwargs.setdefault("steps_per_cycle", 1)
    return turn_based_aec_to_parallel(raw_env(**kwargs))
