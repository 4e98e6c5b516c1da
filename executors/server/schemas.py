"""Request bodies of the OpenAI-compatible server (validated strictly) and its OpenAI-style errors."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["APIError", "ChatMessage", "ChatRequest", "CompletionRequest", "error_body"]


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


def _only_sampled_logprobs(name: str, value: int | None) -> int | None:
    if value not in (None, 0):
        raise ValueError(
            f"only {name}=0 is supported (the sampled token's log-prob); alternatives are not computed"
        )
    return value


class _Request(BaseModel):
    # Strict: "5" is not an int here. Unknown fields are ignored (clients send many extras).
    model_config = ConfigDict(strict=True, extra="ignore")

    model: str = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    n: int = Field(default=1, ge=1, le=64)
    stop: str | list[str] | None = None
    seed: int | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    return_token_ids: bool = False
    """vLLM's extension: also return the prompt's and the completion's token ids."""

    def stops(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)


class CompletionRequest(_Request):
    """``POST /v1/completions``: a text prompt, a token-id prompt, or a batch of either."""

    prompt: str | list[str] | list[int] | list[list[int]]
    logprobs: int | None = None
    """Only ``0`` (the sampled token's log-prob) is supported; alternatives are not computed."""
    echo: Literal[False] = False

    @field_validator("logprobs")
    @classmethod
    def _sampled_only(cls, value: int | None) -> int | None:
        return _only_sampled_logprobs("logprobs", value)


class ChatMessage(BaseModel):
    """One chat message; ``content`` may be a string or a list of text parts."""

    model_config = ConfigDict(strict=True, extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The plain message dict that chat templates consume (text parts joined)."""
        content = self.content
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") != "text" or not isinstance(part.get("text"), str):
                    raise ValueError(f"Only text content parts are supported, got {part!r:.100}")
                parts.append(part["text"])
            content = "".join(parts)
        out: dict[str, Any] = {
            "role": "system" if self.role == "developer" else self.role,
            "content": content or "",
        }
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


class ChatRequest(_Request):
    """``POST /v1/chat/completions``: messages, optional tools (OpenAI function schemas)."""

    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = None
    """Only ``0`` is supported: alternatives are not computed."""

    @field_validator("top_logprobs")
    @classmethod
    def _sampled_only(cls, value: int | None) -> int | None:
        return _only_sampled_logprobs("top_logprobs", value)
