"""Tests of the lenient move-parsing helpers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multiagent.parsing import (
    MAX_INT_DIGITS,
    ascii_ints,
    candidates,
    focus,
    keyword_pattern,
    last_keyword,
    parse_int,
    snippet,
    tag_pattern,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5", 5),
        ("I play 5", 5),
        ("<move>5</move>", 5),
        ("< MOVE >  5 </move>", 5),
        ("[5]", 5),
        ("\\boxed{5}", 5),
        ("3 is taken, so I play 5", 5),
        ("<move>4</move> is better than 7", 4),
        ("<move>1</move> no wait <move>2</move>", 2),
        ("[3] then [6]", 6),
        ("[draft] I play 4", 4),
        ("<move>centre</move>, i.e. 5", 5),
        ("x²", None),
        ("٣", None),
        ("five", None),
        ("", None),
        ("1" * (MAX_INT_DIGITS + 1), None),
        ("007", 7),
        ("-3", 3),
    ],
)
def test_parse_int(text: str, expected: int | None) -> None:
    assert parse_int(text) == expected


def test_focus_prefers_tags_then_boxed_then_brackets() -> None:
    assert focus("[1] \\boxed{2} <move>3</move>") == "3"
    assert focus("[1] \\boxed{2}") == "2"
    assert focus("[1] and [2]") == "2"
    assert focus("plain") == "plain"
    assert focus("<answer>9</answer>", tag="answer") == "9"
    assert focus("<move>unclosed") == "<move>unclosed"


def test_candidates_go_from_most_explicit_to_the_whole_text() -> None:
    text = "[a] \\boxed{b} <move>c</move>"
    assert candidates(text) == ["c", "b", "a", text]
    assert candidates("") == [""]


def test_ascii_ints_skip_unicode_digits_and_huge_runs() -> None:
    assert ascii_ints("½ ² ٣ ໕ 12 x3") == [12, 3]
    assert ascii_ints("9" * 5000) == []  # int() of 5000 digits would raise


def test_tag_pattern_is_cached_and_validates_names() -> None:
    assert tag_pattern("move") is tag_pattern("move")
    with pytest.raises(ValueError, match="tag name such as 'move', got 'a b'"):
        tag_pattern("a b")


def test_keywords_are_whole_words_and_last_wins() -> None:
    pattern = keyword_pattern(["bet", "check", "all in"])
    assert last_keyword(pattern, "I will check") == "check"
    assert last_keyword(pattern, "alphabet betting") is None
    assert last_keyword(pattern, "check... no: ALL   IN") == "all in"
    assert last_keyword(pattern, "<move>bet</move>, then check") == "bet"
    with pytest.raises(ValueError, match="non-empty"):
        keyword_pattern([])
    with pytest.raises(ValueError, match="non-empty"):
        keyword_pattern(["bet", " "])


def test_snippet_quotes_and_truncates() -> None:
    assert snippet("hi") == "'hi'"
    assert snippet("x" * 100, limit=5) == "'xxxxx'…"


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=300))
def test_parsers_never_raise(text: str) -> None:
    result = parse_int(text)
    assert result is None or (isinstance(result, int) and 0 <= result < 10**MAX_INT_DIGITS)
    assert isinstance(focus(text), str)
    assert last_keyword(keyword_pattern(["fold", "call"]), text) in (None, "fold", "call")
    assert all(isinstance(n, int) for n in ascii_ints(text))
