"""Safe arithmetic by walking the expression's syntax tree: the ``calculator`` tool (never ``eval``)."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, cast

from gym_tinker.messages import function_schema

__all__ = [
    "CALCULATOR_SCHEMA",
    "MAX_EXPRESSION_LENGTH",
    "MAX_RESULT_BITS",
    "CalculatorError",
    "Number",
    "calculator_tool",
    "evaluate",
    "evaluate_tree",
    "format_number",
    "parse_expression",
]

Number = int | float | Fraction
"""What :func:`evaluate` returns: exact ``int``/``Fraction`` where possible, else ``float``."""

MAX_EXPRESSION_LENGTH = 2000
"""Longest expression accepted, in characters (bounds the work per call)."""
MAX_RESULT_BITS = 10_000
"""Largest exact number allowed (numerator and denominator, in bits; about 3000 digits)."""
_MAX_FACTORIAL = 500

CALCULATOR_SCHEMA: dict[str, Any] = function_schema(
    "calculator",
    "Evaluate an arithmetic expression. Supports + - * / // % ** (or ^), parentheses, "
    "sqrt, abs, round, min, max, log, log10, log2, exp, sin, cos, tan, floor, ceil, factorial, "
    "and the constants pi and e. Example: (12.5 * 4) / sqrt(16)",
    {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "The expression, e.g. '2 + 3 * 4'."}},
        "required": ["expression"],
    },
)
"""OpenAI tool schema of the ``calculator`` tool (see :func:`calculator_tool`)."""


class CalculatorError(ValueError):
    """The expression is not valid arithmetic, or its result is out of bounds."""


# Unicode operators models like to write, mapped to their ASCII forms.
_UNICODE_OPERATORS = str.maketrans({"×": "*", "·": "*", "÷": "/", "−": "-", "–": "-", "\u00a0": " "})

_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _check_size(value: Number) -> Number:
    """Refuse exact results too large to keep computing with; normalise integral fractions."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CalculatorError(f"the result is not a finite number ({value})")
        return value
    if isinstance(value, Fraction):
        if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_RESULT_BITS:
            raise CalculatorError(f"the result is too large (more than {MAX_RESULT_BITS} bits)")
        return value.numerator if value.denominator == 1 else value
    if value.bit_length() > MAX_RESULT_BITS:
        raise CalculatorError(f"the result is too large (more than {MAX_RESULT_BITS} bits)")
    return value


def _bits(value: int | Fraction) -> int:
    if isinstance(value, Fraction):
        return max(value.numerator.bit_length(), value.denominator.bit_length())
    return value.bit_length()


def _to_float(value: Number) -> float:
    try:
        result = float(value)
    except OverflowError:
        raise CalculatorError("a number is too large for this operation") from None
    if not math.isfinite(result):
        raise CalculatorError("a number is too large for this operation")
    return result


def _power(base: Number, exponent: Number) -> Number:
    exact_exponent = isinstance(exponent, int) or (
        isinstance(exponent, Fraction) and exponent.denominator == 1
    )
    if exact_exponent and not isinstance(base, float):
        n = int(exponent)
        if base == 0 and n < 0:
            raise CalculatorError("division by zero (zero to a negative power)")
        # |base| > 1 grows the numerator; |base| < 1 grows the denominator: either way, the
        # bits of the result are about |n| times the bits of the base.
        if abs(base) not in (0, 1) and abs(n) * max(_bits(base) - 1, 1) > MAX_RESULT_BITS:
            raise CalculatorError(f"the result is too large (more than {MAX_RESULT_BITS} bits)")
        return Fraction(base) ** n
    b, x = _to_float(base), _to_float(exponent)
    if b < 0 and not float(x).is_integer():
        raise CalculatorError("a negative number to a fractional power has no real result")
    if b == 0 and x < 0:
        raise CalculatorError("division by zero (zero to a negative power)")
    try:
        return math.pow(b, x)
    except OverflowError:
        raise CalculatorError("the result is too large") from None


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    if isinstance(op, (ast.Pow, ast.BitXor)):  # `^` is read as power, as on calculators
        return _power(left, right)
    if isinstance(op, ast.Add):
        return left + right
    if isinstance(op, ast.Sub):
        return left - right
    if isinstance(op, ast.Mult):
        if (
            not isinstance(left, float)
            and not isinstance(right, float)
            and _bits(left) + _bits(right) > MAX_RESULT_BITS
        ):
            raise CalculatorError(f"the result is too large (more than {MAX_RESULT_BITS} bits)")
        return left * right
    if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)):
        if right == 0:
            raise CalculatorError("division by zero")
        if isinstance(op, ast.Div):
            if isinstance(left, float) or isinstance(right, float):
                return left / right
            return Fraction(left) / Fraction(right)
        return left // right if isinstance(op, ast.FloorDiv) else left % right
    raise CalculatorError(f"unsupported operator {type(op).__name__}; use + - * / // % ** or ^")


def _sqrt(x: Number) -> Number:
    if x < 0:
        raise CalculatorError(f"sqrt of a negative number ({format_number(x)})")
    if isinstance(x, int):
        root = math.isqrt(x)
        if root * root == x:
            return root
    return math.sqrt(_to_float(x))


def _log(x: Number, base: Number | None = None) -> float:
    if x <= 0 or (base is not None and (base <= 0 or base == 1)):
        raise CalculatorError("log needs a positive number (and a positive base other than 1)")
    # math.log takes arbitrarily large ints exactly; log2/log10 are exact on powers of 2 and 10.
    arg: int | float = x if isinstance(x, int) else _to_float(x)
    if base is None:
        return math.log(arg)
    if base == 2:
        return math.log2(arg)
    if base == 10:
        return math.log10(arg)
    return math.log(arg) / math.log(_to_float(base))


def _round(x: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return round(x)
    if not isinstance(digits, int) or abs(digits) > 100:
        raise CalculatorError(f"round's second argument must be a whole number of digits, got {digits}")
    # `round` on a Fraction gives a Fraction, on a float a float; typeshed cannot tell which.
    return cast(Number, round(x, digits))


def _factorial(x: Number) -> int:
    if not isinstance(x, int) or x < 0 or x > _MAX_FACTORIAL:
        raise CalculatorError(
            f"factorial needs a whole number from 0 to {_MAX_FACTORIAL}, got {format_number(x)}"
        )
    return math.factorial(x)


def _float_fn(fn: Callable[[float], float]) -> Callable[[Number], float]:
    def apply(x: Number) -> float:
        try:
            return fn(_to_float(x))
        except (OverflowError, ValueError) as err:
            raise CalculatorError(f"{fn.__name__}({format_number(x)}) is out of range") from err

    return apply


# name -> (function, min args, max args)
_FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int]] = {
    "sqrt": (_sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "min": (min, 1, 50),
    "max": (max, 1, 50),
    "log": (_log, 1, 2),
    "ln": (_log, 1, 1),
    "log10": (lambda x: _log(x, 10), 1, 1),
    "log2": (lambda x: _log(x, 2), 1, 1),
    "exp": (_float_fn(math.exp), 1, 1),
    "sin": (_float_fn(math.sin), 1, 1),
    "cos": (_float_fn(math.cos), 1, 1),
    "tan": (_float_fn(math.tan), 1, 1),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "factorial": (_factorial, 1, 1),
}


def _walk(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _walk(node.body)
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CalculatorError(f"only numbers are allowed, got {value!r}")
        if isinstance(value, float):
            if not math.isfinite(value):
                raise CalculatorError("a number in the expression is too large")
            # repr gives back the decimal as written ("0.1"), so 0.1 + 0.2 is exactly 0.3.
            return _check_size(Fraction(repr(value)))
        return _check_size(value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = _walk(node.operand)
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp):
        left, right = _walk(node.left), _walk(node.right)
        return _check_size(_binary(node.op, left, right))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if node.id in _FUNCTIONS:
            raise CalculatorError(f"{node.id} is a function; call it like {node.id}(x)")
        raise CalculatorError(f"unknown name {node.id!r}; allowed constants: {', '.join(_CONSTANTS)}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise CalculatorError(
                "only the built-in functions can be called (e.g. sqrt(2)), not methods or attributes"
            )
        name = node.func.id
        if name not in _FUNCTIONS:
            raise CalculatorError(f"unknown function {name!r}; allowed: {', '.join(sorted(_FUNCTIONS))}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise CalculatorError(f"{name}() takes plain positional arguments only")
        fn, low, high = _FUNCTIONS[name]
        if not low <= len(node.args) <= high:
            expected = str(low) if low == high else f"{low} to {high}"
            raise CalculatorError(f"{name}() takes {expected} argument(s), got {len(node.args)}")
        return _check_size(fn(*[_walk(arg) for arg in node.args]))
    if isinstance(node, ast.Attribute):
        raise CalculatorError("attribute access (a.b) is not allowed in a calculator expression")
    raise CalculatorError(f"unsupported syntax ({type(node).__name__}); only arithmetic is allowed")


def parse_expression(expression: str) -> ast.Expression:
    """Check and parse an expression into its syntax tree, without evaluating it.

    Normalises ``×``, ``÷`` and ``−`` to ``* / -``, drops a trailing ``=``, and refuses empty,
    over-long or non-ASCII text. Useful to inspect an expression's structure before
    :func:`evaluate_tree` (Countdown checks which numbers an answer uses this way).

    Raises:
        CalculatorError: If the text is not a parsable expression.

    Example:
        >>> type(parse_expression("2 × 3 =").body).__name__
        'BinOp'
    """
    if not isinstance(expression, str):
        raise CalculatorError(f"the expression must be a string, got {type(expression).__name__}")
    text = expression.translate(_UNICODE_OPERATORS).strip()
    if text.endswith("="):
        text = text[:-1].strip()
    if not text:
        raise CalculatorError("the expression is empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise CalculatorError(
            f"the expression is too long ({len(text)} characters; at most {MAX_EXPRESSION_LENGTH})"
        )
    bad = sorted({c for c in text if not c.isascii() or (not c.isprintable() and c not in " \t\n")})
    if bad:
        raise CalculatorError(f"unsupported character(s) {''.join(bad)!r}; use ASCII digits and operators")
    try:
        return ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise CalculatorError(f"not a valid expression: {text[:80]!r}") from err


def evaluate_tree(tree: ast.AST) -> Number:
    """Evaluate a tree from :func:`parse_expression` (same rules and bounds as :func:`evaluate`).

    Example:
        >>> evaluate_tree(parse_expression("6 * 7"))
        42
    """
    try:
        return _walk(tree)
    except CalculatorError:
        raise
    except RecursionError:
        raise CalculatorError("the expression is nested too deeply") from None
    except (ArithmeticError, ValueError, TypeError) as err:
        raise CalculatorError(f"cannot evaluate the expression: {err}") from err


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic expression safely, without ``eval``.

    The expression is parsed with :mod:`ast` and only numbers, ``+ - * / // % **`` (``^`` is
    read as ``**``), unary signs, parentheses, a few functions (``sqrt abs round min max log ln
    log10 log2 exp sin cos tan floor ceil factorial``) and the constants ``pi e tau`` are
    allowed. Arithmetic on integers and decimals is exact (``0.1 + 0.2`` is ``3/10``); results
    too large (``9**9**9``) are refused before they are computed.

    Args:
        expression: The expression text. ``×``, ``÷`` and ``−`` are accepted for ``* / -``;
            a trailing ``=`` is ignored.

    Returns:
        An ``int`` for whole results, a ``Fraction`` for other exact results, else a ``float``.

    Raises:
        CalculatorError: For anything that is not bounded arithmetic, with the reason.

    Example:
        >>> evaluate("2 + 3 * 4"), evaluate("7 / 2"), evaluate("sqrt(16) + 0.1 + 0.2")
        (14, Fraction(7, 2), Fraction(43, 10))
        >>> try:
        ...     evaluate("9 ** 9 ** 9")
        ... except CalculatorError as err:
        ...     print(err)
        the result is too large (more than 10000 bits)
    """
    return evaluate_tree(parse_expression(expression))


def format_number(value: Number) -> str:
    """Text for a calculator result: whole numbers exactly, other numbers as decimals.

    Example:
        >>> format_number(14), format_number(Fraction(7, 2)), format_number(Fraction(1, 3))
        ('14', '3.5', '0.3333333333333333')
    """
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return str(value.numerator)
        try:
            return repr(float(value))
        except OverflowError:
            return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def calculator_tool(arguments: dict[str, Any]) -> str:
    """Run the ``calculator`` tool: the result as text, or ``"Error: ..."`` (never raises).

    Args:
        arguments: The tool call's arguments, ``{"expression": "..."}`` (see
            :data:`CALCULATOR_SCHEMA`).

    Example:
        >>> calculator_tool({"expression": "(12.5 * 4) / sqrt(16)"})
        '12.5'
        >>> calculator_tool({"expr": "1 + 1"})
        "Error: the calculator needs an 'expression' argument (a string such as '2 + 3 * 4'), got keys ['expr']"
    """
    if not isinstance(arguments, dict) or "expression" not in arguments:
        keys = sorted(map(str, arguments)) if isinstance(arguments, dict) else type(arguments).__name__
        return f"Error: the calculator needs an 'expression' argument (a string such as '2 + 3 * 4'), got keys {keys}"
    expression = arguments["expression"]
    if isinstance(expression, (int, float)) and not isinstance(expression, bool):
        expression = repr(expression)
    if not isinstance(expression, str):
        return f"Error: 'expression' must be a string, got {type(expression).__name__}"
    try:
        return format_number(evaluate(expression))
    except CalculatorError as err:
        return f"Error: {err}"
