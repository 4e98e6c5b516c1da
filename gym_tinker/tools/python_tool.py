"""The ``python`` tool: runs agent-written code in the sandbox and returns its output as text."""

from __future__ import annotations

import functools
from typing import Any

from gym_tinker.messages import function_schema
from gym_tinker.tools.base import Tool
from gym_tinker.tools.sandbox import SandboxLimits, run_python

__all__ = ["PYTHON_SCHEMA", "PYTHON_TOOL_LIMITS", "make_python_tool", "python_tool"]

PYTHON_SCHEMA: dict[str, Any] = function_schema(
    "python",
    "Run a Python 3 script in a sandbox (no network, no files outside /tmp, a few seconds of CPU) "
    "and return what it prints. Use print() to show results. Example: print(sum(range(10)))",
    {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "The Python source to run."}},
        "required": ["code"],
    },
)
"""OpenAI tool schema of the ``python`` tool."""

PYTHON_TOOL_LIMITS = SandboxLimits(wall_seconds=3.0, cpu_seconds=2, max_output_bytes=16 * 1024)
"""Default limits of one ``python`` call: short, since an agent step waits for it."""


def python_tool(
    arguments: dict[str, Any], *, limits: SandboxLimits = PYTHON_TOOL_LIMITS, use_bwrap: bool | None = None
) -> str:
    """Run the ``python`` tool: the script's output, stderr and any error, as text (never raises).

    Args:
        arguments: ``{"code": "..."}``.
        limits: Sandbox limits for the run.
        use_bwrap: As in :func:`~gym_tinker.tools.sandbox.run_python`.

    Example:
        >>> python_tool({"code": "print(sum(range(10)))"})
        '45'
        >>> python_tool({"code": "x = 1"})
        '(no output; use print() to show results)'
    """
    code = arguments.get("code") if isinstance(arguments, dict) else None
    if not isinstance(code, str):
        return f"Error: the python tool needs a 'code' argument with the source as a string, got {arguments!r:.100}"
    result = run_python(code, limits=limits, use_bwrap=use_bwrap)
    if result.ok and not result.stdout and not result.stderr:
        return "(no output; use print() to show results)"
    if result.ok:
        return result.as_text()
    return f"Error: {result.error}\n{result.as_text(include_error=False)}"


def make_python_tool(limits: SandboxLimits = PYTHON_TOOL_LIMITS, use_bwrap: bool | None = None) -> Tool:
    """The ``python`` :class:`~gym_tinker.tools.base.Tool` with the given sandbox limits.

    Example:
        >>> make_python_tool().function({"code": "print(2 ** 10)"})
        '1024'
    """
    return Tool.from_schema(PYTHON_SCHEMA, functools.partial(python_tool, limits=limits, use_bwrap=use_bwrap))
