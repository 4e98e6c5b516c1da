"""Calling a policy on a batch of dialogues: token samplers, chat policies and plain callables, with timeouts.

A failure is reported per dialogue, never raised: a batch call that raises (or times out, or
returns the wrong number of completions) fails every dialogue in it, and a completion whose
``finish_reason`` is ``"error"`` fails only its own dialogue. The engine decides what to do
with failures (retry the episode from its seed, or drop it).
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from gym_tinker.policy import ChatRenderer, Completion, SamplingParams
from gym_tinker.rollout.dialogue import Dialogue

__all__ = ["PolicyCallError", "PolicyRunner", "is_token_sampler"]


class PolicyCallError(RuntimeError):
    """A policy call failed for a dialogue: it raised, timed out, or returned a bad result."""


def is_token_sampler(policy: Any) -> bool:
    """Whether ``policy`` is a :class:`~gym_tinker.policy.TokenSampler` (``generate`` plus ``renderer``).

    Example:
        >>> is_token_sampler(lambda conversations, **kw: ["hi"] * len(conversations))
        False
    """
    return callable(getattr(policy, "generate", None)) and getattr(policy, "renderer", None) is not None


def _accepts_keywords(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return True
    names = {p.name for p in parameters}
    return any(p.kind is p.VAR_KEYWORD for p in parameters) or {"tools", "params"} <= names


def _call_with_timeout(fn: Callable[[], Any], timeout: float | None) -> Any:
    if timeout is None:
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:  # handed to the caller's thread
            box["error"] = error

    # A daemon thread: a call that never returns is abandoned rather than hanging the rollout.
    thread = threading.Thread(target=target, name="gym-tinker-policy-call", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"the policy call did not return within {timeout} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


class PolicyRunner:
    """Samples completions for dialogues from one policy, one batch call at a time.

    Args:
        policy: A :class:`~gym_tinker.policy.TokenSampler` (token-exact), a
            :class:`~gym_tinker.policy.ChatPolicy`, or a callable ``f(conversations)`` returning
            one ``str`` or :class:`~gym_tinker.policy.Completion` per conversation.
        params: Sampling parameters; the seed (if any) is varied per call so that turns draw
            fresh randomness while the whole rollout stays reproducible.
        token_exact: Force text-only sampling (``False``) on a token sampler; ``None`` means
            token-exact whenever the policy is a token sampler.
        timeout: Seconds a batch call may take before its dialogues fail; ``None`` for no limit.
        adapter: LoRA adapter name passed to a token sampler's ``generate``.

    Example:
        >>> runner = PolicyRunner(lambda conversations: ["7"] * len(conversations))
        >>> d = Dialogue("Pick a number.")
        >>> runner.sample([d])
        [Completion(text='7', token_ids=(), logprobs=None, finish_reason='stop', prompt_ids=None, metadata={})]
    """

    def __init__(
        self,
        policy: Any,
        params: SamplingParams | None = None,
        *,
        token_exact: bool | None = None,
        timeout: float | None = None,
        adapter: str | None = None,
    ):
        if not callable(policy) and not is_token_sampler(policy):
            raise TypeError(
                f"Expected a policy: a TokenSampler, a ChatPolicy or a callable, got {type(policy).__name__}"
            )
        if token_exact and not is_token_sampler(policy):
            raise ValueError(
                f"token_exact=True needs a TokenSampler (generate + renderer), got {type(policy).__name__}"
            )
        if timeout is not None and not timeout > 0:
            raise ValueError(f"Expected `timeout` > 0 seconds or None, got {timeout!r}")
        self.policy = policy
        self.params = params or SamplingParams()
        self.token_exact = is_token_sampler(policy) if token_exact is None else token_exact
        self.timeout = timeout
        self.adapter = adapter
        self.calls = 0
        self._keywords = self.token_exact or _accepts_keywords(policy)

    @property
    def renderer(self) -> ChatRenderer | None:
        """The sampler's renderer when token-exact, else ``None``."""
        return self.policy.renderer if self.token_exact else None

    def _params_for(self, max_tokens: int) -> SamplingParams:
        seed = self.params.seed
        if seed is not None:
            seed = (seed * 1_000_003 + self.calls) % (1 << 63)
        return dataclasses.replace(self.params, max_tokens=max_tokens, seed=seed)

    def sample(
        self, dialogues: Sequence[Dialogue], max_tokens: int | None = None
    ) -> list[Completion | PolicyCallError]:
        """One completion (or the failure) per dialogue, from one batch call."""
        if not dialogues:
            return []
        params = self._params_for(max_tokens or self.params.max_tokens)
        self.calls += 1
        try:
            if self.token_exact:
                prompts = [d.prompt_ids() for d in dialogues]
                kwargs = {} if self.adapter is None else {"adapter": self.adapter}
                raw = _call_with_timeout(
                    lambda: self.policy.generate(prompts, params, **kwargs), self.timeout
                )
            else:
                conversations = [list(d.messages) for d in dialogues]
                tools = [d.tools for d in dialogues]
                if self._keywords:
                    call = lambda: self.policy(conversations, tools=tools, params=params)  # noqa: E731
                else:
                    call = lambda: self.policy(conversations)  # noqa: E731
                raw = _call_with_timeout(call, self.timeout)
            results = list(raw)
        except Exception as error:
            failure = PolicyCallError(f"policy call failed: {type(error).__name__}: {error}")
            failure.__cause__ = error
            return [failure] * len(dialogues)
        if len(results) != len(dialogues):
            failure = PolicyCallError(
                f"policy returned {len(results)} completion(s) for a batch of {len(dialogues)} conversations"
            )
            return [failure] * len(dialogues)
        return [self._check(result) for result in results]

    def _check(self, result: Any) -> Completion | PolicyCallError:
        if isinstance(result, str):
            result = Completion(result)
        if not isinstance(result, Completion):
            return PolicyCallError(f"policy returned {type(result).__name__}, expected a Completion or str")
        if result.finish_reason == "error":
            detail = result.metadata.get("error") or result.text
            return PolicyCallError(f"policy returned an error completion: {detail}")
        if self.token_exact and not result.token_ids:
            return PolicyCallError("token sampler returned a completion without token_ids")
        return result
