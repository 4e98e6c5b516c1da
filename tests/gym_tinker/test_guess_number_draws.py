"""GuessNumber's secrets: a pure function of the seed, NumPy's own stream, drawn in blocks."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_tinker.envs.guess_number import _DRAW_BLOCK, DIFFICULTY_RANGES, GuessNumberEnv

_BIT_GENERATORS = [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64]


def _plain(state):
    """A bit generator's state with its arrays as lists, so that states compare with ``==``."""
    if isinstance(state, dict):
        return {key: _plain(value) for key, value in state.items()}
    return state.tolist() if isinstance(state, np.ndarray) else state


@settings(max_examples=60, deadline=None)
@given(
    bit_generator=st.sampled_from(_BIT_GENERATORS),
    seed=st.integers(0, 2**32),
    n=st.one_of(
        st.sampled_from([1, 2, 10, 100, 1000, 10000, 3 * 2**30, 2**32 - 1, 2**32, 2**40]),
        st.integers(1, 2**33),
    ),
    sizes=st.lists(st.integers(1, 80), min_size=1, max_size=5),
    half_used=st.booleans(),
)
def test_a_block_of_draws_is_that_many_single_draws(bit_generator, seed, n, sizes, half_used):
    """What ``_draw_below`` relies on: ``integers(n, size=k)`` gives k calls' values and state."""
    blocks, singles = np.random.Generator(bit_generator(seed)), np.random.Generator(bit_generator(seed))
    if half_used:  # leave half of a 64-bit draw buffered, as a uint32 draw does
        blocks.integers(7, dtype=np.uint32), singles.integers(7, dtype=np.uint32)
    # 3 * 2**30 rejects about a quarter of the draws, so NumPy's rejection loop runs too.
    drawn = [value for size in sizes for value in blocks.integers(n, size=size).tolist()]
    assert drawn == [int(singles.integers(n)) for _ in range(sum(sizes))]
    assert _plain(blocks.bit_generator.state) == _plain(singles.bit_generator.state)


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTY_RANGES))
def test_seeded_secrets_are_numpys_draws(difficulty):
    """Same seed, same secret as ``np_random.integers(low, high + 1)``."""
    env, (low, high) = GuessNumberEnv(difficulty=difficulty), DIFFICULTY_RANGES[difficulty]
    for seed in range(50):
        env.reset(seed=seed)
        expected = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed))).integers(low, high + 1)
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
    for _ in range(3 * _DRAW_BLOCK + 5):  # across several blocks
        assert env.reset()[1]["task_id"] and env.secret == numpy_s.integers(1, 101)
        assert by_rows.reset()[1]["task_id"] == f"GuessNumber-row{rows_rng.integers(len(rows))}"


def _secrets(env, episodes, seed=None):
    """The secrets of ``episodes`` resets, the first with ``seed``."""
    secrets = []
    for episode in range(episodes):
        env.reset(seed=seed if episode == 0 else None)
        secrets.append(env.secret)
    return secrets


def test_reseeding_mid_block_repeats_the_episodes():
    env = GuessNumberEnv(difficulty="hard")
    first = _secrets(env, _DRAW_BLOCK + 10, seed=7)  # ends part-way through a block
    assert _secrets(env, _DRAW_BLOCK + 10, seed=7) == first
    assert _secrets(GuessNumberEnv(difficulty="hard"), _DRAW_BLOCK + 10, seed=7) == first
    assert _secrets(env, 5, seed=8) != first[:5]


def test_a_generator_set_by_hand_replaces_the_block():
    env = GuessNumberEnv()
    _secrets(env, 10, seed=1)
    env.np_random = np.random.default_rng(11)
    expected = np.random.default_rng(11).integers(1, 101, size=_DRAW_BLOCK + 5).tolist()
    assert _secrets(env, _DRAW_BLOCK + 5) == expected


def test_env_mid_block_pickles_and_copies_with_its_stream():
    env = GuessNumberEnv()
    _secrets(env, 20, seed=1)
    copies = [pickle.loads(pickle.dumps(env)), copy.deepcopy(env)]
    expected = [env.reset()[1]["task_id"] for _ in range(_DRAW_BLOCK)]
    for other in copies:
        assert [other.reset()[1]["task_id"] for _ in range(_DRAW_BLOCK)] == expected
