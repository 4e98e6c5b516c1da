"""Unbounded text spaces for Gymnasium and PettingZoo, with vector-env support.

Gymnasium's own :class:`gymnasium.spaces.Text` has a fixed maximum length and, by default, a
charset without spaces, newlines or unicode, so it cannot hold a chat message. :class:`TextSpace`
holds any Python ``str``. Importing this module registers it with Gymnasium's vector utilities
(``batch_space``, ``concatenate``, ``create_empty_array`` and the shared-memory
functions), so ``gym.make_vec(..., vectorization_mode="sync" | "async")`` works unchanged
(``gym.make_vec(id)`` without a mode builds :mod:`gym_tinker.vector`'s own vector envs).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from copy import deepcopy
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium.spaces import Space, Tuple
from gymnasium.vector.utils import (
    batch_differing_spaces,
    batch_space,
    concatenate,
    create_empty_array,
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

__all__ = ["TextObservation", "TextSpace"]

# Characters `sample()` draws from: printable ASCII, whitespace, and a spread of non-ASCII
# letters, digits (e.g. superscripts, Arabic-Indic) and symbols, so fuzzing hits the cases
# parsers get wrong.
_SAMPLE_ALPHABET: tuple[str, ...] = tuple(
    [chr(c) for c in range(32, 127)]
    + ["\n", "\t", "\r", " "]
    + list("éßøЖж中文日本語한국어٣٤²³½€→∑🙂\u200b\u00a0")
)


class TextObservation(str):
    """A ``str`` that also carries ``dtype = numpy.dtype(object)``.

    PettingZoo's ``api_test`` compares ``observation_space.dtype`` with ``observation.dtype``;
    plain strings have no ``dtype``. Observations of this type are ordinary strings to every
    other reader.

    Example:
        >>> obs = TextObservation("X to move")
        >>> obs.upper(), obs.dtype
        ('X TO MOVE', dtype('O'))
    """

    __slots__ = ()
    dtype = np.dtype(object)


class TextSpace(Space[str]):
    """The space of all Python strings (any unicode, the empty string included).

    Args:
        max_length: Optional upper bound on ``len(x)``; ``None`` (the default) means unbounded.
        max_sample_length: Longest string :meth:`sample` draws.
        seed: Seed for :meth:`sample`.

    Example:
        >>> space = TextSpace(seed=0)
        >>> space.contains("any text, even ünïcode\\n"), space.contains(b"bytes")
        (True, False)
        >>> isinstance(space.sample(), str)
        True
        >>> TextSpace() == TextSpace(), TextSpace() == TextSpace(max_length=5)
        (True, False)
    """

    def __init__(
        self,
        max_length: int | None = None,
        *,
        max_sample_length: int = 64,
        seed: int | np.random.Generator | None = None,
    ):
        if max_length is not None and (not isinstance(max_length, int) or max_length < 0):
            raise ValueError(f"Expected `max_length` to be None or an int >= 0, got {max_length!r}")
        if not isinstance(max_sample_length, int) or max_sample_length < 0:
            raise ValueError(f"Expected `max_sample_length` to be an int >= 0, got {max_sample_length!r}")
        self.max_length = max_length
        self.max_sample_length = (
            max_sample_length if max_length is None else min(max_sample_length, max_length)
        )
        super().__init__(shape=None, dtype=object, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Text has no fixed-size numeric form."""
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> str:
        """A random string: empty sometimes, else random characters of random length."""
        if mask is not None or probability is not None:
            raise NotImplementedError("TextSpace.sample() takes no mask or probability")
        length = int(self.np_random.integers(0, self.max_sample_length + 1))
        picks = self.np_random.integers(0, len(_SAMPLE_ALPHABET), size=length)
        return "".join(_SAMPLE_ALPHABET[i] for i in picks)

    def contains(self, x: Any) -> bool:
        """True for any ``str`` within ``max_length``."""
        return isinstance(x, str) and (self.max_length is None or len(x) <= self.max_length)

    def __repr__(self) -> str:
        return "TextSpace()" if self.max_length is None else f"TextSpace(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash((TextSpace, self.max_length))

    def to_jsonable(self, sample_n: Iterable[str]) -> list[str]:
        """Strings are already JSON."""
        return [str(x) for x in sample_n]

    def from_jsonable(self, sample_n: list[Any]) -> list[str]:
        """Strings are already JSON."""
        return [str(x) for x in sample_n]


# --- Gymnasium vector-env support -------------------------------------------------------------


@batch_space.register(TextSpace)
def _batch_text_space(space: TextSpace, n: int = 1) -> Tuple:
    batched = Tuple(tuple(deepcopy(space) for _ in range(n)), seed=deepcopy(space.np_random))
    seeds = deepcopy(space.np_random).integers(0, int(1e8), n)
    batched.seed([int(s) for s in seeds])
    return batched


# batch_differing_spaces dispatches on the type of spaces[0], which mypy cannot express.
@batch_differing_spaces.register(TextSpace)
def _batch_differing_text_spaces(spaces: Sequence[TextSpace]) -> Tuple:  # type: ignore[misc]
    return Tuple([deepcopy(s) for s in spaces], seed=deepcopy(spaces[0].np_random))


@concatenate.register(TextSpace)
def _concatenate_text(space: TextSpace, items: Iterable[str], out: Any) -> tuple[str, ...]:
    return tuple(items)


@create_empty_array.register(TextSpace)
def _create_empty_text_array(space: TextSpace, n: int = 1, fn: Any = np.zeros) -> tuple[str, ...]:
    return ("",) * n


class SharedStrings:
    """The observation buffer of an ``AsyncVectorEnv`` over a :class:`TextSpace`.

    Strings have no fixed size, so each env gets a fixed slot of shared memory
    (``slot_bytes``, 64 KiB by default) for its UTF-8 encoded observation, and an observation
    larger than the slot goes to a file in a private temporary folder instead (its length is
    stored as negative to say so). Workers write their slot; the main process reads all slots.
    It behaves as a read-only sequence of strings; ``deepcopy`` (what ``AsyncVectorEnv`` returns
    with ``copy=True``) gives a plain tuple.

    Example:
        >>> buffer = SharedStrings(2, slot_bytes=8)
        >>> buffer.write(0, "hi"); buffer.write(1, "longer than eight bytes")
        >>> buffer.snapshot()
        ('hi', 'longer than eight bytes')
    """

    def __init__(self, n: int, ctx: ModuleType | Any = mp, *, slot_bytes: int = 64 * 1024):
        self.n = n
        self.slot_bytes = slot_bytes
        self._data = ctx.RawArray("B", n * slot_bytes)
        self._lengths = ctx.RawArray("q", n)
        self._view = self._byte_view()
        self._overflow_dir = tempfile.mkdtemp(prefix="gym-tinker-obs-")
        # Only the creating process removes the folder (workers get pickled copies without this).
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._overflow_dir, ignore_errors=True)

    def _byte_view(self) -> memoryview:
        # ctypes arrays export the format "<B", which memoryview slicing cannot assign to; "B" it can.
        return memoryview(self._data).cast("B")

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_cleanup"], state["_view"]  # a memoryview does not pickle; workers make their own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._view = self._byte_view()

    def _overflow_path(self, index: int) -> str:
        return os.path.join(self._overflow_dir, f"slot-{index}")

    def write(self, index: int, value: str) -> None:
        data = value.encode("utf-8", "surrogatepass")
        if len(data) <= self.slot_bytes:
            start = index * self.slot_bytes
            self._view[start : start + len(data)] = data
            self._lengths[index] = len(data)
            return
        tmp = self._overflow_path(index) + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, self._overflow_path(index))
        self._lengths[index] = -len(data)

    def read(self, index: int) -> str:
        if not -self.n <= index < self.n:
            raise IndexError(f"SharedStrings index {index} out of range for {self.n} slots")
        index %= self.n
        length = self._lengths[index]
        if length >= 0:
            start = index * self.slot_bytes
            return str(self._view[start : start + length], "utf-8", "surrogatepass")  # no bytes copy
        with open(self._overflow_path(index), "rb") as f:
            return f.read().decode("utf-8", "surrogatepass")

    def snapshot(self) -> tuple[str, ...]:
        return tuple(self.read(i) for i in range(self.n))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: Any) -> Any:
        return self.read(index) if isinstance(index, int) else self.snapshot()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.snapshot())

    def __eq__(self, other: object) -> bool:
        return self.snapshot() == (tuple(other) if isinstance(other, (tuple, list, SharedStrings)) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SharedStrings({self.snapshot()!r})"

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return self.snapshot()


@create_shared_memory.register(TextSpace)
def _create_text_shared_memory(space: TextSpace, n: int = 1, ctx: ModuleType = mp) -> SharedStrings:
    return SharedStrings(n, ctx)


@read_from_shared_memory.register(TextSpace)
def _read_text_shared_memory(space: TextSpace, shared_memory: SharedStrings, n: int = 1) -> SharedStrings:
    return shared_memory


@write_to_shared_memory.register(TextSpace)
def _write_text_shared_memory(space: TextSpace, index: int, value: str, shared_memory: SharedStrings) -> None:
    shared_memory.write(index, value)
