"""Answer equivalence: numeric forms, tolerance, text answers, and the combined score."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_tinker.answers import answers_match, normalize_text, parse_number, score_answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("6", 6.0),
        ("6.0", 6.0),
        ("\\boxed{6}", 6.0),
        ("3/0.5", 6.0),
        ("12/2", 6.0),
        ("1,000", 1000.0),
        ("1,234,567.5", 1234567.5),
        ("-2.5", -2.5),
        ("$5", 5.0),
        ("\\$5.50", 5.5),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("6.", 6.0),
        ("50%", 50.0),
        ("\\frac{3}{4}", 0.75),
        ("\\dfrac{1}{8}", 0.125),
        ("\\frac{\\frac{1}{2}}{2}", 0.25),
        ("3 \\times 4", 12.0),
        ("2^{10}", 1024.0),
        ("x = 6", 6.0),
        ("5 apples", 5.0),
        ("12.5 km", 12.5),
        ("\\text{6}", 6.0),
        ("  6  ", 6.0),
        (6, 6.0),
        (2.5, 2.5),
        (Fraction(1, 4), 0.25),
    ],
)
def test_parse_number_equivalent_forms(text, expected):
    assert parse_number(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "six",
        "Paris",
        "²",
        "٣",
        "1,2",
        "1/0",
        "10**400",
        "inf",
        "nan",
        "2 apples and 3 pears",
        None,
        True,
        [6],
        "9" * 300,
    ],
)
def test_parse_number_rejects(text):
    assert parse_number(text) is None


@pytest.mark.parametrize(
    "form", ["6", "6.0", "\\boxed{6}", "3/0.5", "6.0000000001", " 6 ", "$6", "x=6", "6 apples"]
)
def test_equivalent_forms_match_six(form):
    assert answers_match(form, 6)
    assert answers_match(form, "6")
    assert answers_match(form, "6.0")


@pytest.mark.parametrize("form", ["7", "-6", "60", "6.1", "sixish", "", "   ", None])
def test_other_answers_do_not_match_six(form):
    assert not answers_match(form, 6)


def test_tolerances():
    assert answers_match("0.3333", "1/3", rel_tol=1e-3)
    assert not answers_match("0.3333", "1/3")
    assert answers_match("1000001", 1_000_000, rel_tol=1e-6)
    assert not answers_match("1000010", 1_000_000, rel_tol=1e-6)
    assert answers_match("0.0000001", 0)  # abs_tol near zero


def test_text_answers_compare_normalised():
    assert answers_match("paris", "Paris")
    assert answers_match("\\boxed{\\text{New York}}.", "new york")
    assert answers_match('"blue"', "Blue")
    assert not answers_match("Lyon", "Paris")
    assert not answers_match("Paris", "")


def test_numeric_expected_needs_a_number():
    assert not answers_match("Paris", 6)
    assert not answers_match("e", 6)


def test_normalize_text():
    assert normalize_text("  Hello   World. ") == "hello world"
    assert normalize_text("'x'") == "x"


@pytest.mark.parametrize(
    ("response", "expected", "score"),
    [
        ("<answer>68</answer>", 68, 1.0),
        ("23 + 45 = 68", 68, 1.0),
        ("So the result is \\boxed{68}.", "68", 1.0),
        ("<answer>68.0</answer>", "68", 1.0),
        ("<answer>69</answer>", 68, 0.0),
        ("<answer></answer>", 68, 0.0),
        ("<answer> </answer> 68", 68, 0.0),  # an explicit empty answer is not rescued by a number
        ("", 68, 0.0),
        ("I don't know.", 68, 0.0),
        ("<answer>68</answer> ... actually <answer>70</answer>", 68, 0.0),  # the last answer counts
    ],
)
def test_score_answer(response, expected, score):
    assert score_answer(response, expected) == score


def test_score_answer_without_fallback():
    assert score_answer("23 + 45 = 68", 68, fallback_last_number=False) == 0.0
    assert score_answer("<answer>68</answer>", 68, fallback_last_number=False) == 1.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parse_number_never_raises(text):
    result = parse_number(text)
    assert result is None or isinstance(result, float)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.one_of(st.integers(), st.text(max_size=20), st.floats(allow_nan=True)))
def test_score_answer_never_raises(text, expected):
    assert score_answer(text, expected) in (0.0, 1.0)


@settings(max_examples=200, deadline=None)
@given(st.decimals(min_value=-(10**9), max_value=10**9, places=3, allow_nan=False, allow_infinity=False))
def test_decimal_round_trip(value):
    assert answers_match(str(value), float(value))
    assert score_answer(f"<answer>{value}</answer>", str(value)) == 1.0
