"""Request batching for the server: concurrent requests are collected for a few milliseconds and sampled as one batch."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from executors.sampling.common import RowRequest
from gym_tinker.policy import Completion

__all__ = ["BatchingEngine"]


@dataclass
class _Pending:
    rows: Sequence[RowRequest]
    adapter: str | None
    on_token: Callable[[int, int], None] | None
    future: Future[list[Completion]] = field(default_factory=Future)


class BatchingEngine:
    """Runs a sampler's ``generate_rows`` on a background thread, batching requests across clients.

    The thread takes the first waiting request, then keeps collecting for ``wait_ms`` (or until
    ``max_batch_rows`` rows are waiting), groups what it has by adapter and runs each group as
    one batch. Rows keep their own parameters and seeds, so batching never changes a request's
    sampling settings.

    Args:
        sampler: An object with ``generate_rows(rows, adapter=..., on_token=...)``, e.g.
            :class:`executors.sampling.HFSampler`.
        max_batch_rows: Most rows collected into one batch.
        wait_ms: How long to keep collecting after the first request arrives.

    Example:
        >>> from executors.sampling import HFSampler
        >>> from executors.sampling.common import rows_for
        >>> from gym_tinker.policy import SamplingParams
        >>> engine = BatchingEngine(HFSampler("tiny-random"))
        >>> [c] = engine.submit(rows_for([[1, 2]], SamplingParams(max_tokens=3))).result()
        >>> len(c.token_ids) <= 3, engine.batches
        (True, 1)
        >>> engine.close()
    """

    def __init__(self, sampler: Any, *, max_batch_rows: int = 64, wait_ms: float = 5.0) -> None:
        if not isinstance(max_batch_rows, int) or max_batch_rows < 1:
            raise ValueError(f"Expected `max_batch_rows` to be an int >= 1, got {max_batch_rows!r}")
        if not wait_ms >= 0:
            raise ValueError(f"Expected `wait_ms` >= 0, got {wait_ms!r}")
        self.sampler = sampler
        self.max_batch_rows = max_batch_rows
        self.wait_s = wait_ms / 1000.0
        self.batches = 0
        """Batches run so far (one ``generate_rows`` call each)."""
        self.requests = 0
        """Requests completed so far."""
        self._queue: queue.Queue[_Pending | None] = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="gym-tinker-batching", daemon=True)
        self._thread.start()

    def submit(
        self,
        rows: Sequence[RowRequest],
        adapter: str | None = None,
        on_token: Callable[[int, int], None] | None = None,
    ) -> Future[list[Completion]]:
        """Queue ``rows`` (one request) for sampling; the future resolves to one completion per row.

        ``on_token(row_index, token_id)`` is called from the engine's thread as tokens are sampled.
        """
        if self._closed:
            raise RuntimeError("The batching engine is closed")
        if not rows:
            raise ValueError("Expected at least one row to sample, got none")
        pending = _Pending(list(rows), adapter, on_token)
        self._queue.put(pending)
        return pending.future

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread after the requests already queued are done."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join(timeout)

    def _collect(self, first: _Pending) -> tuple[list[_Pending], bool]:
        batch, rows = [first], len(first.rows)
        deadline = time.monotonic() + self.wait_s
        while rows < self.max_batch_rows:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
            rows += len(item.rows)
        return batch, False

    def _loop(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                break
            batch, stop = self._collect(first)
            groups: dict[str | None, list[_Pending]] = {}
            for item in batch:
                groups.setdefault(item.adapter, []).append(item)
            for adapter, items in groups.items():
                self._run(adapter, items)

    def _run(self, adapter: str | None, items: list[_Pending]) -> None:
        rows: list[RowRequest] = []
        owners: list[tuple[_Pending, int]] = []
        for item in items:
            for local in range(len(item.rows)):
                owners.append((item, local))
            rows += item.rows

        def dispatch(row: int, token: int) -> None:
            item, local = owners[row]
            if item.on_token is not None:
                try:
                    item.on_token(local, token)
                except Exception:  # a streaming client that went away must not stop the batch
                    item.on_token = None

        self.batches += 1
        try:
            results = self.sampler.generate_rows(rows, adapter=adapter, on_token=dispatch)
        except Exception as err:  # the error goes to every waiting client, the thread lives on
            for item in items:
                item.future.set_exception(err)
            return
        start = 0
        for item in items:
            # Counted before the client can see its result, so counts are never behind what clients saw.
            self.requests += 1
            item.future.set_result(results[start : start + len(item.rows)])
            start += len(item.rows)
