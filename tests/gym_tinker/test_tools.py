"""Tool and ToolRegistry: schemas, dispatch, and every kind of bad call turned into error text."""

from __future__ import annotations

import functools
import pickle

import pytest

from gym_tinker.messages import ToolCall
from gym_tinker.tools.base import Tool, ToolRegistry, validate_arguments
from gym_tinker.tools.calculator import CALCULATOR_SCHEMA, calculator_tool
from gym_tinker.tools.knowledge_base import KnowledgeBase
from gym_tinker.tools.python_tool import make_python_tool, python_tool
from gym_tinker.tools.sandbox import SandboxLimits

SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "label": {"type": "string", "enum": ["a", "b"]},
        "flag": {"type": "boolean"},
        "items": {"type": "array"},
    },
    "required": ["count"],
}


def _describe(arguments: dict) -> str:
    return ",".join(f"{k}={arguments[k]!r}" for k in sorted(arguments))


def _broken(arguments: dict) -> str:
    raise RuntimeError("disk on fire")


def _registry() -> ToolRegistry:
    return ToolRegistry(
        [
            Tool.from_schema(CALCULATOR_SCHEMA, calculator_tool),
            Tool("describe", "Describe arguments.", SCHEMA, _describe),
            Tool("broken", "Always fails.", {"type": "object", "properties": {}}, _broken),
            make_python_tool(SandboxLimits(wall_seconds=2.0)),
        ]
    )


def test_schemas_are_openai_function_schemas():
    schemas = _registry().schemas()
    assert [s["function"]["name"] for s in schemas] == ["calculator", "describe", "broken", "python"]
    assert all(s["type"] == "function" and s["function"]["parameters"]["type"] == "object" for s in schemas)


def test_dispatch_runs_the_tool():
    registry = _registry()
    assert registry.dispatch(ToolCall("calculator", {"expression": "2 ** 10"})) == "1024"
    assert (
        registry.dispatch(ToolCall("describe", {"count": 2, "ratio": 1, "flag": True}))
        == "count=2,flag=True,ratio=1"
    )
    output = registry.run(ToolCall("python", {"code": "print(7 * 6)"}, id="c9"))
    assert (output.content, output.ok, output.call_id) == ("42", True, "c9")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            ToolCall("nope", {}),
            "Error: unknown tool 'nope'. Available tools: calculator, describe, broken, python.",
        ),
        (
            ToolCall("describe", {}),
            "Error: bad arguments for tool 'describe': missing required argument 'count'",
        ),
        (
            ToolCall("describe", {"count": 1, "colour": "red"}),
            "Error: bad arguments for tool 'describe': unexpected argument 'colour' "
            "(expected only: count, ratio, label, flag, items)",
        ),
        (
            ToolCall("describe", {"count": True}),
            "Error: bad arguments for tool 'describe': argument 'count' must be of type integer, got boolean True",
        ),
        (
            ToolCall("describe", {"count": 1.5}),
            "Error: bad arguments for tool 'describe': argument 'count' must be of type integer, got number 1.5",
        ),
        (
            ToolCall("describe", {"count": 1, "ratio": "half"}),
            "Error: bad arguments for tool 'describe': argument 'ratio' must be of type number, got string 'half'",
        ),
        (
            ToolCall("describe", {"count": 1, "label": "c"}),
            "Error: bad arguments for tool 'describe': argument 'label' must be one of ['a', 'b'], got 'c'",
        ),
        (ToolCall("broken", {}), "Error: tool 'broken' failed: RuntimeError: disk on fire"),
        (
            ToolCall("calculator", {"expression": 5}),
            "Error: bad arguments for tool 'calculator': argument 'expression' must be of type string, got integer 5",
        ),
    ],
)
def test_bad_calls_become_error_text(call, message):
    output = _registry().run(call)
    assert output.content == message
    assert not output.ok


def test_non_object_arguments_and_tool_reported_errors():
    assert validate_arguments(SCHEMA, ["count", 1]) == "arguments must be a JSON object, got array"
    registry = _registry()
    bad_expression = registry.run(ToolCall("calculator", {"expression": "import os"}))
    assert bad_expression.content.startswith("Error:") and not bad_expression.ok
    crash = registry.run(ToolCall("python", {"code": "raise SystemExit(4)"}))
    assert crash.content.startswith("Error: exit code 4") and not crash.ok


def test_registry_rejects_duplicates_and_non_tools():
    tool = Tool.from_schema(CALCULATOR_SCHEMA, calculator_tool)
    with pytest.raises(ValueError, match="Duplicate tool name 'calculator'"):
        ToolRegistry([tool, tool])
    with pytest.raises(TypeError, match="expects Tool instances, got dict"):
        ToolRegistry([CALCULATOR_SCHEMA])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="tool name"):
        Tool("bad name", "x", {"type": "object"}, calculator_tool)
    with pytest.raises(ValueError, match="OpenAI tool schema"):
        Tool.from_schema({"name": "calculator"}, calculator_tool)


def test_python_tool_output_forms():
    assert python_tool({"code": "x = 1"}) == "(no output; use print() to show results)"
    assert python_tool({"script": "print(1)"}).startswith("Error: the python tool needs a 'code' argument")
    timed_out = python_tool({"code": "while True:\n    pass"}, limits=SandboxLimits(wall_seconds=0.5))
    assert timed_out == "Error: timed out after 0.5 s\n(no output)"
    failed = python_tool({"code": "print('partial')\n1 / 0"})
    assert failed.startswith("Error: exit code 1\npartial\nstderr:")
    assert "ZeroDivisionError" in failed


def test_registries_with_every_tool_kind_pickle():
    registry = ToolRegistry(
        [*KnowledgeBase(1).tools(), make_python_tool(), Tool.from_schema(CALCULATOR_SCHEMA, calculator_tool)]
    )
    copy = pickle.loads(pickle.dumps(registry))
    call = ToolCall("search", {"query": "companies"})
    assert copy.dispatch(call) == registry.dispatch(call)
    assert copy.dispatch(ToolCall("python", {"code": "print(3)"})) == "3"
    assert isinstance(copy._tools["python"].function, functools.partial)
