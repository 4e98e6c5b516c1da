"""Fixtures for executors tests: real Dask clusters (LocalCluster with worker processes)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from executors import TinkerClient, connect


@pytest.fixture
def make_client(tmp_path: Any) -> Iterator[Callable[..., TinkerClient]]:
    """Start embedded gym-tinker clusters (journal under tmp_path); all are closed at teardown."""
    clients: list[TinkerClient] = []

    def make(**kwargs: Any) -> TinkerClient:
        kwargs.setdefault("state_dir", str(tmp_path / "state"))
        kwargs.setdefault("n_workers", 1)
        kwargs.setdefault("threads_per_worker", 1)
        client = connect(**kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., Any]:
    """``wait_until(predicate, timeout)``: poll until truthy, else fail the test."""
    return wait_until


@pytest.fixture(name="steps")
def steps_fixture() -> Callable[..., dict[str, Any]]:
    """``steps(n, step_seconds, **fields)``: a spec dict for the built-in stepping body."""
    return steps


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s: {predicate}")


def steps(n: int, step_seconds: float = 0.02, **extra: Any) -> dict[str, Any]:
    """A spec dict for the built-in stepping body."""
    params = {"steps": n, "step_seconds": step_seconds, **extra.pop("params", {})}
    return {"kind": "steps", "params": params, **extra}
