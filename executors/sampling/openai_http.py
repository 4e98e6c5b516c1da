"""OpenAISampler: any OpenAI-compatible server over HTTP (vLLM, SGLang, ours), with retries and a concurrency limit."""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from executors.sampling.common import (
    check_prompt_ids,
    completion_from_openai_choice,
    openai_sampling_fields,
    row_seed,
)
from gym_tinker.policy import ChatRenderer, Completion, Conversation, SamplingParams, ToolSchemas

__all__ = ["OpenAIRequestError", "OpenAISampler"]


class OpenAIRequestError(RuntimeError):
    """A request the server refused (a 4xx other than 429), or one that kept failing after all retries."""


def _server_message(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return json.dumps(body)[:500]


def _tool_call_text(message: Mapping[str, Any]) -> str:
    """The message's text with its parsed ``tool_calls`` written back as ``<tool_call>`` blocks.

    Envs read tool calls from the text, so a server that parsed them out must not lose them.
    """
    parts = [message.get("content") or ""]
    for call in message.get("tool_calls") or ():
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        arguments = function.get("arguments", "{}")
        # Undecodable arguments stay as the server sent them; the env's parser reports them.
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        block = json.dumps({"name": function.get("name"), "arguments": arguments}, ensure_ascii=False)
        parts.append(f"<tool_call>\n{block}\n</tool_call>")
    return "\n".join(p for p in parts if p)


class OpenAISampler:
    """A policy served by an OpenAI-compatible HTTP server.

    ``sampler(conversations, tools=...)`` sends one chat-completions request per conversation
    (the server applies its chat template; tool calls it parses into ``tool_calls`` are written
    back into the completion's text as ``<tool_call>`` blocks, and kept in
    ``metadata["tool_calls"]``). ``sampler.generate(prompt_ids, params)`` sends completions
    requests with token-id prompts (``prompt`` as a list of ints, as vLLM and our server
    accept). Token ids come back when the server supports ``return_token_ids`` (vLLM >= 0.10.2,
    ours); log-probs when it returns them.

    Requests run in parallel, at most ``max_concurrency`` at a time for this sampler. Connection
    errors, timeouts, 429 and 5xx are retried ``retries`` times with exponential backoff
    (``backoff * 2**attempt`` seconds, at most ``max_backoff``; a ``Retry-After`` header is
    honoured up to that cap); any other 4xx fails at once with the server's message.

    Row ``i`` of a call with ``params.seed = s`` is sent with seed ``row_seed(s, i)``, as the
    local samplers do.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1``.
        model: The served model (or adapter) name.
        api_key: Sent as a bearer token when given.
        max_concurrency: Most requests in flight at once.
        retries: Extra attempts after a retryable failure.
        backoff: First retry delay in seconds.
        max_backoff: Largest retry delay in seconds.
        timeout: Per-request timeout in seconds.
        renderer: The served model's chat renderer; needed only to use this sampler as a
            :class:`~gym_tinker.policy.TokenSampler` in token-exact rollouts.
        raise_on_error: If False, a row whose request fails becomes a completion with
            ``finish_reason="error"`` and the message in ``metadata["error"]`` instead of raising.
        return_token_ids: Ask for token ids with vLLM's ``return_token_ids`` field; turn it off
            for servers that reject unknown fields (api.openai.com).

    Example:
        >>> sampler = OpenAISampler("http://127.0.0.1:8000/v1", "tiny-random", retries=2)
        >>> sampler.max_concurrency, sampler.retries
        (8, 2)
        >>> sampler.close()
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        max_concurrency: int = 8,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        timeout: float = 120.0,
        renderer: ChatRenderer | None = None,
        raise_on_error: bool = True,
        return_token_ids: bool = True,
    ) -> None:
        import httpx

        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"Expected `base_url` to be an http(s) URL such as 'http://127.0.0.1:8000/v1', got {base_url!r}"
            )
        if not isinstance(model, str) or not model:
            raise ValueError(f"Expected `model` to be a non-empty str, got {model!r}")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError(f"Expected `max_concurrency` to be an int >= 1, got {max_concurrency!r}")
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"Expected `retries` to be an int >= 0, got {retries!r}")
        if not (backoff >= 0 and max_backoff >= 0):
            raise ValueError(
                f"Expected `backoff` and `max_backoff` >= 0, got {backoff!r} and {max_backoff!r}"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_concurrency = max_concurrency
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.renderer = renderer  # type: ignore[assignment]
        self.raise_on_error = raise_on_error
        self.return_token_ids = return_token_ids
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=timeout,
            limits=httpx.Limits(max_connections=max_concurrency, max_keepalive_connections=max_concurrency),
        )
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._count_lock = threading.Lock()
        self.attempts = 0
        """HTTP attempts made so far (retries included)."""

    def __repr__(self) -> str:
        return f"OpenAISampler({self.base_url!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def __enter__(self) -> OpenAISampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``base_url + path`` with the retry policy; return the decoded JSON.

        Raises:
            OpenAIRequestError: A non-retryable 4xx, or retries exhausted.
        """
        import httpx

        url = f"{self.base_url}/{path.lstrip('/')}"
        last = ""
        for attempt in range(self.retries + 1):
            delay = min(self.max_backoff, self.backoff * 2**attempt)
            try:
                with self._slots:
                    with self._count_lock:
                        self.attempts += 1
                    response = self._client.post(url, json=body)
            except httpx.TransportError as err:
                last = f"{type(err).__name__}: {err}"
            else:
                if response.status_code < 400:
                    data = response.json()
                    if not isinstance(data, dict):
                        raise OpenAIRequestError(
                            f"POST {url} answered {type(data).__name__}, expected a JSON object"
                        )
                    return data
                message = _server_message(response)
                if response.status_code != 429 and response.status_code < 500:
                    raise OpenAIRequestError(f"POST {url} failed with HTTP {response.status_code}: {message}")
                last = f"HTTP {response.status_code}: {message}"
                retry_after = response.headers.get("retry-after", "")
                if retry_after.replace(".", "", 1).isdigit():
                    delay = min(self.max_backoff, float(retry_after))
            if attempt < self.retries:
                time.sleep(delay)
        raise OpenAIRequestError(f"POST {url} failed after {self.retries + 1} attempts; last error: {last}")

    def _map(self, calls: Sequence[Callable[[], Completion]]) -> list[Completion]:
        def guarded(call: Callable[[], Completion]) -> Completion:
            try:
                return call()
            except OpenAIRequestError as err:
                if self.raise_on_error:
                    raise
                return Completion("", finish_reason="error", metadata={"error": str(err)})

        if len(calls) == 1:
            return [guarded(calls[0])]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(calls))) as pool:
            return list(pool.map(guarded, calls))

    def generate(
        self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams, *, adapter: str | None = None
    ) -> list[Completion]:
        """Complete token-id prompts through the completions endpoint (``adapter`` names the served model)."""
        prompts = check_prompt_ids(prompt_ids)
        model = adapter or self.model
        fields = openai_sampling_fields(params, chat=False, token_ids=self.return_token_ids)

        def one(index: int) -> Completion:
            body = {"model": model, "prompt": list(prompts[index]), **fields}
            if params.seed is not None:
                body["seed"] = row_seed(params.seed, index)
            data = self.post("completions", body)
            return completion_from_openai_choice(data["choices"][0], prompt_ids=prompts[index], model=model)

        return self._map([functools.partial(one, i) for i in range(len(prompts))])

    def __call__(
        self,
        conversations: Sequence[Conversation],
        *,
        tools: Sequence[ToolSchemas | None] | None = None,
        params: SamplingParams | None = None,
    ) -> list[Completion]:
        """Complete each conversation through the chat-completions endpoint."""
        if isinstance(conversations, Mapping) or not isinstance(conversations, Sequence):
            raise TypeError(f"Expected a list of conversations, got {type(conversations).__name__}")
        if tools is not None and len(tools) != len(conversations):
            raise ValueError(
                f"Expected one tool list per conversation ({len(conversations)}), got {len(tools)}"
            )
        params = params or SamplingParams()
        fields = openai_sampling_fields(params, chat=True, token_ids=self.return_token_ids)

        def one(index: int) -> Completion:
            body: dict[str, Any] = {
                "model": self.model,
                "messages": [dict(m) for m in conversations[index]],
                **fields,
            }
            if tools is not None and tools[index]:
                body["tools"] = [dict(t) for t in tools[index] or ()]
            if params.seed is not None:
                body["seed"] = row_seed(params.seed, index)
            data = self.post("chat/completions", body)
            choice = data["choices"][0]
            completion = completion_from_openai_choice(
                choice, prompt_ids=data.get("prompt_token_ids"), model=self.model
            )
            message = choice.get("message") or {}
            if message.get("tool_calls"):
                return Completion(
                    _tool_call_text(message),
                    token_ids=completion.token_ids,
                    logprobs=completion.logprobs,
                    finish_reason=completion.finish_reason,
                    prompt_ids=completion.prompt_ids,
                    metadata=completion.metadata,
                )
            return completion

        return self._map([functools.partial(one, i) for i in range(len(conversations))])
