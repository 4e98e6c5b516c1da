"""Answer checking: equivalent numeric forms (``6``, ``6.0``, ``\\boxed{6}``, ``3/0.5``) and scoring."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from gym_tinker.parsing import extract_answer
from gym_tinker.tools.calculator import CalculatorError, evaluate

__all__ = ["answers_match", "normalize_text", "parse_number", "score_answer"]

# Answers longer than this are not read as numbers (a number is short; bounds the work).
_MAX_NUMBER_TEXT = 200
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_TEXT = re.compile(r"\\(?:text|mathrm|textbf|mbox)\s*\{([^{}]*)\}")
_BOXED = re.compile(r"^\\(?:boxed|fbox)\s*\{(.*)\}$", re.DOTALL)
_THOUSANDS = re.compile(r"(?<![0-9.])[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])")
_ASSIGNMENT = re.compile(r"^[A-Za-z]\w{0,20}\s*=\s*(?!=)")
# A plain number followed by unit words: "5 apples", "12.5 km", "3 dollars".
_NUMBER_WITH_UNITS = re.compile(
    r"^(-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*[A-Za-z][A-Za-z .]*$"
)
_LATEX_REPLACEMENTS = (
    ("\\times", "*"),
    ("\\cdot", "*"),
    ("\\div", "/"),
    ("\\left", ""),
    ("\\right", ""),
    ("\\,", ""),
    ("\\!", ""),
    ("\\;", ""),
    ("\\%", ""),
    ("\\$", ""),
    ("\\(", ""),
    ("\\)", ""),
    ("\\[", ""),
    ("\\]", ""),
    ("$", ""),
    ("%", ""),
    ("~", ""),
)


def _clean_number_text(text: str) -> str:
    text = text.strip()
    box = _BOXED.match(text)
    if box:
        text = box.group(1).strip()
    for _ in range(10):  # nested \frac{\frac{..}{..}}{..}, innermost first
        new = _FRAC.sub(r"((\1)/(\2))", text)
        if new == text:
            break
        text = new
    text = _TEXT.sub(r" \1 ", text)
    for old, new in _LATEX_REPLACEMENTS:
        text = text.replace(old, new)
    text = text.replace("{", "(").replace("}", ")")
    text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    text = _ASSIGNMENT.sub("", text.strip())
    return text.strip().rstrip(".").strip()


def _finite_float(value: int | float | Fraction) -> float | None:
    try:
        result = float(value)
    except OverflowError:
        return None
    return result if math.isfinite(result) else None


def parse_number(text: Any) -> float | None:
    """Read an answer as a number, accepting the forms people and models write.

    Accepted: plain numbers (``6``, ``6.0``, ``-2.5``, ``1e3``, ``.5``), thousands separators
    (``1,000``), currency and percent signs (``$5``, ``50%`` is 50), ``\\boxed{...}``, LaTeX
    fractions and operators (``\\frac{1}{2}``, ``3 \\times 4``), an assignment (``x = 6``), a
    number followed by unit words (``5 apples``), and arithmetic (``3/0.5``), evaluated by the
    safe calculator (:func:`gym_tinker.tools.calculator.evaluate`), never ``eval``. Only ASCII
    digits count (``"²"`` and ``"٣"`` are not numbers).

    Args:
        text: The answer text (or already a number). Anything; this function never raises.

    Returns:
        The value as a finite ``float``, or ``None`` if ``text`` is not a number.

    Example:
        >>> [parse_number(t) for t in ["6", "6.0", r"\\boxed{6}", "3/0.5", "1,000", "$5", "1e3"]]
        [6.0, 6.0, 6.0, 6.0, 1000.0, 5.0, 1000.0]
        >>> parse_number("six"), parse_number("²"), parse_number(r"\\frac{3}{4}")
        (None, None, 0.75)
    """
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float, Fraction)):
        return _finite_float(text)
    if not isinstance(text, str) or not text.strip() or len(text) > _MAX_NUMBER_TEXT:
        return None
    cleaned = _clean_number_text(text)
    if not cleaned or not cleaned.isascii():
        return None
    try:
        return _finite_float(evaluate(cleaned))
    except CalculatorError:
        pass
    with_units = _NUMBER_WITH_UNITS.match(cleaned)
    if with_units:
        try:
            return _finite_float(evaluate(with_units.group(1)))
        except CalculatorError:
            return None
    return None


def normalize_text(text: str) -> str:
    """Normalise a non-numeric answer for comparison: case, spaces, quotes, boxes, final period.

    Example:
        >>> normalize_text(r"  \\boxed{\\text{Paris}}. "), normalize_text('"New   York"')
        ('paris', 'new york')
    """
    text = text.strip().rstrip(".").strip()
    box = _BOXED.match(text)
    if box:
        text = box.group(1)
    text = _TEXT.sub(r"\1", text).strip().rstrip(".").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`$":
        text = text[1:-1]
    return " ".join(text.split()).casefold()


def answers_match(
    predicted: str | None, expected: Any, *, rel_tol: float = 1e-6, abs_tol: float = 1e-6
) -> bool:
    """Whether a predicted answer equals the expected one.

    If ``expected`` is a number (or text that reads as one, see :func:`parse_number`), the
    prediction must read as a number within ``rel_tol``/``abs_tol`` of it. Otherwise the two
    are compared as normalised text (:func:`normalize_text`). ``None`` or a blank prediction
    never matches.

    Args:
        predicted: The agent's answer (e.g. from :func:`gym_tinker.parsing.extract_answer`).
        expected: The reference answer: a number or a string.
        rel_tol: Relative tolerance for numbers (as in :func:`math.isclose`).
        abs_tol: Absolute tolerance for numbers.

    Example:
        >>> [answers_match(p, 6) for p in ["6", "6.0", r"\\boxed{6}", "3/0.5", "7", "", None]]
        [True, True, True, True, False, False, False]
        >>> answers_match(" paris.", "Paris"), answers_match("0.3333333", "1/3", rel_tol=1e-4)
        (True, True)
    """
    if not isinstance(predicted, str) or not predicted.strip():
        return False
    expected_number = parse_number(expected)
    if expected_number is not None:
        predicted_number = parse_number(predicted)
        if predicted_number is None:
            return False
        return math.isclose(predicted_number, expected_number, rel_tol=rel_tol, abs_tol=abs_tol)
    expected_text = expected if isinstance(expected, str) else str(expected)
    normalized = normalize_text(expected_text)
    return bool(normalized) and normalize_text(predicted) == normalized


def score_answer(
    response_text: str,
    expected: Any,
    *,
    fallback_last_number: bool = True,
    rel_tol: float = 1e-6,
    abs_tol: float = 1e-6,
) -> float:
    """1.0 if the answer in ``response_text`` matches ``expected``, else 0.0.

    The answer is found leniently by :func:`gym_tinker.parsing.extract_answer` (answer tags,
    else ``\\boxed{}``, else the last number when ``fallback_last_number``) and compared by
    :func:`answers_match`. An empty or missing answer scores 0.0.

    Example:
        >>> score_answer("23 + 45 = <answer>68</answer>", 68), score_answer("It is 68.", "68")
        (1.0, 1.0)
        >>> score_answer("<answer></answer>", 68), score_answer("no idea", 68)
        (0.0, 0.0)
    """
    answer = extract_answer(response_text, fallback_last_number=fallback_last_number)
    return 1.0 if answers_match(answer, expected, rel_tol=rel_tol, abs_tol=abs_tol) else 0.0
