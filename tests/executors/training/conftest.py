"""Fixtures for training tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from executors import context


@pytest.fixture(autouse=True)
def _no_leftover_stop_signals() -> Iterator[None]:
    """Bodies called directly share this process's signal table; a preempt one test delivers must not reach the next."""
    with context._signals_lock:
        context._signals.clear()
    yield
    with context._signals_lock:
        context._signals.clear()
