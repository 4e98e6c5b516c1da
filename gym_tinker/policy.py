"""The Policy contract: what turns conversations (or token ids) into completions.

Two levels, so that plain Python callables and real samplers both fit:

* :class:`ChatPolicy`: a batch of chat conversations (lists of message dicts) plus tool schemas
  in, one :class:`Completion` per conversation out. Bots, scripted agents and HTTP chat
  endpoints are chat policies. Rollouts through a chat policy record text only.
* :class:`TokenSampler` with a :class:`ChatRenderer`: token ids in, token ids and log-probs out.
  Rollouts through a token sampler are token-exact: the ids that were sampled are the ids that
  training sees, and the env's messages are rendered once and appended with a mask, never
  decoded and re-encoded.

Samplers in ``executors.sampling`` implement both. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

__all__ = [
    "ChatPolicy",
    "ChatRenderer",
    "Completion",
    "Conversation",
    "FinishReason",
    "SamplingParams",
    "TokenSampler",
    "ToolSchemas",
]

Conversation: TypeAlias = Sequence[Mapping[str, Any]]
"""Chat messages: ``{"role": "system" | "user" | "assistant" | "tool", "content": str, ...}``."""
ToolSchemas: TypeAlias = Sequence[Mapping[str, Any]]
"""Tool schemas in OpenAI form: ``{"type": "function", "function": {"name", "description", "parameters"}}``."""
FinishReason: TypeAlias = Literal["stop", "length", "error"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. Validated on construction.

    Example:
        >>> SamplingParams(max_tokens=32, temperature=0.0).greedy
        True
        >>> SamplingParams(top_p=1.5)
        Traceback (most recent call last):
        ...
        ValueError: Expected `top_p` in (0, 1], got 1.5
    """

    max_tokens: int = 256
    """Most tokens to generate per completion."""
    temperature: float = 1.0
    """0 means greedy."""
    top_p: float = 1.0
    """Nucleus sampling mass, in (0, 1]."""
    stop: tuple[str, ...] = ()
    """Strings that end a completion (not included in its text)."""
    seed: int | None = None
    """Seed for sampling; the same seed and inputs give the same completions."""
    logprobs: bool = True
    """Return the log-probability of each sampled token."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_tokens, int) or isinstance(self.max_tokens, bool) or self.max_tokens < 1:
            raise ValueError(f"Expected `max_tokens` to be an int >= 1, got {self.max_tokens!r}")
        if not self.temperature >= 0:
            raise ValueError(f"Expected `temperature` >= 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"Expected `top_p` in (0, 1], got {self.top_p!r}")
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class Completion:
    """One sampled completion.

    Example:
        >>> c = Completion("42", token_ids=(19, 20), logprobs=(-0.1, -0.2))
        >>> c.text, len(c.token_ids), c.finish_reason
        ('42', 2, 'stop')
    """

    text: str
    """The completion's text (stop string excluded)."""
    token_ids: tuple[int, ...] = ()
    """The exact sampled token ids (empty when the policy does not expose tokens)."""
    logprobs: tuple[float, ...] | None = None
    """Sampler log-probability of each token in ``token_ids``, when known."""
    finish_reason: FinishReason = "stop"
    """``"stop"`` (EOS or a stop string), ``"length"`` (hit ``max_tokens``) or ``"error"``."""
    prompt_ids: tuple[int, ...] | None = None
    """The prompt token ids the sampler conditioned on, when known."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Anything else the sampler reports (adapter name, timing, ...)."""


@runtime_checkable
class ChatPolicy(Protocol):
    """A batch of conversations in, one completion per conversation out."""

    def __call__(
        self,
        conversations: Sequence[Conversation],
        *,
        tools: Sequence[ToolSchemas | None] | None = None,
        params: SamplingParams | None = None,
    ) -> list[Completion]: ...


@runtime_checkable
class ChatRenderer(Protocol):
    """Renders conversations to token ids with a model's chat template."""

    def render(
        self, messages: Conversation, *, tools: ToolSchemas | None = None, add_generation_prompt: bool = True
    ) -> list[int]:
        """Token ids of ``messages`` (plus the assistant prompt when ``add_generation_prompt``)."""
        ...

    def render_continuation(
        self, history: Conversation, new_messages: Conversation, *, tools: ToolSchemas | None = None
    ) -> list[int]:
        """Token ids to append after ``history`` (which ends with an assistant turn) so that
        the sequence continues with ``new_messages`` and then the next assistant prompt."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str: ...

    # Optional: ``close_assistant_turn(sampled_ids) -> list[int]``, the ids that end an assistant
    # turn after ``sampled_ids`` (e.g. the end-of-turn token when sampling stopped at
    # ``max_tokens``). The rollout engine appends them, masked, before the env's reply when the
    # renderer has it.


@runtime_checkable
class TokenSampler(Protocol):
    """Token ids in, completions (with their token ids and log-probs) out."""

    renderer: ChatRenderer

    def generate(
        self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams, *, adapter: str | None = None
    ) -> list[Completion]: ...
