"""The OpenAI-compatible HTTP API over an HFSampler: models, completions, chat completions, streaming."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from executors.sampling.common import RowRequest, check_prompt_ids, row_seed
from executors.server.batching import BatchingEngine
from executors.server.responses import StreamText, chat_message, new_id, token_texts, usage
from executors.server.schemas import APIError, ChatRequest, CompletionRequest, error_body
from gym_tinker.policy import Completion, SamplingParams

__all__ = ["create_app"]

# OpenAI's documented default for the legacy completions endpoint.
_COMPLETIONS_DEFAULT_MAX_TOKENS = 16


class _Service:
    """The endpoints' logic, apart from FastAPI's plumbing."""

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

    def adapter_for(self, name: str) -> str | None:
        if name == self.model_name:
            return None
        if name in self.sampler.adapters():
            return name
        served = [self.model_name, *self.sampler.adapters()]
        raise APIError(
            f"The model {name!r} does not exist; this server serves {served}",
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
        batch = [list(self.sampler.tokenizer(p)["input_ids"]) if isinstance(p, str) else p for p in prompt]
        try:
            return check_prompt_ids(batch, vocab_size=self.sampler.vocab_size)
        except (TypeError, ValueError) as err:
            raise APIError(f"Invalid prompt: {err}", param="prompt") from err

    def chat_prompt(self, req: ChatRequest) -> tuple[int, ...]:
        for i, tool in enumerate(req.tools or ()):
            function = tool.get("function")
            if (
                tool.get("type", "function") != "function"
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str)
            ):
                raise APIError(
                    f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}, got {tool!r:.120}",
                    param="tools",
                )
        try:
            messages = [m.to_dict() for m in req.messages]
            ids = self.sampler.renderer.render(messages, tools=req.tools or None, add_generation_prompt=True)
        except Exception as err:  # template errors surface as many types; all mean "bad messages"
            raise APIError(
                f"Could not render the messages with the chat template: {err}", param="messages"
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
                yield _sse(chunk(row, delta, None))
        try:
            results = future.result()
        except Exception as err:  # the stream has started: report in-band, as OpenAI does
            yield _sse(
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
            yield _sse(finish(row, c, streams[row].finish(c.text)))
        if include_usage:
            tail = chunk(0, "", None)
            tail["choices"] = []
            tail["usage"] = usage(prompt_lengths, results)
            yield _sse(tail)
        yield "data: [DONE]\n\n"


def _sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def _validation_error(errors: Sequence[Any]) -> APIError:
    first: dict[str, Any] = dict(errors[0]) if errors else {"msg": "invalid request", "loc": ()}
    if first.get("type") == "json_invalid":
        return APIError(
            f"The request body is not valid JSON: {first.get('ctx', {}).get('error', first.get('msg'))}"
        )
    loc = [str(part) for part in first.get("loc", ()) if part != "body"]
    if not loc:
        return APIError(f"The request body must be a JSON object: {first.get('msg')}")
    field = loc[0]
    where = ".".join(loc)
    got = f", got {first['input']!r:.80}" if "input" in first and first.get("type") != "missing" else ""
    return APIError(f"Invalid field {where!r}: {first.get('msg')}{got}", param=field)


def create_app(
    sampler: Any,
    *,
    model_name: str,
    max_batch_rows: int = 64,
    wait_ms: float = 5.0,
    default_max_tokens: int = 256,
) -> Any:
    """A FastAPI app serving ``sampler`` (an :class:`~executors.sampling.HFSampler`) in the OpenAI API.

    Endpoints: ``GET /v1/models``, ``POST /v1/completions`` (text or token-id prompts,
    ``logprobs=0``), ``POST /v1/chat/completions`` (tools: calls are parsed from the text into
    ``tool_calls``), both with ``stream=true``. The ``model`` field picks the base model
    (``model_name``) or a loaded adapter by name. ``return_token_ids=true`` (as in vLLM) adds
    the prompt's and the completion's token ids. Concurrent requests are batched (see
    :class:`~executors.server.batching.BatchingEngine`). Malformed requests, unknown models and
    over-long prompts get HTTP 400 with an OpenAI-style error body.

    With ``tools`` and ``stream=true``, the text is held back until the end (it may be a tool
    call) and arrives in the final chunk with the parsed ``tool_calls``. Streamed chunks carry
    no log-probs. ``tool_choice`` is accepted; ``"none"`` turns tool-call parsing off, other
    values do not constrain the model. Log-probs are those of the sampled tokens only
    (``logprobs=0`` / ``top_logprobs=0``): alternatives are not computed.

    .. warning:: Batches run to completion before the next batch starts (no iteration-level
       scheduling), so a request that arrives during a long batch waits for it.

    Example:
        >>> from executors.sampling import HFSampler
        >>> app = create_app(HFSampler("tiny-random"), model_name="tiny-random")
        >>> sorted(r.path for r in app.routes if r.path.startswith("/v1"))
        ['/v1/chat/completions', '/v1/completions', '/v1/models']
        >>> app.state.engine.close()
    """
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, StreamingResponse

    engine = BatchingEngine(sampler, max_batch_rows=max_batch_rows, wait_ms=wait_ms)
    service = _Service(sampler, engine, model_name, default_max_tokens)

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        yield
        engine.close()

    app = FastAPI(title="gym-tinker OpenAI-compatible server", lifespan=lifespan)
    app.state.engine = engine
    app.state.sampler = sampler

    @app.exception_handler(APIError)
    async def api_error(_: Request, err: APIError) -> JSONResponse:
        return JSONResponse(error_body(err), status_code=err.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, err: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(_validation_error(err.errors())), status_code=400)

    @app.exception_handler(Exception)
    async def internal(_: Request, err: Exception) -> JSONResponse:
        body = APIError(f"Internal error: {type(err).__name__}: {err}", 500, type="server_error")
        return JSONResponse(error_body(body), status_code=500)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return service.models()

    @app.post("/v1/completions", response_model=None)
    async def completions(req: CompletionRequest) -> dict[str, Any] | StreamingResponse:
        adapter = service.adapter_for(req.model)
        prompts = service.completion_prompts(req)
        rows = service.rows(prompts, req, req.max_tokens, _COMPLETIONS_DEFAULT_MAX_TOKENS, "prompt")
        if not req.stream:
            return service.completion_body(req, prompts, await service.run(rows, adapter))
        head = {
            "id": new_id("cmpl"),
            "object": "text_completion",
            "created": int(time.time()),
            "model": req.model,
        }

        def chunk(row: int, text: Any, reason: str | None) -> dict[str, Any]:
            return {
                **head,
                "choices": [{"index": row, "text": text, "logprobs": None, "finish_reason": reason}],
            }

        def finish(row: int, c: Completion, rest: str) -> dict[str, Any]:
            return chunk(row, rest, c.finish_reason)

        include_usage = bool((req.stream_options or {}).get("include_usage"))
        events = service.stream(
            rows,
            adapter,
            chunk,
            finish,
            prompt_lengths=[len(p) for p in prompts],
            include_usage=include_usage,
        )
        return StreamingResponse(events, media_type="text/event-stream")

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(req: ChatRequest) -> dict[str, Any] | StreamingResponse:
        adapter = service.adapter_for(req.model)
        prompt = service.chat_prompt(req)
        requested = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
        rows = service.rows([prompt], req, requested, default_max_tokens, "messages")
        if not req.stream:
            return service.chat_body(req, prompt, await service.run(rows, adapter))
        head = {
            "id": new_id("chatcmpl"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": req.model,
        }

        def chunk(row: int, text: Any, reason: str | None) -> dict[str, Any]:
            delta = text if isinstance(text, dict) else {"content": text}
            return {
                **head,
                "choices": [{"index": row, "delta": delta, "logprobs": None, "finish_reason": reason}],
            }

        def finish(row: int, c: Completion, rest: str) -> dict[str, Any]:
            choice = service.chat_choice(req, row, c)
            message = choice["message"]
            delta: dict[str, Any] = {"content": rest if "tool_calls" not in message else message["content"]}
            if "tool_calls" in message:
                delta["tool_calls"] = [{"index": k, **call} for k, call in enumerate(message["tool_calls"])]
            return chunk(row, delta, choice["finish_reason"])

        async def events() -> AsyncIterator[str]:
            for row in range(len(rows)):
                yield _sse(chunk(row, {"role": "assistant", "content": ""}, None))
            include_usage = bool((req.stream_options or {}).get("include_usage"))
            async for event in service.stream(
                rows,
                adapter,
                chunk,
                finish,
                hold_all=bool(req.tools),
                prompt_lengths=[len(prompt)],
                include_usage=include_usage,
            ):
                yield event

        return StreamingResponse(events(), media_type="text/event-stream")

    return app
