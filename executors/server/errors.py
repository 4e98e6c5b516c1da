"""The server's errors, answered in OpenAI's layout: ``{"error": {"message", "type", "param", "code"}}``."""

from __future__ import annotations

from typing import Any

__all__ = ["APIError", "error_body"]


class APIError(Exception):
    """An error answered to the client as ``{"error": {"message", "type", "param", "code"}}``.

    Example:
        >>> err = APIError("bad", param="model", code="model_not_found")
        >>> err.status, error_body(err)["error"]["code"]
        (400, 'model_not_found')
    """

    def __init__(
        self,
        message: str,
        status: int = 400,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        self.param = param
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_api_error, (self.message, self.status, self.type, self.param, self.code))


def _rebuild_api_error(message: str, status: int, type: str, param: str | None, code: str | None) -> APIError:
    return APIError(message, status, type=type, param=param, code=code)


def error_body(err: APIError) -> dict[str, Any]:
    """The JSON body for ``err``, in the OpenAI error layout."""
    return {"error": {"message": err.message, "type": err.type, "param": err.param, "code": err.code}}
