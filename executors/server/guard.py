"""The server's front door (an ASGI middleware): API-key check, request-size cap, no internals in a 500.

Everything it answers uses the OpenAI error layout (``{"error": {"message", "type", "param",
"code"}}``), so an OpenAI client raises its usual exceptions (``AuthenticationError`` for 401,
``APIStatusError`` with ``status_code`` 413 for an oversized body).
"""

from __future__ import annotations

import hmac
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from executors.server.errors import APIError, error_body

__all__ = ["API_KEY_ENV", "DEFAULT_MAX_REQUEST_BYTES", "DRAIN_BYTES", "OPEN_PATHS", "RequestGuard"]

API_KEY_ENV = "GYM_TINKER_API_KEY"
"""The environment variable ``gym-tinker serve`` reads its API key from (as vLLM reads ``VLLM_API_KEY``)."""

DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""4 MiB: far above any prompt that fits a model's context as text or token ids, small enough to parse at once."""

OPEN_PATHS = frozenset({"/health", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})
"""Paths answered without an API key: the health check and the API's own documentation."""

DRAIN_BYTES = 64 * 1024 * 1024
"""Up to this much of a rejected body (or ``max_request_bytes``, if larger) is read and dropped,
so that the client, which is still sending, sees the answer rather than a reset connection;
past it the server closes the connection."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

logger = logging.getLogger("executors.server")


class RequestGuard:
    """Checks every HTTP request before the app sees it, and keeps tracebacks out of responses.

    * With ``api_key``, a request outside :data:`OPEN_PATHS` needs ``Authorization: Bearer
      <api_key>`` (compared in constant time); otherwise 401, code ``invalid_api_key``.
    * A body over ``max_request_bytes`` gets 413 and is never parsed nor kept: one whose
      ``Content-Length`` says so is refused on that header, a chunked one as soon as it passes
      the cap; what the client still sends is dropped as it arrives (see :data:`DRAIN_BYTES`).
      The app receives an accepted body in one message.
    * An exception that escapes the app becomes a 500 with a generic message and an error id;
      the traceback goes to the ``executors.server`` logger under the same id.

    Args:
        app: The ASGI app to guard.
        api_key: The key clients must send, or None for no authentication.
        max_request_bytes: Largest request body accepted, in bytes.

    Example:
        >>> guard = RequestGuard(lambda scope, receive, send: None, api_key="sk-1", max_request_bytes=10)
        >>> guard.authorized([(b"authorization", b"Bearer sk-1")]), guard.authorized([])
        (True, False)
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        api_key: str | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    ) -> None:
        self.check_settings(api_key, max_request_bytes)
        self.app = app
        self.max_request_bytes = max_request_bytes
        self._key = api_key.encode() if api_key is not None else None

    @staticmethod
    def check_settings(api_key: str | None, max_request_bytes: int) -> None:
        """Raise ValueError for an empty or non-str ``api_key`` or a ``max_request_bytes`` below 1."""
        if api_key is not None and (not isinstance(api_key, str) or not api_key):
            raise ValueError(
                f"Expected `api_key` to be a non-empty str or None, got {type(api_key).__name__}"
            )
        if (
            not isinstance(max_request_bytes, int)
            or isinstance(max_request_bytes, bool)
            or max_request_bytes < 1
        ):
            raise ValueError(f"Expected `max_request_bytes` to be an int >= 1, got {max_request_bytes!r}")

    def authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """Whether ``headers`` carry the right bearer key (always True without a key)."""
        if self._key is None:
            return True
        value = next((v for k, v in headers if k.lower() == b"authorization"), b"")
        scheme, _, token = value.strip().partition(b" ")
        # compare_digest runs in time independent of where the key and the token differ.
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self._key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._guarded(scope, receive, tracked_send)
        except Exception:
            if started:  # too late for a clean 500: the server closes the connection
                raise
            error_id = uuid.uuid4().hex[:12]
            logger.exception("Request %s %s failed (error id %s)", scope["method"], scope["path"], error_id)
            err = APIError(
                f"The server had an error while processing your request (error id {error_id}); "
                "its log has the details.",
                500,
                type="server_error",
            )
            await _respond(send, err)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        if path not in OPEN_PATHS and not self.authorized(headers):
            err = _unauthorized(any(k.lower() == b"authorization" for k, _ in headers))
            await self._reject(receive, send, err, headers, 0, [(b"www-authenticate", b"Bearer")])
            return
        declared = _declared_length(headers)
        if declared is not None and declared > self.max_request_bytes:
            await self._reject(receive, send, self._too_large(declared), headers, 0)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before sending its body; nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            more = bool(message.get("more_body", False))
            if size > self.max_request_bytes:
                await self._reject(receive, send, self._too_large(None), headers, size if more else None)
                return
            chunks.append(chunk)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the client to disconnect

        await self.app(scope, replay, send)

    def _too_large(self, declared: int | None) -> APIError:
        size = f"{declared} bytes" if declared is not None else "more than that"
        return APIError(
            f"The request body is too large: this server accepts at most {self.max_request_bytes} bytes "
            f"(--max-request-bytes), got {size}.",
            413,
        )

    async def _reject(
        self,
        receive: Receive,
        send: Send,
        err: APIError,
        request_headers: list[tuple[bytes, bytes]],
        read: int | None,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """Answer ``err`` to a request whose body is unread (``read`` bytes of it read so far; None: all).

        The rest of the body is read and dropped up to a bound, so the client sees the answer; a
        body declared or found larger than that bound gets ``Connection: close`` instead. A
        client waiting for ``100 Continue`` (curl, for large bodies) gets the answer before it
        sends any of the body, and the connection closes.
        """
        limit = max(DRAIN_BYTES, self.max_request_bytes)
        declared = _declared_length(request_headers)
        waiting = read == 0 and any(
            k.lower() == b"expect" and v.strip().lower() == b"100-continue" for k, v in request_headers
        )
        close = False
        if waiting or (declared is not None and declared > limit):
            close = True
        elif read is not None:
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                read += len(message.get("body", b""))
                more = bool(message.get("more_body", False))
                if more and read > limit:
                    close = True
                    break
        await _respond(send, err, [*(extra or []), *([(b"connection", b"close")] if close else [])])


def _unauthorized(key_sent: bool) -> APIError:
    if key_sent:
        message = "Incorrect API key provided. Send the server's key as `Authorization: Bearer <key>`."
    else:
        message = (
            "You didn't provide an API key. Send the server's key as `Authorization: Bearer <key>` "
            "(the OpenAI client sends its `api_key` this way)."
        )
    return APIError(message, 401, code="invalid_api_key")


def _declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for key, value in headers:
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _respond(send: Send, err: APIError, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(error_body(err)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": err.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
