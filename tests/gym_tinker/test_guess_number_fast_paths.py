"""GuessNumber's fast paths give exactly what the general code gives: the parser and the seeded draw."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_tinker.envs.guess_number import (
    DIFFICULTY_RANGES,
    GuessNumberEnv,
    _bounded_draw,
    _parse_guess_general,
    parse_guess,
)

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


_BIT_GENERATORS = [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64]


@settings(max_examples=60, deadline=None)
@given(
    bit_generator=st.sampled_from(_BIT_GENERATORS),
    seed=st.integers(0, 2**32),
    bounds=st.lists(
        st.one_of(
            st.sampled_from([1, 2, 10, 100, 1000, 10000, 2**31 + 1, 3 * 2**30, 2**32 - 1, 2**32, 2**40]),
            st.integers(1, 2**33),
        ),
        min_size=1,
        max_size=30,
    ),
    half_used=st.booleans(),
)
def test_bounded_draw_is_generator_integers(bit_generator, seed, bounds, half_used):
    ours, numpy_s = np.random.Generator(bit_generator(seed)), np.random.Generator(bit_generator(seed))
    if half_used:  # leave half of a 64-bit draw buffered, as a uint32 draw does
        ours.integers(7, dtype=np.uint32), numpy_s.integers(7, dtype=np.uint32)
    # 3 * 2**30 rejects about a quarter of the draws, so the rejection loop runs too.
    assert [_bounded_draw(ours, n) for n in bounds] == [int(numpy_s.integers(n)) for n in bounds]
    assert _plain(ours.bit_generator.state) == _plain(numpy_s.bit_generator.state)


def _plain(state):
    """A bit generator's state with its arrays as lists, so that states compare with ``==``."""
    if isinstance(state, dict):
        return {key: _plain(value) for key, value in state.items()}
    return state.tolist() if isinstance(state, np.ndarray) else state


def test_bounded_draw_keeps_integers_errors():
    with pytest.raises(ValueError):
        _bounded_draw(np.random.default_rng(0), 0)


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTY_RANGES))
def test_seeded_secrets_are_numpys_draws(difficulty):
    """Same seed, same secret as ``np_random.integers(low, high + 1)`` (the draw before the fast path)."""
    env, low_high = GuessNumberEnv(difficulty=difficulty), DIFFICULTY_RANGES[difficulty]
    for seed in range(50):
        env.reset(seed=seed)
        expected = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed))).integers(
            low_high[0], low_high[1] + 1
        )
        assert env.secret == expected


def test_unseeded_resets_continue_numpys_stream():
    rows = [{"secret": k, "low": 1, "high": 10} for k in range(1, 11)]
    env, by_rows = GuessNumberEnv(), GuessNumberEnv(dataset=rows)
    env.reset(seed=3)
    by_rows.reset(seed=3)
    numpy_s = np.random.Generator(np.random.PCG64(np.random.SeedSequence(3)))
    numpy_s.integers(1, 101)
    rows_rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(3)))
    rows_rng.integers(len(rows))
    for _ in range(30):
        assert env.reset()[1]["task_id"] and env.secret == numpy_s.integers(1, 101)
        assert by_rows.reset()[1]["task_id"] == f"GuessNumber-row{rows_rng.integers(len(rows))}"


def test_env_on_the_fast_draw_pickles_and_copies_with_its_stream():
    env = GuessNumberEnv()
    env.reset(seed=1)
    for _ in range(20):  # past the draws after which the fast path takes over
        env.reset()
    copies = [pickle.loads(pickle.dumps(env)), copy.deepcopy(env)]
    expected = [env.reset()[1]["task_id"] for _ in range(5)]
    for other in copies:
        assert [other.reset()[1]["task_id"] for _ in range(5)] == expected
