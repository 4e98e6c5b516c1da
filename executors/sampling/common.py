"""Translation logic shared by every sampler: seeds, stop strings, prompt checks, vLLM and OpenAI results.

Kept free of torch and vLLM so that it is tested everywhere, also where vLLM cannot be installed.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gym_tinker.policy import (
    ChatRenderer,
    Completion,
    Conversation,
    FinishReason,
    SamplingParams,
    ToolSchemas,
)

__all__ = [
    "AdapterPolicy",
    "RenderingPolicy",
    "RowRequest",
    "check_prompt_ids",
    "completion_from_openai_choice",
    "completion_from_vllm",
    "find_stop",
    "openai_sampling_fields",
    "row_seed",
    "rows_for",
    "vllm_sampling_kwargs",
]


def row_seed(seed: int | None, index: int) -> int:
    """The seed of row ``index`` of a batch sampled with ``seed`` (fresh entropy when ``seed`` is None).

    Each row draws from its own generator, so a row's completion depends on its prompt, the
    seed and its index, not on the other rows of the batch; distinct indices give distinct
    streams (a GRPO group of identical prompts still gets different completions).

    Example:
        >>> row_seed(7, 0) == row_seed(7, 0), row_seed(7, 0) == row_seed(7, 1)
        (True, False)
    """
    if seed is None:
        return secrets.randbits(63)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"Expected `seed` to be an int or None, got {seed!r}")
    # SeedSequence mixes (seed, index) well and accepts any non-negative ints.
    return int(np.random.SeedSequence([abs(seed), int(seed < 0), index]).generate_state(2, np.uint64)[0] >> 1)


@dataclass(frozen=True)
class RowRequest:
    """One prompt to complete, with its own sampling parameters and seed (a batch may mix them)."""

    prompt_ids: tuple[int, ...]
    """Prompt token ids."""
    params: SamplingParams
    """How to sample this row."""
    seed: int
    """Seed of this row's random stream (see :func:`row_seed`)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Copied into the completion's metadata."""


def check_prompt_ids(
    prompt_ids: Sequence[Sequence[int]], *, vocab_size: int | None = None
) -> list[tuple[int, ...]]:
    """Validate a batch of token-id prompts and return them as tuples.

    Raises:
        TypeError: ``prompt_ids`` is not a sequence of sequences of ints.
        ValueError: A prompt is empty or holds an id outside ``[0, vocab_size)``.

    Example:
        >>> check_prompt_ids([[1, 2], (3,)])
        [(1, 2), (3,)]
        >>> check_prompt_ids([[1, 99]], vocab_size=50)
        Traceback (most recent call last):
        ...
        ValueError: Prompt 0 holds token id 99, outside the vocabulary [0, 50)
    """
    if isinstance(prompt_ids, (str, bytes)) or not isinstance(prompt_ids, Sequence):
        raise TypeError(
            f"Expected a batch of prompts (a list of lists of token ids), got {type(prompt_ids).__name__}"
        )
    out: list[tuple[int, ...]] = []
    for i, ids in enumerate(prompt_ids):
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise TypeError(
                f"Expected prompt {i} to be a list of token ids, got {type(ids).__name__}: {ids!r}"
            )
        if len(ids) == 0:
            raise ValueError(f"Prompt {i} is empty: a prompt needs at least one token")
        for token in ids:
            if not isinstance(token, (int, np.integer)) or isinstance(token, bool):
                raise TypeError(f"Expected prompt {i} to hold int token ids, got {token!r}")
            if token < 0 or (vocab_size is not None and token >= vocab_size):
                bound = f"[0, {vocab_size})" if vocab_size is not None else "[0, ...)"
                raise ValueError(f"Prompt {i} holds token id {token}, outside the vocabulary {bound}")
        out.append(tuple(int(t) for t in ids))
    return out


def rows_for(prompt_ids: Sequence[Sequence[int]], params: SamplingParams, **meta: Any) -> list[RowRequest]:
    """Rows for a batch sampled with one set of parameters (row ``i`` seeded by ``row_seed(params.seed, i)``).

    Example:
        >>> rows = rows_for([[1], [1]], SamplingParams(seed=0))
        >>> rows[0].prompt_ids, rows[0].seed != rows[1].seed
        ((1,), True)
    """
    return [
        RowRequest(tuple(ids), params, row_seed(params.seed, i), dict(meta))
        for i, ids in enumerate(prompt_ids)
    ]


def find_stop(text: str, stops: Sequence[str], start: int = 0) -> int | None:
    """Index of the earliest stop string in ``text`` at or after ``start`` (``None`` if none occurs).

    Example:
        >>> find_stop("a</answer>b", ["</answer>", "b"]), find_stop("abc", ["x"])
        (1, None)
    """
    best: int | None = None
    for stop in stops:
        if not stop:
            continue
        at = text.find(stop, start)
        if at >= 0 and (best is None or at < best):
            best = at
    return best


class RenderingPolicy:
    """A :class:`~gym_tinker.policy.ChatPolicy` on top of a token sampler: render, then ``generate``.

    Subclasses provide ``renderer`` and ``generate(prompt_ids, params, adapter=...)``.
    """

    renderer: ChatRenderer

    def generate(
        self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams, *, adapter: str | None = None
    ) -> list[Completion]:
        raise NotImplementedError

    def chat(
        self,
        conversations: Sequence[Conversation],
        *,
        tools: Sequence[ToolSchemas | None] | None = None,
        params: SamplingParams | None = None,
        adapter: str | None = None,
    ) -> list[Completion]:
        """Complete each conversation (with its tool schemas, if any) through ``adapter``."""
        if isinstance(conversations, Mapping) or not isinstance(conversations, Sequence):
            raise TypeError(f"Expected a list of conversations, got {type(conversations).__name__}")
        if tools is not None and len(tools) != len(conversations):
            raise ValueError(
                f"Expected one tool list per conversation ({len(conversations)}), got {len(tools)}"
            )
        prompts = [
            self.renderer.render(conv, tools=None if tools is None else tools[i], add_generation_prompt=True)
            for i, conv in enumerate(conversations)
        ]
        return self.generate(prompts, params or SamplingParams(), adapter=adapter)

    def __call__(
        self,
        conversations: Sequence[Conversation],
        *,
        tools: Sequence[ToolSchemas | None] | None = None,
        params: SamplingParams | None = None,
    ) -> list[Completion]:
        return self.chat(conversations, tools=tools, params=params)

    def with_adapter(self, adapter: str | None) -> AdapterPolicy:
        """A policy (chat and token level) that samples through ``adapter`` (``None``: the base model)."""
        return AdapterPolicy(self, adapter)


class AdapterPolicy:
    """A sampler bound to one LoRA adapter: one base model serves many jobs, each through its view.

    Implements :class:`~gym_tinker.policy.ChatPolicy` and :class:`~gym_tinker.policy.TokenSampler`.
    """

    def __init__(self, sampler: RenderingPolicy, adapter: str | None) -> None:
        self.sampler = sampler
        self.adapter = adapter
        self.renderer = sampler.renderer

    def generate(
        self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams, *, adapter: str | None = None
    ) -> list[Completion]:
        return self.sampler.generate(
            prompt_ids, params, adapter=adapter if adapter is not None else self.adapter
        )

    def __call__(
        self,
        conversations: Sequence[Conversation],
        *,
        tools: Sequence[ToolSchemas | None] | None = None,
        params: SamplingParams | None = None,
    ) -> list[Completion]:
        return self.sampler.chat(conversations, tools=tools, params=params, adapter=self.adapter)

    def __repr__(self) -> str:
        return f"AdapterPolicy({self.sampler!r}, adapter={self.adapter!r})"


# --- vLLM -------------------------------------------------------------------------------------


def vllm_sampling_kwargs(params: SamplingParams, seed: int) -> dict[str, Any]:
    """Keyword arguments for ``vllm.SamplingParams`` equivalent to ``params`` for one row.

    Log-probs (``logprobs=0``: the sampled token only) are those of the raw model, as vLLM
    reports by default; ``detokenize`` stays on for stop strings.

    Example:
        >>> kw = vllm_sampling_kwargs(SamplingParams(max_tokens=8, temperature=0.0, stop=("</a>",)), seed=3)
        >>> kw["max_tokens"], kw["temperature"], kw["stop"], kw["seed"], kw["logprobs"]
        (8, 0.0, ['</a>'], 3, 0)
    """
    return {
        "n": 1,
        "max_tokens": params.max_tokens,
        "temperature": float(params.temperature),
        "top_p": float(params.top_p),
        "stop": list(params.stop),
        "seed": seed,
        "logprobs": 0 if params.logprobs else None,
        "skip_special_tokens": True,
    }


_FINISH: dict[str | None, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "stop",
    None: "stop",
}


def _finish_reason(value: Any) -> FinishReason:
    return _FINISH.get(value, "error") if value is None or isinstance(value, str) else "error"


def completion_from_vllm(output: Any, prompt_ids: Sequence[int], **metadata: Any) -> Completion:
    """Our :class:`Completion` from one vLLM ``CompletionOutput`` (``.text``, ``.token_ids``,
    ``.logprobs`` as a list of ``{token_id: Logprob}``, ``.finish_reason``, ``.stop_reason``).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> out = NS(text="hi", token_ids=[5, 2], finish_reason="stop", stop_reason=None,
        ...          logprobs=[{5: NS(logprob=-0.5)}, {2: NS(logprob=-0.1), 9: NS(logprob=-3.0)}])
        >>> c = completion_from_vllm(out, [1, 4])
        >>> c.text, c.token_ids, c.logprobs, c.finish_reason, c.prompt_ids
        ('hi', (5, 2), (-0.5, -0.1), 'stop', (1, 4))
    """
    token_ids = tuple(int(t) for t in output.token_ids)
    logprobs: tuple[float, ...] | None = None
    if output.logprobs is not None:
        logprobs = tuple(
            float(step[token].logprob) for step, token in zip(output.logprobs, token_ids, strict=True)
        )
    meta = dict(metadata)
    if getattr(output, "stop_reason", None) is not None:
        meta["stop_reason"] = output.stop_reason
    return Completion(
        output.text,
        token_ids=token_ids,
        logprobs=logprobs,
        finish_reason=_finish_reason(output.finish_reason),
        prompt_ids=tuple(int(t) for t in prompt_ids),
        metadata=meta,
    )


# --- OpenAI-compatible HTTP -------------------------------------------------------------------


def openai_sampling_fields(params: SamplingParams, *, chat: bool, token_ids: bool = True) -> dict[str, Any]:
    """Request-body fields for ``params`` in the OpenAI API.

    With ``token_ids``, vLLM's ``return_token_ids`` extension is added (vLLM >= 0.10.2 and our
    server then return the sampled token ids); servers that reject unknown fields
    (api.openai.com) need it off.

    Example:
        >>> openai_sampling_fields(SamplingParams(max_tokens=4, seed=1, stop=("x",)), chat=False)["logprobs"]
        0
        >>> openai_sampling_fields(SamplingParams(max_tokens=4), chat=True)["logprobs"]
        True
    """
    body: dict[str, Any] = {
        "max_tokens": params.max_tokens,
        "temperature": float(params.temperature),
        "top_p": float(params.top_p),
    }
    if token_ids:
        body["return_token_ids"] = True
    if params.stop:
        body["stop"] = list(params.stop)
    if params.seed is not None:
        body["seed"] = params.seed
    if params.logprobs:
        body["logprobs"] = True if chat else 0
    return body


def _token_from_logprob_entry(token: Any) -> int | None:
    # vLLM's `return_tokens_as_token_ids` writes tokens as "token_id:123".
    if isinstance(token, str) and token.startswith("token_id:") and token[9:].isdigit():
        return int(token[9:])
    return None


def completion_from_openai_choice(
    choice: Mapping[str, Any], *, prompt_ids: Sequence[int] | None = None, **metadata: Any
) -> Completion:
    """Our :class:`Completion` from one ``choices[i]`` of a completions or chat-completions response.

    Token ids come from ``choice["token_ids"]`` (vLLM's ``return_token_ids``, our server) or
    from ``token_id:N`` log-prob tokens; else they are left empty (text only). Log-probs come
    from either log-prob layout (``token_logprobs`` or ``content[*].logprob``).

    Example:
        >>> choice = {"text": "ok", "finish_reason": "length", "token_ids": [7, 8],
        ...           "logprobs": {"tokens": ["o", "k"], "token_logprobs": [-0.2, -0.3]}}
        >>> c = completion_from_openai_choice(choice)
        >>> c.text, c.token_ids, c.logprobs, c.finish_reason
        ('ok', (7, 8), (-0.2, -0.3), 'length')
    """
    message = choice.get("message")
    if isinstance(message, Mapping):
        text = message.get("content") or ""
        if message.get("tool_calls"):
            metadata = {**metadata, "tool_calls": message["tool_calls"]}
    else:
        text = choice.get("text") or ""
    logprobs: tuple[float, ...] | None = None
    tokens_in_logprobs: list[Any] = []
    raw = choice.get("logprobs")
    if isinstance(raw, Mapping):
        if isinstance(raw.get("content"), list):
            entries = raw["content"]
            logprobs = tuple(float(e["logprob"]) for e in entries)
            tokens_in_logprobs = [e.get("token") for e in entries]
        elif isinstance(raw.get("token_logprobs"), list):
            logprobs = tuple(float(v) for v in raw["token_logprobs"])
            tokens_in_logprobs = list(raw.get("tokens") or [])
    token_ids: tuple[int, ...] = ()
    if isinstance(choice.get("token_ids"), list):
        token_ids = tuple(int(t) for t in choice["token_ids"])
    elif tokens_in_logprobs:
        parsed = [_token_from_logprob_entry(t) for t in tokens_in_logprobs]
        if all(p is not None for p in parsed):
            token_ids = tuple(p for p in parsed if p is not None)
    if prompt_ids is None and isinstance(choice.get("prompt_token_ids"), list):
        prompt_ids = choice["prompt_token_ids"]
    return Completion(
        text,
        token_ids=token_ids,
        logprobs=logprobs,
        finish_reason=_finish_reason(choice.get("finish_reason")),
        prompt_ids=None if prompt_ids is None else tuple(int(t) for t in prompt_ids),
        metadata=dict(metadata),
    )
