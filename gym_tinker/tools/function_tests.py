"""Runs an untrusted Python function against hidden unit tests inside the sandbox.

Only the test *inputs* enter the sandbox; the function's return values come back as JSON and are
compared with the expected values here, in the parent process, so code that tampers with the
harness can gain nothing it could not get by returning the right values.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gym_tinker.tools.sandbox import SandboxLimits, SandboxResult, run_python

__all__ = ["FunctionTestReport", "TestOutcome", "run_function_tests", "values_equal"]

_HARNESS = """\
import io as _io, json as _json, sys as _sys
_MARK = {mark!r}
_OUT = _sys.stdout
class _Sink(_io.TextIOBase):
    # What the solution prints is dropped: only the harness writes to stdout.
    def write(self, s):
        return len(s)
def _emit(record):
    _OUT.write(_MARK + _json.dumps(record) + "\\n")
    _OUT.flush()
_sys.stdout = _Sink()
_ns = {{"__name__": "solution"}}
try:
    exec(compile({code!r}, "solution.py", "exec"), _ns)
except BaseException as _e:
    _emit({{"load_error": (type(_e).__name__ + ": " + str(_e))[:300]}})
    raise SystemExit(0)
_fn = _ns.get({entry!r})
if not callable(_fn):
    _emit({{"load_error": "the code does not define a function named " + {entry!r}}})
    raise SystemExit(0)
for _i, _args in enumerate(_json.loads({tests!r})):
    try:
        _value = _fn(*_args)
        _record = {{"i": _i, "value": _json.dumps(_value, allow_nan=True)}}
    except BaseException as _e:
        _record = {{"i": _i, "error": (type(_e).__name__ + ": " + str(_e))[:300]}}
    _emit(_record)
"""


def values_equal(got: Any, expected: Any, *, rel_tol: float = 1e-9, abs_tol: float = 1e-9) -> bool:
    """Structural equality of JSON values, with a tolerance for floats; ``True != 1`` here.

    Example:
        >>> values_equal([1, 0.1 + 0.2, "a"], [1, 0.3, "a"])
        True
        >>> values_equal(True, 1), values_equal({"a": [1]}, {"a": [2]})
        (False, False)
    """
    if isinstance(got, bool) or isinstance(expected, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(got, int | float) and isinstance(expected, int | float):
        if isinstance(got, float) or isinstance(expected, float):
            return math.isclose(got, expected, rel_tol=rel_tol, abs_tol=abs_tol) or (
                math.isnan(got) and math.isnan(expected)
            )
        return got == expected
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(
            values_equal(g, e) for g, e in zip(got, expected, strict=True)
        )
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(values_equal(got[k], expected[k]) for k in got)
    return type(got) is type(expected) and got == expected


@dataclass(frozen=True)
class TestOutcome:
    """The result of one hidden test."""

    __test__ = False  # not a pytest test class

    index: int
    """Position of the test in the list given."""
    passed: bool
    """The function returned the expected value."""
    detail: str
    """``"ok"``, or why it failed (wrong value, exception, not run)."""


@dataclass(frozen=True)
class FunctionTestReport:
    """Per-test outcomes of :func:`run_function_tests`.

    Example:
        >>> report = run_function_tests("def f(x):\\n    return x * 2", "f", [([2], 4), ([3], 7)])
        >>> report.passed, report.total, report.pass_rate
        (1, 2, 0.5)
    """

    outcomes: tuple[TestOutcome, ...]
    """One per test, in order."""
    load_error: str | None
    """Why the code could not be loaded (syntax error, missing function), if it could not."""
    sandbox: SandboxResult
    """The raw sandbox run (stderr, timeout, limits)."""

    @property
    def total(self) -> int:
        """Number of tests."""
        return len(self.outcomes)

    @property
    def passed(self) -> int:
        """Number of tests passed."""
        return sum(o.passed for o in self.outcomes)

    @property
    def pass_rate(self) -> float:
        """Fraction of tests passed (0.0 when there are none)."""
        return self.passed / self.total if self.outcomes else 0.0

    def summary(self) -> str:
        """A short human-readable account: how many passed, and the first problem.

        Example:
            >>> print(run_function_tests("def f(:", "f", [([1], 1)]).summary())
            0/1 tests passed. The code could not be loaded: SyntaxError: invalid syntax (solution.py, line 1)
        """
        text = f"{self.passed}/{self.total} tests passed."
        if self.load_error:
            return f"{text} The code could not be loaded: {self.load_error}"
        failed = next((o for o in self.outcomes if not o.passed), None)
        if failed is not None:
            text += f" First failure (test {failed.index}): {failed.detail}"
        if self.sandbox.error and not self.sandbox.ok:
            text += f" Sandbox: {self.sandbox.error}."
        return text


def _parse_records(stdout: str, mark: str) -> tuple[dict[int, dict[str, Any]], str | None]:
    records: dict[int, dict[str, Any]] = {}
    load_error = None
    for line in stdout.splitlines():
        if not line.startswith(mark):
            continue
        try:
            record = json.loads(line[len(mark) :])
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        if "load_error" in record:
            load_error = str(record["load_error"])
        elif isinstance(record.get("i"), int):
            records.setdefault(record["i"], record)
    return records, load_error


def _outcome(index: int, record: dict[str, Any] | None, expected: Any, sandbox: SandboxResult) -> TestOutcome:
    if record is None:
        reason = sandbox.error or "the process ended early"
        return TestOutcome(index, False, f"not run ({reason})")
    if "error" in record:
        return TestOutcome(index, False, f"raised {record['error']}")
    try:
        value = json.loads(record.get("value", ""))
    except (TypeError, json.JSONDecodeError):
        return TestOutcome(index, False, "returned a value that could not be read back")
    if values_equal(value, expected):
        return TestOutcome(index, True, "ok")
    return TestOutcome(
        index, False, f"returned {json.dumps(value)[:120]}, expected {json.dumps(expected)[:120]}"
    )


def run_function_tests(
    code: str,
    entry_point: str,
    tests: Sequence[tuple[Sequence[Any], Any]],
    *,
    limits: SandboxLimits | None = None,
    use_bwrap: bool | None = None,
) -> FunctionTestReport:
    """Load ``code`` in the sandbox, call ``entry_point(*args)`` for each test, compare results.

    All tests run in one sandboxed process under ``limits`` (a test that loops forever costs the
    tests after it, which are reported as not run). Return values must be JSON-serialisable
    (tuples compare as lists).

    Args:
        code: Python source defining the function.
        entry_point: Name of the function to call.
        tests: ``(args, expected)`` pairs; ``args`` is the positional-argument list.
        limits: Sandbox limits for the whole run.
        use_bwrap: As in :func:`~gym_tinker.tools.sandbox.run_python`.

    Returns:
        A :class:`FunctionTestReport`; nothing the code does raises here.

    Example:
        >>> code = "def add(a, b):\\n    return a + b"
        >>> run_function_tests(code, "add", [([1, 2], 3), ([2, 2], 4)]).pass_rate
        1.0
    """
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be a Python identifier, got {entry_point!r}")
    cases = [(list(args), expected) for args, expected in tests]
    mark = f"@@gym-tinker-{secrets.token_hex(8)}@@"
    harness = _HARNESS.format(
        mark=mark, code=code, entry=entry_point, tests=json.dumps([args for args, _ in cases])
    )
    sandbox = run_python(harness, limits=limits, use_bwrap=use_bwrap)
    records, load_error = _parse_records(sandbox.stdout, mark)
    if load_error is not None:
        outcomes = tuple(
            TestOutcome(i, False, "not run (code could not be loaded)") for i in range(len(cases))
        )
    else:
        outcomes = tuple(_outcome(i, records.get(i), exp, sandbox) for i, (_, exp) in enumerate(cases))
    return FunctionTestReport(outcomes=outcomes, load_error=load_error, sandbox=sandbox)
