"""GuessNumber's parser fast path gives exactly what the general parser gives.

The seeded draw of the secret is tested in test_guess_number_draws.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_tinker.envs.guess_number import _parse_guess_general, parse_guess

# Text the parser can trip on: digits, separators, signs, the tags, braces, non-ASCII digits.
_PIECES = st.sampled_from(
    [
        *(
            "0",
            "7",
            "42",
            "9" * 18,
            "9" * 19,
            "0" * 19 + "1",
            ",",
            ".",
            "-",
            " ",
            "\n",
            "x",
            "²",
            "٣",
            "{",
            "}",
        ),
        *(
            "\\boxed{",
            "<answer>",
            "</answer>",
            "<ANSWER>",
            "</Answer>",
            "answer",
            "boxed",
            "1,250",
            "50.0",
            "2.5",
        ),
    ]
)
_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=25)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_parse_guess_fast_path_agrees_on_mixed_text(text):
    assert parse_guess(text) == _parse_guess_general(text)


@settings(max_examples=300, deadline=None)
@given(
    _DIGITS,
    st.sampled_from(["{}", "\\boxed{{{}}}", "<answer>{}</answer>", "say \\boxed{{{}}}", "<answer>{}"]),
)
def test_parse_guess_fast_path_agrees_on_plain_replies(digits, template):
    text = template.format(digits)
    assert parse_guess(text) == _parse_guess_general(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_parse_guess_fast_path_agrees_on_any_text(text):
    assert parse_guess(text) == _parse_guess_general(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed{7}", 7),
        ("<answer>042</answer>", 42),
        ("9" * 18, 10**18 - 1),
        ("9" * 19, 10**18),
        ("0" * 20, 0),
    ],
)
def test_plain_replies(text, expected):
    assert parse_guess(text) == expected
