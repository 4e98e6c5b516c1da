"""Batching the info dicts of a vector env's sub-envs into Gymnasium's dict of arrays with masks."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

__all__ = ["NO_INFO", "batch_infos"]

NO_INFO: dict[str, Any] = {}
"""The info of an env that reported none (shared, never written)."""


def batch_infos(per_env: Sequence[Mapping[str, Any] | None], num_envs: int) -> dict[str, Any]:
    """The vector info dict of ``per_env``, one info dict per env (``None``: an env that did not report).

    The result equals what ``VectorEnv._add_info`` builds env by env: for every key, an array of
    the values (dtype from the first env that has the key: ``bool``, ``int``, ``float`` and numpy
    numbers as such, numpy arrays stacked, anything else in an object array; nested dicts
    recursively) and a boolean mask ``_key`` of the envs that have it, keys in the order
    ``_add_info`` meets them. It is built column by column rather than env by env and key by key:
    when every env reports the same keys (the usual step), the columns are one transpose; else
    one pass over the items fills them, with their masks.

    Example:
        >>> infos = batch_infos([{"turn": 1, "feedback": "higher"}, {"turn": 2}], 2)
        >>> infos["turn"], infos["_turn"], infos["feedback"], infos["_feedback"]
        (array([1, 2]), array([ True,  True]), array(['higher', None], dtype=object), array([ True, False]))
    """
    infos: Sequence[Mapping[str, Any]] = per_env  # type: ignore[assignment]
    if None in infos:
        infos = [NO_INFO if info is None else info for info in infos]
    batched: dict[str, Any] = {}
    first = infos[0]
    all_true = _all_true(num_envs)
    if num_envs == 1:
        for key, value in first.items():
            batched[key] = _column_array(key, (value,), 1, value)
            batched[f"_{key}"] = all_true.copy()
        return batched
    order = tuple(first)
    if not order and not any(infos):
        return batched
    if sum(map(len, infos)) == num_envs * len(order):  # as many keys everywhere as env 0 has
        try:  # and all of env 0's keys: then the same keys everywhere, and the columns are a transpose
            if len(order) == 1:  # (an itemgetter of one key gives the value, not a tuple)
                columns: Any = [tuple(map(itemgetter(order[0]), infos))]
            else:  # each env's values in env 0's key order, whatever its own order
                columns = zip(*list(map(itemgetter(*order), infos)), strict=True)
        except KeyError:
            pass
        else:
            for key, column in zip(order, columns, strict=False):
                batched[key] = _column_array(key, column, num_envs, column[0])
                batched[f"_{key}"] = all_true.copy()
            return batched
    # Some envs lack some keys: one pass over every env's items fills each key's column and mask,
    # in the order `_add_info` meets the keys (env 0's, then each new one env by env).
    columns = {}
    masks: dict[str, list[bool]] = {}
    for i, info in enumerate(infos):
        for key, value in info.items():
            column = columns.get(key)
            if column is None:  # the first env with the key: its value sets the dtype, and the gaps
                gap = 0 if type(value) in _NUMBERS and key != "final_obs" else None
                column = columns[key] = [gap] * num_envs
                masks[key] = [False] * num_envs
            column[i] = value
            masks[key][i] = True
    for key, column in columns.items():
        mask = masks[key]
        if False in mask:
            batched[key] = _column_array(key, column, num_envs, column[mask.index(True)], mask)
            batched[f"_{key}"] = np.array(mask, dtype=np.bool_)
        else:
            batched[key] = _column_array(key, column, num_envs, column[0])
            batched[f"_{key}"] = all_true.copy()
    return batched


_NUMBERS = (int, float, bool)


def _column_array(
    key: str, column: Sequence[Any], num_envs: int, first: Any, mask: list[bool] | None = None
) -> Any:
    """One key's batched values: ``column`` has one value per env (gaps filled), ``first`` is the
    first reported one, ``mask`` the envs that reported (``None``: all)."""
    kind = type(first)
    if key == "final_obs":  # always an object array, each observation one item
        return np.fromiter(column, dtype=object, count=num_envs)
    if kind in _NUMBERS:
        return np.array(column, dtype=kind)
    if kind is str or first is None:
        array = np.array(column, dtype=object)
        if array.ndim == 1:  # np.array could read another env's list value as a row: then one by one
            return array
        return np.fromiter(column, dtype=object, count=num_envs)
    if isinstance(first, dict):
        reported = column if mask is None else [v for v, here in zip(column, mask, strict=True) if here]
        if not all(isinstance(value, dict) for value in reported):
            raise TypeError(f"info key {key!r} is a dict for some envs and not for others")
        return batch_infos(column, num_envs)
    if isinstance(first, (np.number, np.ndarray)):
        array = np.zeros((num_envs, *np.shape(first)), dtype=first.dtype)
        for i, value in enumerate(column):
            if mask is None or mask[i]:
                array[i] = value
        return array
    return np.fromiter(column, dtype=object, count=num_envs)  # lists and other objects stay items


@functools.cache
def _all_true(num_envs: int) -> np.ndarray:
    """A template mask, copied for each key every env reports (a copy is 6x faster than ``np.ones``)."""
    return np.ones(num_envs, dtype=np.bool_)
