"""Tests of the lenient move-parsing helpers."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multiagent.parsing import (
    MAX_INT_DIGITS,
    ascii_ints,
    candidates,
    clip_message,
    focus,
    keyword_pattern,
    last_keyword,
    last_match,
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


# --- the linear-time parsers find what the plain regexes find --------------------------------

PIECES = [
    "<move>", "</move>", "< MOVE >", "</ move>", "<message>", "</Message >", "<", ">", "/", " ",
    "\n", "move", "5", "12", "a1", "b 2", "[", "]", "[3]", "\\boxed{", "{", "}", "x", "ſ", "é",
    "bet", "ALL", "in", "all in", "call",
]  # fmt: skip
pieces = st.lists(st.sampled_from(PIECES), max_size=30).map("".join) | st.text(max_size=40)


def lazy_tag(tag: str) -> re.Pattern[str]:
    """What tag_pattern used to be: correct, but quadratic on a flood of opening tags."""
    return re.compile(rf"<\s*{tag}\s*>(.*?)<\s*/\s*{tag}\s*>", re.IGNORECASE | re.DOTALL)


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(pieces)
def test_tag_pattern_finds_what_the_lazy_regex_finds(text: str) -> None:
    for tag in ("move", "message"):
        reference = lazy_tag(tag)
        assert tag_pattern(tag).findall(text) == reference.findall(text)
        assert tag_pattern(tag).sub(" ", text) == reference.sub(" ", text)
        assert [(m.start, m.end) for m in tag_pattern(tag).finditer(text)] == [
            m.span() for m in reference.finditer(text)
        ]
        assert tag_pattern(tag).last(text) == (reference.findall(text) or [None])[-1]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(pieces, st.integers(0, 5_000))
def test_last_match_is_the_last_of_finditer(text: str, padding: int) -> None:
    # Long texts, so that the last match is sometimes outside the tail read first.
    long = text + "." * padding + text[::-1]
    for pattern in (re.compile(r"[0-9]{1,2}"), re.compile(r"\[([^\[\]]{1,40})\]"), re.compile("bet")):
        expected = [m.span() for m in pattern.finditer(long)]
        found = last_match(pattern, long)
        assert (found.span() if found else None) == (expected[-1] if expected else None)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(pieces)
def test_keyword_pattern_finds_what_the_plain_pattern_finds(text: str) -> None:
    words = ["bet", "all in", "in", "call", "ſtop"]
    alternatives = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))
    plain = re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)
    assert keyword_pattern(words).findall(text) == plain.findall(text)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.lists(st.sampled_from(["a", " ", "\n\t", "bc", "\u2003", "é"]), max_size=600).map("".join),
    st.integers(0, 40),
)
def test_clip_message_collapses_strips_and_cuts(text: str, limit: int) -> None:
    message = re.sub(r"\s+", " ", text).strip()
    expected = message if len(message) <= limit else message[: max(limit - 1, 0)] + "…"
    assert clip_message(text, limit) == expected


def test_floods_of_tags_parse_as_before() -> None:
    flood = "<move>" * 50_000 + "5"
    assert candidates(flood) == [flood]
    assert parse_int("<move>7</move>" + "<move>" * 50_000) == 7
    assert tag_pattern("move").sub("", "<move>" * 50_000 + "</move>") == ""
