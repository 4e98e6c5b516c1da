"""`Tool` and `ToolRegistry`: named tools with JSON-schema arguments, dispatched from tool calls.

A tool's function takes the arguments dict and returns text. By convention a failure is text
starting with ``"Error:"``; the registry turns every other failure (unknown tool, bad arguments,
an exception inside the tool) into such text too, so dispatching never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gym_tinker.messages import ToolCall, function_schema

__all__ = ["Tool", "ToolOutput", "ToolRegistry", "validate_arguments"]

ERROR_PREFIX = "Error:"

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _json_type_name(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def validate_arguments(parameters: Mapping[str, Any], arguments: Any) -> str | None:
    """Check tool arguments against an object JSON schema; ``None`` if fine, else the problem.

    Checks what tool calls get wrong: not an object, missing required properties, properties
    the schema does not list, and the simple ``type`` (and ``enum``) of each property.

    Example:
        >>> schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        >>> validate_arguments(schema, {"n": 3}) is None
        True
        >>> validate_arguments(schema, {"n": "3", "m": 1})
        "unexpected argument 'm' (expected only: n); argument 'n' must be of type integer, got string '3'"
    """
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {_json_type_name(arguments)}"
    properties: Mapping[str, Any] = parameters.get("properties", {})
    problems = []
    missing = [name for name in parameters.get("required", []) if name not in arguments]
    if missing:
        problems.append(
            "missing required argument" + ("s " if len(missing) > 1 else " ") + ", ".join(map(repr, missing))
        )
    extra = [name for name in arguments if name not in properties]
    if extra:
        expected = ", ".join(properties) or "no arguments"
        problems.append(
            "unexpected argument"
            + ("s " if len(extra) > 1 else " ")
            + ", ".join(map(repr, extra))
            + f" (expected only: {expected})"
        )
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(spec, Mapping):
            continue
        wanted = spec.get("type")
        types = [wanted] if isinstance(wanted, str) else list(wanted or [])
        if types and not any(_JSON_TYPES.get(t, lambda v: True)(value) for t in types):
            problems.append(
                f"argument {name!r} must be of type {' or '.join(types)}, got {_json_type_name(value)} {value!r:.60}"
            )
        elif "enum" in spec and value not in spec["enum"]:
            problems.append(f"argument {name!r} must be one of {spec['enum']}, got {value!r:.60}")
    return "; ".join(problems) or None


@dataclass(frozen=True)
class ToolOutput:
    """What running one tool call produced."""

    name: str
    """The tool name that was called (as written by the agent)."""
    content: str
    """Text for the agent: the result, or ``"Error: ..."``."""
    ok: bool
    """Whether the call succeeded (``False`` for every kind of error)."""
    call_id: str = ""
    """The call's id, to echo back as ``tool_call_id``."""


@dataclass(frozen=True)
class Tool:
    """A callable tool: name, description, JSON-schema parameters and a function to text.

    The function must be picklable (a module-level function, a ``functools.partial`` of one, or
    a bound method of a picklable object) so envs holding tools pickle.

    Example:
        >>> def shout(arguments):
        ...     return arguments["text"].upper()
        >>> tool = Tool("shout", "Upper-case text.", {"type": "object",
        ...     "properties": {"text": {"type": "string"}}, "required": ["text"]}, shout)
        >>> tool.schema()["function"]["name"], tool.function({"text": "hi"})
        ('shout', 'HI')
    """

    name: str
    """Name the agent calls the tool by."""
    description: str
    """What the tool does, for the model."""
    parameters: dict[str, Any]
    """JSON schema (``"type": "object"``) of the arguments."""
    function: Callable[[dict[str, Any]], str]
    """Runs the tool on validated arguments; returns text (``"Error: ..."`` on failure)."""

    def __post_init__(self) -> None:
        function_schema(self.name, self.description, self.parameters)  # validates name and schema
        if not callable(self.function):
            raise TypeError(f"Tool {self.name!r}: `function` must be callable, got {self.function!r}")

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any], function: Callable[[dict[str, Any]], str]) -> Tool:
        """Build a tool from an OpenAI function schema (as :func:`~gym_tinker.messages.function_schema` makes).

        Example:
            >>> from gym_tinker.tools.calculator import CALCULATOR_SCHEMA, calculator_tool
            >>> Tool.from_schema(CALCULATOR_SCHEMA, calculator_tool).name
            'calculator'
        """
        spec = schema.get("function") if isinstance(schema, Mapping) else None
        if not isinstance(spec, Mapping):
            raise ValueError(
                f'Expected an OpenAI tool schema {{"type": "function", "function": {{...}}}}, got {schema!r:.200}'
            )
        return cls(spec["name"], spec.get("description", ""), dict(spec["parameters"]), function)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema of this tool."""
        return function_schema(self.name, self.description, self.parameters)


class ToolRegistry:
    """A set of tools by name: their schemas for the prompt, and safe dispatch of tool calls.

    Args:
        tools: The tools; names must be unique.

    Example:
        >>> from gym_tinker.tools.calculator import CALCULATOR_SCHEMA, calculator_tool
        >>> registry = ToolRegistry([Tool.from_schema(CALCULATOR_SCHEMA, calculator_tool)])
        >>> registry.dispatch(ToolCall("calculator", {"expression": "6 * 7"}))
        '42'
        >>> registry.dispatch(ToolCall("weather", {}))
        "Error: unknown tool 'weather'. Available tools: calculator."
        >>> registry.dispatch(ToolCall("calculator", {"expr": "1"}))
        "Error: bad arguments for tool 'calculator': missing required argument 'expression'; unexpected argument 'expr' (expected only: expression)"
    """

    def __init__(self, tools: Iterable[Tool]):
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise TypeError(f"ToolRegistry expects Tool instances, got {type(tool).__name__}")
            if tool.name in self._tools:
                raise ValueError(f"Duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool

    @property
    def names(self) -> list[str]:
        """Tool names, in registration order."""
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of every tool (for ``info["tools"]`` and chat templates)."""
        return [tool.schema() for tool in self._tools.values()]

    def run(self, call: ToolCall) -> ToolOutput:
        """Run one call; every failure becomes an ``"Error: ..."`` output with ``ok=False``."""
        tool = self._tools.get(call.name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return ToolOutput(
                call.name,
                f"{ERROR_PREFIX} unknown tool {call.name!r}. Available tools: {available}.",
                False,
                call.id,
            )
        problem = validate_arguments(tool.parameters, call.arguments)
        if problem is not None:
            return ToolOutput(
                call.name, f"{ERROR_PREFIX} bad arguments for tool {call.name!r}: {problem}", False, call.id
            )
        try:
            content = tool.function(dict(call.arguments))
        except Exception as err:  # a tool bug must not end the episode; the agent sees it
            return ToolOutput(
                call.name,
                f"{ERROR_PREFIX} tool {call.name!r} failed: {type(err).__name__}: {err}",
                False,
                call.id,
            )
        if not isinstance(content, str):
            content = str(content)
        return ToolOutput(call.name, content, not content.startswith(ERROR_PREFIX), call.id)

    def dispatch(self, call: ToolCall) -> str:
        """Run one call and return only its text (see :meth:`run`)."""
        return self.run(call).content
