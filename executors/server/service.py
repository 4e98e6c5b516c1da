"""The server's endpoint logic apart from FastAPI: model selection, prompts, limits, response bodies, streams."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from executors.sampling.common import RowRequest, check_prompt_ids, row_seed
from executors.server.batching import BatchingEngine
from executors.server.responses import StreamText, chat_message, new_id, token_texts, usage
from executors.server.schemas import APIError, ChatRequest, CompletionRequest, short_repr
from gym_tinker.policy import Completion, SamplingParams

__all__ = ["COMPLETIONS_DEFAULT_MAX_TOKENS", "Service", "sse"]

# OpenAI's documented default for the legacy completions endpoint.
COMPLETIONS_DEFAULT_MAX_TOKENS = 16


class Service:
    """The endpoints' logic, apart from FastAPI's plumbing (see :func:`executors.server.create_app`).

    Each method turns a validated request into rows for the :class:`BatchingEngine`, or
    results into OpenAI response bodies; request errors are raised as :class:`APIError` (400).
    :meth:`completion_prompts` and :meth:`chat_prompt` tokenize and may take a while on a long
    prompt: the app calls them on a worker thread, off the event loop.
    """

    def __init__(
        self, sampler: Any, engine: BatchingEngine, model_name: str, default_max_tokens: int
    ) -> None:
        self.sampler = sampler
        self.engine = engine
        self.model_name = model_name
        self.default_max_tokens = default_max_tokens
        self.created = int(time.time())

    def models(self) -> dict[str, Any]:
        base = {"id": self.model_name, "object": "model", "created": self.created, "owned_by": "gym-tinker"}
        data = [{**base, "root": self.model_name, "parent": None, "max_model_len": self.sampler.max_context}]
        data += [
            {**base, "id": name, "root": name, "parent": self.model_name} for name in self.sampler.adapters()
        ]
        return {"object": "list", "data": data}

    def model(self, name: str) -> dict[str, Any]:
        """The model object of ``name`` (``GET /v1/models/{name}``); 404 ``model_not_found`` if not served."""
        for entry in self.models()["data"]:
            if entry["id"] == name:
                return dict(entry)
        raise self._unknown_model(name, 404)

    def adapter_for(self, name: str) -> str | None:
        if name == self.model_name:
            return None
        if name in self.sampler.adapters():
            return name
        raise self._unknown_model(name, 400)

    def _unknown_model(self, name: str, status: int) -> APIError:
        served = [self.model_name, *self.sampler.adapters()]
        return APIError(
            f"The model {short_repr(name)} does not exist; this server serves {short_repr(served)}",
            status,
            param="model",
            code="model_not_found",
        )

    def max_tokens(self, prompt_len: int, requested: int | None, default: int, what: str) -> int:
        limit = self.sampler.max_context
        if prompt_len >= limit:
            raise APIError(
                f"This model's maximum context length is {limit} tokens, but the {what} has {prompt_len} tokens. "
                f"Please shorten the {what}.",
                param=what,
                code="context_length_exceeded",
            )
        if requested is None:
            return min(default, limit - prompt_len)
        if prompt_len + requested > limit:
            raise APIError(
                f"This model's maximum context length is {limit} tokens. However, you requested "
                f"{prompt_len + requested} tokens ({prompt_len} in the {what}, {requested} for the completion). "
                f"Please reduce the length of the {what} or max_tokens.",
                param="max_tokens",
                code="context_length_exceeded",
            )
        return requested

    def rows(
        self, prompts: Sequence[tuple[int, ...]], req: Any, requested: int | None, default: int, what: str
    ) -> list[RowRequest]:
        rows: list[RowRequest] = []
        for p, ids in enumerate(prompts):
            try:
                params = SamplingParams(
                    max_tokens=self.max_tokens(len(ids), requested, default, what),
                    temperature=req.temperature,
                    top_p=req.top_p,
                    stop=req.stops(),
                    seed=req.seed,
                )
            except ValueError as err:
                raise APIError(str(err)) from err
            rows += [RowRequest(ids, params, row_seed(req.seed, p * req.n + j)) for j in range(req.n)]
        return rows

    def completion_prompts(self, req: CompletionRequest) -> list[tuple[int, ...]]:
        prompt = req.prompt
        if isinstance(prompt, str):
            prompt = [prompt]
        if not prompt:
            raise APIError("The prompt is empty: give text or at least one token id", param="prompt")
        if isinstance(prompt[0], int):
            prompt = [prompt]  # type: ignore[list-item]
        try:
            batch = [
                list(self.sampler.tokenizer(p)["input_ids"]) if isinstance(p, str) else p for p in prompt
            ]
            return check_prompt_ids(batch, vocab_size=self.sampler.vocab_size)
        except Exception as err:  # the tokenizer's errors are many types; all mean "bad prompt"
            raise APIError(f"Invalid prompt: {err!s:.300}", param="prompt") from err

    def chat_prompt(self, req: ChatRequest) -> tuple[int, ...]:
        try:
            messages = [m.to_dict() for m in req.messages]
            ids = self.sampler.renderer.render(messages, tools=req.tools or None, add_generation_prompt=True)
        except Exception as err:  # template errors surface as many types; all mean "bad messages"
            raise APIError(
                f"Could not render the messages with the chat template: {err!s:.300}", param="messages"
            ) from err
        if not ids:
            raise APIError("The messages render to an empty prompt", param="messages")
        return tuple(ids)

    async def run(self, rows: list[RowRequest], adapter: str | None) -> list[Completion]:
        return await asyncio.wrap_future(self.engine.submit(rows, adapter))

    def completion_body(
        self, req: CompletionRequest, prompts: Sequence[tuple[int, ...]], results: list[Completion]
    ) -> dict[str, Any]:
        choices = []
        for index, c in enumerate(results):
            choice: dict[str, Any] = {
                "index": index,
                "text": c.text,
                "logprobs": None,
                "finish_reason": c.finish_reason,
            }
            if req.logprobs is not None and c.logprobs is not None:
                tokens = token_texts(self.sampler.tokenizer, c.token_ids)
                offsets, at = [], 0
                for token in tokens:
                    offsets.append(at)
                    at += len(token)
                choice["logprobs"] = {
                    "tokens": tokens,
                    "token_logprobs": list(c.logprobs),
                    "top_logprobs": None,
                    "text_offset": offsets,
                }
            if req.return_token_ids:
                choice["prompt_token_ids"] = list(c.prompt_ids or ())
                choice["token_ids"] = list(c.token_ids)
            choices.append(choice)
        return {
            "id": new_id("cmpl"),
            "object": "text_completion",
            "created": int(time.time()),
            "model": req.model,
            "choices": choices,
            "usage": usage([len(p) for p in prompts], results),
        }

    def chat_choice(self, req: ChatRequest, index: int, c: Completion) -> dict[str, Any]:
        message, called = chat_message(c.text, parse_tools=bool(req.tools) and req.tool_choice != "none")
        choice: dict[str, Any] = {
            "index": index,
            "message": message,
            "logprobs": None,
            "finish_reason": "tool_calls" if called else c.finish_reason,
        }
        if req.logprobs and c.logprobs is not None:
            tokens = token_texts(self.sampler.tokenizer, c.token_ids)
            choice["logprobs"] = {
                "content": [
                    {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                    for t, lp in zip(tokens, c.logprobs, strict=True)
                ]
            }
        if req.return_token_ids:
            choice["token_ids"] = list(c.token_ids)
        return choice

    def chat_body(
        self, req: ChatRequest, prompt: tuple[int, ...], results: list[Completion]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": new_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.model,
            "choices": [self.chat_choice(req, i, c) for i, c in enumerate(results)],
            "usage": usage([len(prompt)], results),
        }
        if req.return_token_ids:
            body["prompt_token_ids"] = list(prompt)
        return body

    async def stream(
        self,
        rows: list[RowRequest],
        adapter: str | None,
        chunk: Callable[[int, dict[str, Any] | str, str | None], dict[str, Any]],
        finish: Callable[[int, Completion, str], dict[str, Any]],
        *,
        hold_all: bool = False,
        prompt_lengths: Sequence[int] = (),
        include_usage: bool = False,
    ) -> AsyncIterator[str]:
        """Server-sent events for ``rows``: text deltas as tokens arrive, then each row's final chunk."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[int, int] | None] = asyncio.Queue()
        streams = [StreamText(self.sampler.tokenizer, self.sampler.eos_ids, row.params.stop) for row in rows]

        def on_token(row: int, token: int) -> None:
            loop.call_soon_threadsafe(events.put_nowait, (row, token))

        future = self.engine.submit(rows, adapter, on_token)
        future.add_done_callback(lambda _: loop.call_soon_threadsafe(events.put_nowait, None))
        while (event := await events.get()) is not None:
            if hold_all:
                continue
            row, token = event
            delta = streams[row].push(token)
            if delta and not hold_all:
                yield sse(chunk(row, delta, None))
        try:
            results = future.result()
        except Exception as err:  # the stream has started: report in-band, as OpenAI does
            yield sse(
                {
                    "error": {
                        "message": f"Generation failed: {err}",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                }
            )
            return
        for row, c in enumerate(results):
            yield sse(finish(row, c, streams[row].finish(c.text)))
        if include_usage:
            tail = chunk(0, "", None)
            tail["choices"] = []
            tail["usage"] = usage(prompt_lengths, results)
            yield sse(tail)
        yield "data: [DONE]\n\n"


def sse(payload: dict[str, Any]) -> str:
    """One server-sent event carrying ``payload`` as JSON.

    Example:
        >>> sse({"a": 1})
        'data: {"a": 1}\\n\\n'
    """
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"
