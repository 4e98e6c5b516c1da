"""The OpenAI-compatible HTTP API over an HFSampler: models, completions, chat completions, streaming."""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations, which name
# classes imported inside create_app (fastapi is an optional dependency), so they must be
# evaluated where the endpoints are defined.

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from executors.server.batching import BatchingEngine
from executors.server.guard import DEFAULT_MAX_REQUEST_BYTES, RequestGuard
from executors.server.responses import new_id
from executors.server.schemas import (
    APIError,
    ChatRequest,
    CompletionRequest,
    RequestT,
    error_body,
    parse_request,
    validation_error,
)
from executors.server.service import COMPLETIONS_DEFAULT_MAX_TOKENS, Service, sse
from gym_tinker.policy import Completion

__all__ = ["create_app"]

# Bodies up to this size are parsed on the event loop; a thread hop costs more than parsing them.
_PARSE_INLINE_BYTES = 64 * 1024


def create_app(
    sampler: Any,
    *,
    model_name: str,
    max_batch_rows: int = 64,
    wait_ms: float = 5.0,
    default_max_tokens: int = 256,
    api_key: str | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> Any:
    """A FastAPI app serving ``sampler`` (an :class:`~executors.sampling.HFSampler`) in the OpenAI API.

    Endpoints: ``GET /v1/models``, ``GET /v1/models/{model}``, ``POST /v1/completions`` (text
    or token-id prompts, ``logprobs=0``), ``POST /v1/chat/completions`` (tools: calls are
    parsed from the text into ``tool_calls``), both with ``stream=true``; ``GET /health``
    answers 200 without a key. The ``model`` field picks the base model (``model_name``) or a
    loaded adapter by name. ``return_token_ids=true`` (as in vLLM) adds the prompt's and the
    completion's token ids. Concurrent requests are batched (see
    :class:`~executors.server.batching.BatchingEngine`).

    Every error has OpenAI's body, ``{"error": {"message", "type", "param", "code"}}``: 400 for
    a malformed request (not UTF-8, not JSON, nested deeper than
    :data:`~executors.server.schemas.MAX_JSON_DEPTH`, a bad field, an unknown model, a prompt
    over the context: code ``context_length_exceeded``), 401 for a missing or wrong key
    (``invalid_api_key``), 404 for an unknown URL or model (``model_not_found``), 405, 413 for
    a body over ``max_request_bytes``, 415 for a body that is not declared JSON, 500 with a
    generic message (the traceback is logged, see :class:`~executors.server.guard.RequestGuard`).
    Tokenizing and chat templating run on worker threads, so a huge prompt does not hold up
    other clients.

    With ``tools`` and ``stream=true``, the text is held back until the end (it may be a tool
    call) and arrives in the final chunk with the parsed ``tool_calls``. Streamed chunks carry
    no log-probs. ``tool_choice`` is accepted; ``"none"`` turns tool-call parsing off, other
    values (which need ``tools``) do not constrain the model, nor does ``response_format``.
    Log-probs are those of the sampled tokens only (``logprobs=0`` / ``top_logprobs=0``):
    alternatives are not computed.

    .. warning:: Batches run to completion before the next batch starts (no iteration-level
       scheduling), so a request that arrives during a long batch waits for it.

    Args:
        sampler: The sampler, e.g. :class:`~executors.sampling.HFSampler`.
        model_name: The base model's name in the API.
        max_batch_rows: Most rows sampled in one batch.
        wait_ms: How long the batcher collects requests after the first one.
        default_max_tokens: ``max_tokens`` of chat requests that give none.
        api_key: When given, every endpoint but ``/health`` and the API docs needs
            ``Authorization: Bearer <api_key>``.
        max_request_bytes: Largest request body accepted (default 4 MiB).

    Example:
        >>> from executors.sampling import HFSampler
        >>> app = create_app(HFSampler("tiny-random"), model_name="tiny-random")
        >>> sorted(r.path for r in app.routes if r.path.startswith("/v1"))
        ['/v1/chat/completions', '/v1/completions', '/v1/models', '/v1/models/{model_id:path}']
        >>> app.state.engine.close()
    """
    from fastapi import FastAPI, Request, Response
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, StreamingResponse
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    RequestGuard.check_settings(api_key, max_request_bytes)  # fail here rather than at the first request
    engine = BatchingEngine(sampler, max_batch_rows=max_batch_rows, wait_ms=wait_ms)
    service = Service(sampler, engine, model_name, default_max_tokens)

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        yield
        engine.close()

    app = FastAPI(title="gym-tinker OpenAI-compatible server", lifespan=lifespan)
    app.state.engine = engine
    app.state.sampler = sampler
    app.add_middleware(RequestGuard, api_key=api_key, max_request_bytes=max_request_bytes)  # type: ignore[arg-type]

    @app.exception_handler(APIError)
    async def api_error(_: Request, err: APIError) -> JSONResponse:
        return JSONResponse(error_body(err), status_code=err.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, err: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(validation_error(err.errors())), status_code=400)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> JSONResponse:
        path = request.url.path[:200]
        if err.status_code == 404:
            message = (
                f"Unknown URL: {request.method} {path}. This server serves GET /v1/models, "
                "GET /v1/models/{model}, POST /v1/completions and POST /v1/chat/completions."
            )
        elif err.status_code == 405:
            allowed = (err.headers or {}).get("Allow", "")
            message = f"Method {request.method} is not allowed on {path}; allowed: {allowed}."
        else:
            message = str(err.detail)
        body = APIError(message, err.status_code)
        return JSONResponse(error_body(body), status_code=err.status_code, headers=err.headers)

    async def read(request: Request, model: type[RequestT]) -> RequestT:
        body = await request.body()
        content_type = request.headers.get("content-type")
        if len(body) <= _PARSE_INLINE_BYTES:
            return parse_request(body, content_type, model)
        return await run_in_threadpool(parse_request, body, content_type, model)

    @app.get("/health")
    async def health() -> Response:
        return Response(status_code=200)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return service.models()

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str) -> dict[str, Any]:
        return service.model(model_id)

    @app.post("/v1/completions", response_model=None)
    async def completions(request: Request) -> dict[str, Any] | StreamingResponse:
        req = await read(request, CompletionRequest)
        adapter = service.adapter_for(req.model)
        prompts = await run_in_threadpool(service.completion_prompts, req)
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
    async def chat(request: Request) -> dict[str, Any] | StreamingResponse:
        req = await read(request, ChatRequest)
        adapter = service.adapter_for(req.model)
        prompt = await run_in_threadpool(service.chat_prompt, req)
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
