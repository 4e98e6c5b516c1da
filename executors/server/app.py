"""The OpenAI-compatible HTTP API over an HFSampler: models, completions, chat completions, streaming."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from executors.server.batching import BatchingEngine
from executors.server.responses import new_id
from executors.server.schemas import APIError, ChatRequest, CompletionRequest, error_body
from executors.server.service import COMPLETIONS_DEFAULT_MAX_TOKENS, Service, sse, validation_error
from gym_tinker.policy import Completion

__all__ = ["create_app"]


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
    service = Service(sampler, engine, model_name, default_max_tokens)

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
        return JSONResponse(error_body(validation_error(err.errors())), status_code=400)

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
        rows = service.rows(prompts, req, req.max_tokens, COMPLETIONS_DEFAULT_MAX_TOKENS, "prompt")
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
                yield sse(chunk(row, {"role": "assistant", "content": ""}, None))
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
