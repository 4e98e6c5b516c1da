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
    ``_add_info`` meets them. Each array is made once and filled in place: below 6 envs, by a
    plan of keys, envs and masks cached per key signature; from 6 envs up, as one transpose of
    the values when every env reports the same keys (the usual step), else in one pass over
    every env's items.

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
    if num_envs < _TRANSPOSE_FROM:
        return _batch_planned(infos, num_envs)
    order = tuple(first)
    if order and sum(map(len, infos)) == num_envs * len(order):  # as many keys everywhere as env 0
        try:  # and all of env 0's keys: the same keys everywhere, and the columns are a transpose
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
    return _batch_items(infos, num_envs)


_TRANSPOSE_FROM = 6
"""From this many envs, uniform keys are batched as a transpose; below, by a cached plan."""

_PLANS: dict[tuple[tuple[str, ...], ...], list[tuple[str, str, tuple[int, ...], np.ndarray]]] = {}
"""For each signature (every env's keys, in order) seen with fewer than ``_TRANSPOSE_FROM`` envs:
each key, its mask's key, the envs that have it, and its mask. Few envs meet few signatures."""


def _batch_planned(infos: Sequence[Mapping[str, Any]], num_envs: int) -> dict[str, Any]:
    """``_batch_items`` with the keys' order, envs and masks looked up by the envs' key signature
    rather than worked out item by item (each step's values still set each array's dtype)."""
    signature = tuple(map(tuple, infos))
    plan = _PLANS.get(signature)
    if plan is None:
        if len(_PLANS) >= 4096:  # a bound, never reached by a few envs' few signatures
            _PLANS.clear()
        plan = _PLANS[signature] = _plan(infos, num_envs)
    batched: dict[str, Any] = {}
    for key, mask_key, envs, mask in plan:
        value = infos[envs[0]][key]
        if isinstance(value, dict) and key != "final_obs":
            column: list[Any] = [None] * num_envs
            for i in envs:
                column[i] = infos[i][key]
            array: Any = _batch_nested(key, column, num_envs)
        else:
            array = _empty_array(key, value, num_envs)
            for i in envs:
                array[i] = infos[i][key]
        batched[key] = array
        batched[mask_key] = mask.copy()
    return batched


def _plan(
    infos: Sequence[Mapping[str, Any]], num_envs: int
) -> list[tuple[str, str, tuple[int, ...], np.ndarray]]:
    envs_of: dict[str, list[int]] = {}
    for i, info in enumerate(infos):
        for key in info:
            envs_of.setdefault(key, []).append(i)
    plan = []
    for key, envs in envs_of.items():
        mask = np.zeros(num_envs, dtype=np.bool_)
        mask[envs] = True
        plan.append((key, f"_{key}", tuple(envs), mask))
    return plan


def _empty_array(key: str, value: Any, num_envs: int) -> np.ndarray:
    """The array ``_add_info`` makes for ``key`` when ``value`` is the first env's value."""
    kind = type(value)
    if key == "final_obs":
        return np.empty(num_envs, dtype=object)  # (None everywhere)
    if kind in _NUMBERS or isinstance(value, np.number):
        return np.zeros(num_envs, dtype=kind)
    if isinstance(value, np.ndarray):
        return np.zeros((num_envs, *value.shape), dtype=value.dtype)
    return np.empty(num_envs, dtype=object)


def _batch_items(infos: Sequence[Mapping[str, Any]], num_envs: int) -> dict[str, Any]:
    """``_add_info``'s way, item by item, in one pass over every env: each key's array and mask
    are made when an env first reports it (dtype from that value), then filled in place."""
    batched: dict[str, Any] = {}
    masks: dict[str, np.ndarray] = {}
    nested: dict[str, list[Any]] = {}  # keys whose values are dicts: batched recursively at the end
    for i, info in enumerate(infos):
        for key, value in info.items():
            array = batched.get(key)
            if array is None:
                if isinstance(value, dict) and key != "final_obs":
                    array = nested[key] = [None] * num_envs
                else:
                    array = _empty_array(key, value, num_envs)
                batched[key] = array
                batched[f"_{key}"] = masks[key] = np.zeros(num_envs, dtype=np.bool_)
            array[i] = value
            masks[key][i] = True
    for key, column in nested.items():
        batched[key] = _batch_nested(key, column, num_envs)
    return batched


_NUMBERS = (int, float, bool)


def _batch_nested(key: str, column: Sequence[Any], num_envs: int) -> dict[str, Any]:
    """A key whose values are dicts, batched recursively (``None``: an env without the key)."""
    if not all(isinstance(value, dict) for value in column if value is not None):
        raise TypeError(f"info key {key!r} is a dict for some envs and not for others")
    return batch_infos(column, num_envs)


def _column_array(key: str, column: Sequence[Any], num_envs: int, first: Any) -> Any:
    """One key's batched values, ``column`` holding every env's (``first``: env 0's)."""
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
        return _batch_nested(key, column, num_envs)
    if isinstance(first, (np.number, np.ndarray)):
        array = np.zeros((num_envs, *np.shape(first)), dtype=first.dtype)
        for i, value in enumerate(column):
            array[i] = value
        return array
    return np.fromiter(column, dtype=object, count=num_envs)  # lists and other objects stay items


@functools.cache
def _all_true(num_envs: int) -> np.ndarray:
    """A template mask, copied for each key every env reports (a copy is 6x faster than ``np.ones``)."""
    return np.ones(num_envs, dtype=np.bool_)
