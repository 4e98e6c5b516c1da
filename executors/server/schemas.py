"""Request bodies of the OpenAI-compatible server, parsed and validated strictly (errors: :mod:`executors.server.errors`)."""

from __future__ import annotations

import json
import reprlib
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from executors.server.errors import APIError, error_body

__all__ = [
    "MAX_JSON_DEPTH",
    "APIError",
    "ChatMessage",
    "ChatRequest",
    "CompletionRequest",
    "error_body",
    "parse_request",
    "short_repr",
    "validation_error",
]

MAX_JSON_DEPTH = 64
"""Most levels of nested arrays and objects in a request body: deeper than any real request
(tool schemas included), and far from Python's recursion limit."""

_MAX_SEED = 2**63 - 1
_RESPONSE_FORMATS = ("text", "json_object", "json_schema")
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxdict = 8
_REPR.maxlevel = 3


def short_repr(value: Any) -> str:
    """``repr(value)``, cut short for error messages (a request may carry megabytes).

    Example:
        >>> short_repr("x" * 1000)[:12], len(short_repr(list(range(10**6)))) < 100
        ("'xxxxxxxxxxx", True)
    """
    return _REPR.repr(value)


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
    """In ``[0, 2**63 - 1]``; the same seed and request give the same completions."""
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    """``{"type": "text" | "json_object" | "json_schema", ...}``; accepted, not enforced (no
    constrained decoding): the model is not forced to answer in JSON."""
    return_token_ids: bool = False
    """vLLM's extension: also return the prompt's and the completion's token ids."""

    @field_validator("seed")
    @classmethod
    def _seed_in_range(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= _MAX_SEED:
            raise ValueError(f"expected an integer in [0, 2**63 - 1] (0 to {_MAX_SEED})")
        return value

    @field_validator("stop")
    @classmethod
    def _stops_not_empty(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value == "" or (isinstance(value, list) and "" in value):
            raise ValueError("expected non-empty stop strings (an empty one would stop before any text)")
        return value

    @field_validator("response_format")
    @classmethod
    def _known_format(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        if value.get("type") not in _RESPONSE_FORMATS:
            raise ValueError(f"expected an object whose 'type' is one of {list(_RESPONSE_FORMATS)}")
        if value["type"] == "json_schema" and not isinstance(value.get("json_schema"), dict):
            raise ValueError("expected a 'json_schema' object beside type 'json_schema'")
        return value

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
    """``"none"`` turns tool-call parsing off; other values must go with ``tools`` (a named
    function must be one of them) and do not constrain the model."""
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = None
    """Only ``0`` is supported: alternatives are not computed."""

    @field_validator("top_logprobs")
    @classmethod
    def _sampled_only(cls, value: int | None) -> int | None:
        return _only_sampled_logprobs("top_logprobs", value)

    @field_validator("tools")
    @classmethod
    def _function_tools(cls, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for i, tool in enumerate(tools or ()):
            function = tool.get("function")
            if (
                tool.get("type", "function") != "function"
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str)
            ):
                raise ValueError(
                    f"tools[{i}] must be {{'type': 'function', 'function': {{'name': <str>, ...}}}}"
                )
        return tools

    @field_validator("tool_choice")
    @classmethod
    def _choice_names_a_tool(cls, choice: str | dict[str, Any] | None, info: ValidationInfo) -> Any:
        if choice is None or choice == "none" or "tools" not in info.data:
            return choice  # without valid `tools`, their own error is the one reported
        names = [tool["function"]["name"] for tool in info.data["tools"] or ()]
        if not names:
            raise ValueError("expected `tools` beside a tool_choice other than 'none'; no tools were given")
        if isinstance(choice, dict):
            function = choice.get("function")
            if (
                choice.get("type") != "function"
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str)
            ):
                raise ValueError(
                    "expected 'none', 'auto', 'required' or {'type': 'function', 'function': {'name': <a tool's name>}}"
                )
            if function["name"] not in names:
                raise ValueError(
                    f"the function {short_repr(function['name'])} is not one of the tools, {short_repr(names)}"
                )
        return choice


RequestT = TypeVar("RequestT", bound=BaseModel)


def parse_request(body: bytes, content_type: str | None, model: type[RequestT]) -> RequestT:
    """Parse a request ``body`` into ``model``, or raise the :class:`APIError` that says what is wrong.

    The body must be UTF-8 JSON (``content_type`` ``application/json`` or absent; otherwise 415),
    an object, nested at most :data:`MAX_JSON_DEPTH` deep, its strings valid Unicode (no lone
    surrogate escapes such as ``"\\ud800"``), and valid for ``model``.

    Example:
        >>> parse_request(b'{"model": "m", "prompt": "hi"}', "application/json", CompletionRequest).prompt
        'hi'
        >>> parse_request(b"[" * 5000 + b"]" * 5000, None, CompletionRequest)
        Traceback (most recent call last):
        ...
        executors.server.errors.APIError: The request body is nested too deeply: at most 64 levels of arrays and objects are accepted
        >>> parse_request(b'{"model": "m", "prompt": "hi", "seed": -1}', None, CompletionRequest)
        Traceback (most recent call last):
        ...
        executors.server.errors.APIError: Invalid field 'seed': expected an integer in [0, 2**63 - 1] (0 to 9223372036854775807), got -1
    """
    if content_type is not None and not _is_json(content_type):
        raise APIError(
            f"Expected the request body as JSON with `Content-Type: application/json`, got {short_repr(content_type)}",
            415,
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise APIError(f"The request body is not valid UTF-8: {err}") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise APIError(_too_deep()) from None
    except ValueError as err:  # JSONDecodeError, and ints of over 4300 digits
        raise APIError(f"The request body is not valid JSON: {err}") from None
    _check_json(value)
    try:
        return model.model_validate(value)
    except ValidationError as err:
        raise validation_error(err.errors(include_url=False)) from None


def validation_error(errors: Sequence[Any]) -> APIError:
    """The 400 error for pydantic's validation ``errors``, naming the first offending field.

    Example:
        >>> validation_error([{"type": "missing", "loc": ("body", "prompt"), "msg": "Field required"}]).message
        "Invalid field 'prompt': Field required"
    """
    first: dict[str, Any] = dict(errors[0]) if errors else {"msg": "invalid request", "loc": ()}
    if first.get("type") == "json_invalid":
        return APIError(
            f"The request body is not valid JSON: {first.get('ctx', {}).get('error', first.get('msg'))}"
        )
    loc = [str(part) for part in first.get("loc", ()) if part != "body"]
    if not loc:
        got = f", got {short_repr(first['input'])}" if "input" in first else ""
        return APIError(f"The request body must be a JSON object{got}")
    field = loc[0]
    where = ".".join(loc)
    got = f", got {short_repr(first['input'])}" if "input" in first and first.get("type") != "missing" else ""
    message = str(first.get("msg", "")).removeprefix("Value error, ")
    return APIError(f"Invalid field {where!r}: {message}{got}", param=field)


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _too_deep() -> str:
    return f"The request body is nested too deeply: at most {MAX_JSON_DEPTH} levels of arrays and objects are accepted"


def _check_text(text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise APIError(
                f"The request body has a string that is not valid Unicode (a lone surrogate escape such as "
                f"'\\ud800' outside a pair): {short_repr(text)}"
            ) from None


def _check_json(value: Any) -> None:
    """Depth and lone surrogates, checked without recursion (the body is untrusted)."""
    if isinstance(value, str):
        _check_text(value)
        return
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, (list, dict)) else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise APIError(_too_deep())
        if isinstance(node, dict):
            for key in node:
                _check_text(key)
            children = node.values()
        else:
            children = node
        for child in children:
            if isinstance(child, str):
                _check_text(child)
            elif isinstance(child, (list, dict)):
                stack.append((child, depth + 1))
