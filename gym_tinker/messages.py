"""Chat message types, tool calls and OpenAI tool schemas: the interaction protocol's data."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ROLES",
    "Message",
    "Role",
    "ToolCall",
    "assistant_message",
    "function_schema",
    "system_message",
    "tool_message",
    "user_message",
]

Role = Literal["system", "user", "assistant", "tool"]
"""The roles a chat message can have."""

ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


class Message(TypedDict):
    """One chat message in the OpenAI form that chat templates consume.

    ``tool_calls`` appears only on assistant messages that call tools (each entry in the
    OpenAI form, see :meth:`ToolCall.to_openai`); ``tool_call_id`` and ``name`` only on
    ``tool`` messages answering a call.
    """

    role: str
    content: str
    tool_calls: NotRequired[list[dict[str, Any]]]
    tool_call_id: NotRequired[str]
    name: NotRequired[str]


@dataclass(frozen=True)
class ToolCall:
    """A request from the agent to run a tool.

    Example:
        >>> call = ToolCall("calculator", {"expression": "2 + 3"}, id="call_0")
        >>> call.to_openai()["function"]
        {'name': 'calculator', 'arguments': '{"expression": "2 + 3"}'}
    """

    name: str
    """The tool's name, as in its schema."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for the tool (already decoded from JSON)."""
    id: str = ""
    """Call id, echoed back in the tool's answer (``tool_call_id``); may be empty."""

    def to_openai(self) -> dict[str, Any]:
        """The call in the OpenAI ``tool_calls`` entry form (arguments as a JSON string)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


def function_schema(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI function-tool schema: ``{"type": "function", "function": {...}}``.

    Args:
        name: Tool name the agent calls it by (letters, digits, ``_`` and ``-``).
        description: What the tool does, for the model.
        parameters: A JSON-schema object describing the arguments.

    Raises:
        ValueError: If ``name`` is not a valid tool name or ``parameters`` is not an object schema.

    Example:
        >>> schema = function_schema("echo", "Repeat text.", {
        ...     "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
        >>> schema["type"], schema["function"]["name"]
        ('function', 'echo')
    """
    if (
        not isinstance(name, str)
        or not name
        or not all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
    ):
        raise ValueError(f"Expected a tool name of ASCII letters, digits, '_' or '-', got {name!r}")
    if not isinstance(description, str):
        raise ValueError(f"Expected `description` to be a str, got {type(description).__name__}")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise ValueError(
            f'Expected `parameters` to be a JSON schema with "type": "object", got {parameters!r}'
        )
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def system_message(content: str) -> Message:
    """A ``system`` message.

    Example:
        >>> system_message("Be brief.")
        {'role': 'system', 'content': 'Be brief.'}
    """
    return {"role": "system", "content": content}


def user_message(content: str) -> Message:
    """A ``user`` message.

    Example:
        >>> user_message("What is 2 + 2?")
        {'role': 'user', 'content': 'What is 2 + 2?'}
    """
    return {"role": "user", "content": content}


def assistant_message(content: str, tool_calls: list[ToolCall] | None = None) -> Message:
    """An ``assistant`` message, with ``tool_calls`` in OpenAI form when there are any.

    Example:
        >>> msg = assistant_message("", [ToolCall("calculator", {"expression": "1+1"}, id="c1")])
        >>> msg["role"], msg["tool_calls"][0]["id"]
        ('assistant', 'c1')
    """
    message: Message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [call.to_openai() for call in tool_calls]
    return message


def tool_message(content: str, *, tool_call_id: str = "", name: str = "") -> Message:
    """A ``tool`` message: a tool's output (or error) in answer to a call.

    Example:
        >>> tool_message("4", tool_call_id="c1", name="calculator")
        {'role': 'tool', 'content': '4', 'tool_call_id': 'c1', 'name': 'calculator'}
    """
    message: Message = {"role": "tool", "content": content}
    if tool_call_id:
        message["tool_call_id"] = tool_call_id
    if name:
        message["name"] = name
    return message
