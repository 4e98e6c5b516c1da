"""The safe calculator: arithmetic it must get right, and everything it must refuse, quickly."""

from __future__ import annotations

import contextlib
import math
import pickle
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_tinker.tools.calculator import (
    CALCULATOR_SCHEMA,
    MAX_EXPRESSION_LENGTH,
    CalculatorError,
    calculator_tool,
    evaluate,
    format_number,
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("7 / 2", Fraction(7, 2)),
        ("8 / 2", 4),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7 % 3", 1),
        ("2 ** 10", 1024),
        ("2 ^ 10", 1024),
        ("2 ** -2", Fraction(1, 4)),
        ("-3", -3),
        ("+3", 3),
        ("--3", 3),
        ("0.1 + 0.2", Fraction(3, 10)),
        ("1e3", 1000),
        ("1_000 + 1", 1001),
        ("3 × 4 ÷ 2 − 1", 5),
        ("2 + 2 =", 4),
        ("sqrt(16)", 4),
        ("abs(-5)", 5),
        ("round(2.567, 2)", Fraction(257, 100)),
        ("round(2.5)", 2),
        ("min(3, 1, 2)", 1),
        ("max(3, 1, 2)", 3),
        ("floor(2.7)", 2),
        ("ceil(2.1)", 3),
        ("factorial(5)", 120),
        ("10 ** 1000 / 10 ** 999", 10),
    ],
)
def test_exact_results(expression, expected):
    result = evaluate(expression)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("sqrt(2)", math.sqrt(2)),
        ("pi", math.pi),
        ("e", math.e),
        ("log(8, 2)", 3.0),
        ("log10(1000)", 3.0),
        ("ln(e)", 1.0),
        ("exp(0)", 1.0),
        ("sin(0) + cos(0)", 1.0),
        ("2 ** 0.5", math.sqrt(2)),
        ("1.5 * pi", 1.5 * math.pi),
    ],
)
def test_float_results(expression, expected):
    assert evaluate(expression) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__", "unknown name"),
        ("().__class__.__bases__", "attribute access"),
        ("(1).real", "attribute access"),
        ("math.sqrt(4)", "not methods or attributes"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("eval('1')", "unknown function 'eval'"),
        ("x + 1", "unknown name 'x'"),
        ("'a' * 3", "only numbers"),
        ("True + 1", "only numbers"),
        ("1j", "only numbers"),
        ("[1, 2]", "unsupported syntax"),
        ("lambda: 1", "unsupported syntax"),
        ("1 if 1 else 0", "unsupported syntax"),
        ("1 < 2", "unsupported syntax"),
        ("x := 1", "not a valid expression"),
        ("import os", "not a valid expression"),
        ("1 +", "not a valid expression"),
        ("", "empty"),
        ("   ", "empty"),
        ("sqrt", "is a function"),
        ("sqrt(x=4)", "positional"),
        ("max()", "argument"),
        ("sqrt(1, 2)", "argument"),
        ("1 / 0", "division by zero"),
        ("1 // 0", "division by zero"),
        ("1 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("sqrt(-1)", "negative"),
        ("(-8) ** (1/3)", "fractional power"),
        ("log(0)", "positive"),
        ("log(8, 1)", "positive"),
        ("factorial(501)", "factorial"),
        ("factorial(2.5)", "factorial"),
        ("exp(1000)", "out of range"),
        ("exp(700) * exp(700)", "not a finite number"),
        ("٣ + 1", "unsupported character"),
        ("2²", "unsupported character"),
        ("1\x00", "unsupported character"),
    ],
)
def test_refusals_have_clear_messages(expression, fragment):
    with pytest.raises(CalculatorError) as info:
        evaluate(expression)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "expression",
    ["9**9**9", "2**10**10", "10**10**10**10", "(2**5000)**(2**5000)", "0.5 ** -100000", "2**100000"],
)
def test_huge_powers_are_refused_fast(expression):
    start = time.perf_counter()
    with pytest.raises(CalculatorError, match="too large"):
        evaluate(expression)
    assert time.perf_counter() - start < 0.5


def test_repeated_multiplication_is_bounded():
    assert evaluate("(10**1500) * (10**1500)") == 10**3000
    with pytest.raises(CalculatorError, match="too large"):
        evaluate("(10**2000) * (10**2000)")
    with pytest.raises(CalculatorError, match="too large"):
        evaluate("*".join(["(10**999)"] * 4))


def test_overlong_and_deeply_nested_expressions_are_refused():
    with pytest.raises(CalculatorError, match="too long"):
        evaluate("1+" * MAX_EXPRESSION_LENGTH + "1")
    with pytest.raises(CalculatorError):
        evaluate("-" * 1900 + "1")
    assert evaluate("(" * 50 + "1" + ")" * 50) == 1


def test_calculator_error_is_a_value_error_and_pickles():
    err = CalculatorError("division by zero")
    assert isinstance(err, ValueError)
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is CalculatorError and str(clone) == "division by zero"


def test_non_string_expression_is_refused():
    with pytest.raises(CalculatorError, match="string"):
        evaluate(42)  # type: ignore[arg-type]


def test_format_number():
    assert format_number(14) == "14"
    assert format_number(Fraction(7, 2)) == "3.5"
    assert format_number(Fraction(6, 1)) == "6"
    assert format_number(2.0) == "2"
    assert format_number(0.1) == "0.1"
    assert format_number(Fraction(10**400 + 1, 3)).endswith("/3")


def test_calculator_tool_results_and_errors():
    assert calculator_tool({"expression": "6 * 7"}) == "42"
    assert calculator_tool({"expression": "1/4"}) == "0.25"
    assert calculator_tool({"expression": 5}) == "5"
    assert calculator_tool({"expression": "1/0"}) == "Error: division by zero"
    assert calculator_tool({}).startswith("Error: the calculator needs an 'expression' argument")
    assert calculator_tool({"expression": None}).startswith("Error: 'expression' must be a string")
    assert calculator_tool("2+2").startswith("Error:")  # type: ignore[arg-type]
    assert calculator_tool({"expression": "__import__('os').system('true')"}).startswith("Error:")


def test_schema_is_openai_form():
    function = CALCULATOR_SCHEMA["function"]
    assert CALCULATOR_SCHEMA["type"] == "function" and function["name"] == "calculator"
    assert function["parameters"]["required"] == ["expression"]


_arith = st.recursive(
    st.integers(-1000, 1000).map(str) | st.sampled_from(["0.5", "2.25", "pi", "1e2"]),
    lambda inner: (
        st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "^"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        )
        | inner.map(lambda x: f"sqrt({x})")
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_arith)
def test_random_arithmetic_returns_a_number_or_a_calculator_error(expression):
    try:
        result = evaluate(expression)
    except CalculatorError:
        return
    assert isinstance(result, (int, float, Fraction)) and not isinstance(result, bool)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_only_raises_calculator_error(text):
    with contextlib.suppress(CalculatorError):
        evaluate(text)
    assert isinstance(calculator_tool({"expression": text}), str)
