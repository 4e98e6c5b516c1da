"""Policies for self-play: plain callables, batch policies, and chat policies adapted to batches."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

from gym_tinker.policy import ChatPolicy, Completion, SamplingParams

__all__ = ["BatchPolicy", "Policy", "as_batch_policy", "batch_policy", "chat_batch_policy"]

Policy: TypeAlias = Callable[[str, Mapping[str, Any]], str]
"""A plain policy: one observation and its info in, one reply out."""


@runtime_checkable
class BatchPolicy(Protocol):
    """Many decisions in one call: ``(observations, infos) -> replies`` (same length, same order).

    Replies are strings or :class:`~gym_tinker.policy.Completion` objects. A class is a batch
    policy when it sets ``batched = True``; decorate a function with :func:`batch_policy`.
    """

    batched: bool

    def __call__(
        self, observations: list[str], infos: list[Mapping[str, Any]]
    ) -> Sequence[str | Completion]: ...


def batch_policy(
    function: Callable[[list[str], list[Mapping[str, Any]]], Sequence[str | Completion]],
) -> BatchPolicy:
    """Mark ``function`` as a :class:`BatchPolicy`.

    Example:
        >>> @batch_policy
        ... def always_rock(observations, infos):
        ...     return ["rock"] * len(observations)
        >>> isinstance(always_rock, BatchPolicy), always_rock(["a", "b"], [{}, {}])
        (True, ['rock', 'rock'])
    """
    function.batched = True  # type: ignore[attr-defined]
    return function  # type: ignore[return-value]


class _OneByOne:
    """A plain policy called once per decision."""

    batched = True

    def __init__(self, policy: Policy):
        self.policy = policy

    def __call__(self, observations: list[str], infos: list[Mapping[str, Any]]) -> list[str]:
        return [self.policy(observation, info) for observation, info in zip(observations, infos, strict=True)]


def as_batch_policy(policy: Policy | BatchPolicy) -> BatchPolicy:
    """``policy`` itself if it is a batch policy, else a wrapper that calls it per decision.

    Example:
        >>> batch = as_batch_policy(lambda observation, info: observation.upper())
        >>> batch(["rock", "paper"], [{}, {}])
        ['ROCK', 'PAPER']
    """
    if getattr(policy, "batched", False) is True:
        return policy  # type: ignore[return-value]
    if not callable(policy):
        raise TypeError(f"Expected a policy: a callable (observation, info) -> str, got {policy!r:.80}")
    return _OneByOne(policy)  # type: ignore[arg-type]


def chat_batch_policy(
    policy: ChatPolicy, *, system_prompt: str | None = None, params: SamplingParams | None = None
) -> BatchPolicy:
    """Adapt a chat policy: each observation becomes one user message (after ``system_prompt``).

    Game observations are self-contained (they restate the history), so one message suffices.
    The returned completions keep their token ids and log-probs for the recorded turns.
    """

    @batch_policy
    def ask(observations: list[str], infos: list[Mapping[str, Any]]) -> Sequence[Completion]:
        head = [{"role": "system", "content": system_prompt}] if system_prompt else []
        conversations = [
            [*head, {"role": "user", "content": str(observation)}] for observation in observations
        ]
        return policy(conversations, params=params)

    return ask
