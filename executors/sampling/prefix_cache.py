"""Prefix KV-cache reuse for HFSampler: a bounded LRU of finished rows' keys and values, per adapter.

A multi-turn episode's next prompt is the previous prompt, the sampled ids and the env's reply,
so a row whose prompt extends a recently finished row's tokens only needs the new tokens run
through the model. Keys and values of a causal LM at a position depend only on the tokens up
to it, so any common prefix of a cached sequence and a new prompt can be reused as is.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Hit", "PrefixCache", "assemble_batch", "row_keys_values", "weights_version"]

LayerKV = list[tuple[Any, Any]]
"""One sequence's cache: per layer, keys and values shaped ``(heads, tokens, head_dim)``."""


@dataclass
class _Entry:
    tokens: np.ndarray
    kv: LayerKV
    nbytes: int


@dataclass(frozen=True)
class Hit:
    """A cache lookup's result: how many leading prompt tokens have cached keys and values."""

    length: int
    kv: LayerKV | None


class PrefixCache:
    """Least-recently-used store of token sequences and their per-layer keys and values.

    Entries are kept per adapter name (``None``: the base model), since keys and values computed
    through one adapter are wrong for another. The memory bound counts the stored tensors' bytes.

    Args:
        max_bytes: Most bytes of keys and values kept; the least recently used entries go first.
        max_entries: Most sequences kept.

    Example:
        >>> import torch
        >>> cache = PrefixCache(max_bytes=1 << 20, max_entries=4)
        >>> kv = [(torch.zeros(2, 3, 4), torch.zeros(2, 3, 4))]
        >>> cache.store(None, [1, 2, 3], kv)
        >>> hit = cache.lookup(None, [1, 2, 9, 9])
        >>> hit.length, hit.kv[0][0].shape[1]
        (2, 2)
        >>> cache.lookup("other-adapter", [1, 2, 9, 9]).length
        0
    """

    def __init__(self, max_bytes: int, max_entries: int) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"Expected `max_bytes` to be an int >= 1, got {max_bytes!r}")
        if not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"Expected `max_entries` to be an int >= 1, got {max_entries!r}")
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str | None, tuple[int, ...]], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._stamp: Hashable = None
        self.nbytes = 0
        """Bytes of keys and values held now."""
        self.hits = 0
        """Lookups that found a reusable prefix."""
        self.reused_tokens = 0
        """Prompt tokens whose keys and values came from the cache instead of the model."""

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (the model's weights or adapters changed)."""
        with self._lock:
            self._entries.clear()
            self.nbytes = 0

    def refresh(self, stamp: Hashable) -> None:
        """Clear the cache if ``stamp`` (what the entries were computed with) differs from the last one."""
        with self._lock:
            if stamp != self._stamp:
                self._entries.clear()
                self.nbytes = 0
                self._stamp = stamp

    def lookup(self, adapter: str | None, prompt: Sequence[int]) -> Hit:
        """The longest cached prefix of ``prompt`` for ``adapter``, leaving at least one token to run.

        The last prompt token always runs through the model: its logits give the first sample.
        """
        want = np.asarray(prompt, dtype=np.int64)
        limit = len(want) - 1
        best: tuple[int, tuple[str | None, tuple[int, ...]] | None] = (0, None)
        with self._lock:
            for key, entry in self._entries.items():
                if key[0] != adapter:
                    continue
                n = min(limit, len(entry.tokens))
                if n <= best[0]:
                    continue
                differ = np.flatnonzero(entry.tokens[:n] != want[:n])
                common = int(differ[0]) if len(differ) else n
                if common > best[0]:
                    best = (common, key)
            length, found = best
            if found is None:
                return Hit(0, None)
            self._entries.move_to_end(found)
            kv = [(k[:, :length], v[:, :length]) for k, v in self._entries[found].kv]
            self.hits += 1
            self.reused_tokens += length
        return Hit(length, kv)

    def store(self, adapter: str | None, tokens: Sequence[int], kv: LayerKV) -> None:
        """Keep ``kv`` (the keys and values of ``tokens``) as the most recently used entry.

        Entries for the same adapter whose tokens are a prefix of ``tokens`` are dropped: the new
        entry serves every lookup they would.
        """
        key = (adapter, tuple(int(t) for t in tokens))
        if not key[1]:
            return
        for k, v in kv:
            if k.shape[1] != len(key[1]) or v.shape[1] != len(key[1]):
                raise ValueError(f"Expected keys and values for {len(key[1])} tokens, got {tuple(k.shape)}")
        nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
        if nbytes > self.max_bytes:
            return
        array = np.asarray(key[1], dtype=np.int64)
        with self._lock:
            for old_key in list(self._entries):
                old = self._entries[old_key]
                shorter = old_key[0] == adapter and len(old.tokens) <= len(array)
                if shorter and np.array_equal(old.tokens, array[: len(old.tokens)]):
                    self.nbytes -= self._entries.pop(old_key).nbytes
            self._entries[key] = _Entry(array, kv, nbytes)
            self.nbytes += nbytes
            while self.nbytes > self.max_bytes or len(self._entries) > self.max_entries:
                _, evicted = self._entries.popitem(last=False)
                self.nbytes -= evicted.nbytes


def assemble_batch(
    prompts: Sequence[Sequence[int]], hits: Sequence[Hit], pad_id: int, device: Any
) -> tuple[Any, Any, Any, Any]:
    """Left-pad the uncached part of each prompt, after its cached keys and values (also left-padded).

    Returns the first forward pass's input ids, attention mask (over cache and inputs),
    position ids and cache.

    A row's sequence axis then reads ``[pad, cached prefix, pad, uncached suffix]``; the mask
    hides both pads and positions count only unmasked tokens, so a row sees exactly its own
    tokens at their own positions, as if it had run alone and unpadded.

    Example:
        >>> import torch
        >>> kv = [(torch.ones(1, 2, 4), torch.ones(1, 2, 4))]
        >>> ids, mask, positions, cache = assemble_batch([[5, 6, 7], [8, 9]], [Hit(2, kv), Hit(0, None)], 0, "cpu")
        >>> ids.tolist(), mask.tolist(), positions.tolist(), cache.get_seq_length()
        ([[0, 7], [8, 9]], [[1, 1, 0, 1], [0, 0, 1, 1]], [[1, 2], [0, 1]], 2)
    """
    import torch
    from transformers import DynamicCache

    cached = max(h.length for h in hits)
    suffixes = [p[h.length :] for p, h in zip(prompts, hits, strict=True)]
    width = max(len(s) for s in suffixes)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), cached + width), dtype=torch.long)
    for i, (suffix, hit) in enumerate(zip(suffixes, hits, strict=True)):
        input_ids[i, width - len(suffix) :] = torch.tensor(suffix, dtype=torch.long)
        mask[i, cached - hit.length : cached] = 1
        mask[i, cached + width - len(suffix) :] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, cached:]
    cache = DynamicCache()
    if cached:
        template = next(h.kv for h in hits if h.kv is not None)
        for layer, (k0, v0) in enumerate(template):
            # Zeros, not garbage, under the masked slots: a masked slot gets zero weight, and
            # zero weight times a non-finite value would still poison the sum.
            keys = k0.new_zeros((len(prompts), k0.shape[0], cached, k0.shape[2]))
            values = v0.new_zeros((len(prompts), v0.shape[0], cached, v0.shape[2]))
            for i, hit in enumerate(hits):
                if hit.kv is not None:
                    keys[i, :, cached - hit.length :] = hit.kv[layer][0]
                    values[i, :, cached - hit.length :] = hit.kv[layer][1]
            cache.update(keys, values, layer)
    return input_ids, mask, positions, cache


def row_keys_values(cache: Any, mask: Any, row: int) -> LayerKV | None:
    """Copy row ``row``'s unmasked keys and values out of a batch cache (``None``: unsupported cache).

    Only plain full-attention layers are copied: a sliding-window or recurrent layer does not
    hold every past token, so its state cannot be cut to a prefix.
    """
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        return None
    keep = mask[row].bool()
    if any(layer.keys.shape[2] != keep.shape[0] for layer in layers):
        return None
    return [(layer.keys[row][:, keep], layer.values[row][:, keep]) for layer in layers]


def weights_version(model: Any) -> int:
    """A number that changes whenever any of ``model``'s parameters is written in place or added.

    Every in-place write (an optimizer step, ``load_state_dict``) bumps a tensor's version
    counter. Inference tensors keep no counter; they count as 0.

    Example:
        >>> import torch
        >>> layer = torch.nn.Linear(2, 2)
        >>> before = weights_version(layer)
        >>> with torch.no_grad():
        ...     _ = layer.weight.mul_(2)
        >>> weights_version(layer) != before
        True
    """
    total = 0
    for i, p in enumerate(model.parameters()):
        total += i + 1 + (0 if p.is_inference() else p._version)
    return total
