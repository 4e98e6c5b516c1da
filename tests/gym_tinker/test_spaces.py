"""TextSpace and TextObservation: sampling, membership, equality, batching and shared memory."""

from __future__ import annotations

import copy
import gc
import multiprocessing as mp
import os
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces import Tuple
from gymnasium.vector.utils import (
    batch_space,
    concatenate,
    create_empty_array,
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from gym_tinker.core import TextEnv
from gym_tinker.spaces import SharedStrings, TextObservation, TextSpace


def test_sample_is_varied_and_seeded():
    samples = [TextSpace(seed=0).sample() for _ in range(3)]
    assert len(set(samples)) == 1, "same seed, same first sample"
    space = TextSpace(seed=1)
    many = [space.sample() for _ in range(1000)]
    assert all(isinstance(s, str) for s in many)
    assert len(set(many)) > 900
    assert "" in many
    assert any(not s.isascii() for s in many) and any("\n" in s for s in many)
    assert max(map(len, many)) == 64
    other = TextSpace(seed=2)
    assert [other.sample() for _ in range(20)] != many[:20]


def test_sample_respects_lengths():
    space = TextSpace(max_length=5, max_sample_length=100, seed=0)
    assert all(len(space.sample()) <= 5 for _ in range(200))
    assert TextSpace(max_sample_length=0, seed=0).sample() == ""
    with pytest.raises(NotImplementedError, match="no mask"):
        space.sample(mask=np.ones(3))


@pytest.mark.parametrize("value", ["", "hello", "ünïcode\n\t🙂", "x" * 1_000_000, TextObservation("obs")])
def test_contains_any_string(value):
    assert TextSpace().contains(value) and value in TextSpace()


@pytest.mark.parametrize("value", [b"bytes", None, 3, ["a"], np.array(["a"])])
def test_contains_rejects_non_strings(value):
    assert not TextSpace().contains(value)


def test_max_length_bounds_contains():
    space = TextSpace(max_length=3)
    assert space.contains("abc") and not space.contains("abcd")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"max_length": -1}, "max_length"), ({"max_sample_length": -2}, "max_sample_length")],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TextSpace(**kwargs)


def test_equality_hash_repr_and_json():
    assert TextSpace() == TextSpace(seed=5) and hash(TextSpace()) == hash(TextSpace(seed=5))
    assert TextSpace() != TextSpace(max_length=3) and TextSpace() != gym.spaces.Text(10)
    assert len({TextSpace(), TextSpace(), TextSpace(max_length=3)}) == 2
    assert repr(TextSpace()) == "TextSpace()" and repr(TextSpace(max_length=3)) == "TextSpace(max_length=3)"
    assert TextSpace().from_jsonable(TextSpace().to_jsonable(["a", "ß"])) == ["a", "ß"]
    assert not TextSpace().is_np_flattenable
    restored = pickle.loads(pickle.dumps(TextSpace(max_length=7, seed=3)))
    assert restored == TextSpace(max_length=7)


def test_text_observation_is_a_str_with_object_dtype():
    obs = TextObservation("board")
    assert isinstance(obs, str) and obs == "board" and obs.dtype == np.dtype(object)
    assert TextSpace().dtype == np.dtype(object)


def test_batch_space_concatenate_and_empty_array():
    batched = batch_space(TextSpace(seed=0), n=3)
    assert isinstance(batched, Tuple) and len(batched) == 3 and all(s == TextSpace() for s in batched)
    sample = batched.sample()
    assert len(sample) == 3 and all(isinstance(s, str) for s in sample)
    assert batched.contains(("a", "b", "c")) and not batched.contains(("a", 1, "c"))
    assert create_empty_array(TextSpace(), n=4) == ("", "", "", "")
    out = create_empty_array(TextSpace(), n=2)
    assert concatenate(TextSpace(), ["x", "y"], out) == ("x", "y")


def _writer(space, memory, index, value):
    write_to_shared_memory(space, index, value, memory)


def test_shared_memory_across_processes():
    space = TextSpace()
    memory = create_shared_memory(space, n=3)
    assert tuple(read_from_shared_memory(space, memory, n=3)) == ("", "", "")
    processes = [mp.Process(target=_writer, args=(space, memory, i, f"from worker {i} ✓")) for i in range(3)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=30)
        assert p.exitcode == 0
    view = read_from_shared_memory(space, memory, n=3)
    assert view == ("from worker 0 ✓", "from worker 1 ✓", "from worker 2 ✓")
    assert len(view) == 3 and view[1] == "from worker 1 ✓" and list(view)[2] == "from worker 2 ✓"
    snapshot = copy.deepcopy(view)
    assert isinstance(snapshot, tuple) and snapshot == view
    write_to_shared_memory(space, 0, "changed", memory)
    assert snapshot[0] == "from worker 0 ✓" and view[0] == "changed"


def test_async_vector_env_with_default_shared_memory():
    vector = gym.make_vec("tinker/Wordle-v0", num_envs=2, vectorization_mode="async")
    try:
        observations, _ = vector.reset(seed=0)
        assert isinstance(observations, tuple) and all("five-letter" in o for o in observations)
        observations, rewards, *_ = vector.step(("crane", "<answer>slate</answer>"))
        assert observations[0].startswith("CRANE: ") and observations[1].startswith("SLATE: ")
        assert rewards.shape == (2,)
    finally:
        vector.close()


def _write_from_child(buffer, index, value):
    buffer.write(index, value)


def test_shared_strings_cross_process_small_and_oversized():
    ctx = mp.get_context("spawn")
    buffer = SharedStrings(3, ctx, slot_bytes=16)
    values = ["short", "ünïcode ✓ but more than sixteen bytes", ""]
    for index, value in enumerate(values):
        child = ctx.Process(target=_write_from_child, args=(buffer, index, value))
        child.start()
        child.join(30)
        assert child.exitcode == 0
    assert buffer.snapshot() == tuple(values)
    assert copy.deepcopy(buffer) == tuple(values) and isinstance(copy.deepcopy(buffer), tuple)
    assert buffer[1] == values[1] and buffer[-1] == "" and len(buffer) == 3
    with pytest.raises(IndexError, match="out of range"):
        buffer.read(3)
    folder = buffer._overflow_dir
    del buffer
    gc.collect()
    assert not os.path.exists(folder), "the overflow folder is removed with the buffer"


class Big(TextEnv):
    """Observations far larger than a shared-memory slot (module level, so workers can unpickle it)."""

    def _reset(self, options):
        return "x" * 200_000, {}

    def _step(self, action):
        return action * 3, 0.0, False, False, {}


def test_async_vector_env_passes_observations_larger_than_a_slot():
    vector = gym.vector.AsyncVectorEnv([Big, Big])
    try:
        observations, _ = vector.reset(seed=0)
        assert [len(o) for o in observations] == [200_000, 200_000]
        observations, *_ = vector.step(("ab", "é" * 20_000))  # 120 kB out: over a 64 KiB slot
        assert observations == ("ababab", "é" * 60_000)
    finally:
        vector.close()
