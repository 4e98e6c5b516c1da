"""The Python client: ``connect()`` to a gym-tinker cluster, submit jobs, and watch them."""

from __future__ import annotations

import getpass
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from executors.errors import ConnectError, JobFailedError
from executors.kinds import body_ref_for, register_job_kind
from executors.plugin_handlers import unwrap_reply
from executors.spec import JobSpec, JobState

__all__ = ["JobHandle", "TinkerClient", "connect"]

_WAIT_CHUNK = 30.0  # seconds per long-poll, so a dropped connection is noticed


def connect(
    address: str | None = None,
    security: Any = None,
    *,
    journal: str | Path | None = None,
    state_dir: str | Path | None = None,
    max_bypass: int = 16,
    aging_interval: float | None = None,
    timeout: float = 10.0,
    **local_cluster_kwargs: Any,
) -> TinkerClient:
    """Connect to a gym-tinker cluster, or start an embedded one when ``address`` is None.

    The embedded cluster is a Dask ``LocalCluster`` (worker processes sized to this machine;
    ``local_cluster_kwargs`` such as ``n_workers``, ``threads_per_worker`` or
    ``resources={"GPU": 1}`` are passed on) with the scheduler plugin installed. Its journal is
    ``journal``, else ``<state_dir>/journal.sqlite``, else a fresh temporary directory.

    Args:
        address: a Dask scheduler address (``tcp://host:8786``, ``tls://...``) whose scheduler
            runs the gym-tinker plugin.
        security: a ``distributed.Security`` for TLS clusters.
        journal, state_dir, max_bypass, aging_interval: scheduler settings (embedded cluster only).
        timeout: seconds to wait for the scheduler.

    Raises:
        ConnectError: the scheduler cannot be reached or does not run the gym-tinker plugin.

    >>> with connect(n_workers=1, threads_per_worker=1) as client:
    ...     client.submit({"kind": "noop", "params": {"value": 3}}).result(timeout=60)
    {'value': 3}
    """
    from distributed import Client, LocalCluster

    from executors.plugin import PriorityScheduler

    if address is not None:
        if local_cluster_kwargs or journal or state_dir:
            raise TypeError("journal, state_dir and LocalCluster options only apply when address is None")
        try:
            dask_client = Client(address, security=security, timeout=timeout)
        except Exception as exc:  # OSError, TimeoutError, TLS and address errors alike
            raise ConnectError(
                f"cannot connect to the Dask scheduler at {address!r}: {exc or type(exc).__name__}"
            ) from None
        client = TinkerClient(dask_client)
        client._check_plugin(address)
        return client

    if state_dir is None and journal is None:
        state_dir = tempfile.mkdtemp(prefix="gym-tinker-")
    local_cluster_kwargs.setdefault("dashboard_address", ":0")
    cluster = LocalCluster(processes=True, security=security, **local_cluster_kwargs)
    try:
        dask_client = Client(cluster, security=security, timeout=timeout)
        dask_client.register_plugin(PriorityScheduler(journal, state_dir, max_bypass, aging_interval))
    except BaseException:
        cluster.close()
        raise
    return TinkerClient(dask_client, cluster=cluster)


class TinkerClient:
    """A connection to a gym-tinker scheduler; use ``connect()`` to make one.

    Attributes:
        dask: the underlying ``distributed.Client``.
        cluster: the embedded ``LocalCluster``, or None for a remote cluster.

    >>> with connect(n_workers=1, threads_per_worker=2) as client:
    ...     handles = client.submit_many([{"kind": "noop", "user": "ann"}, {"kind": "noop", "user": "bob"}])
    ...     states = client.wait(handles, timeout=60)
    ...     [job["user"] for job in client.jobs(state="succeeded")]
    ['ann', 'bob']
    """

    def __init__(self, dask_client: Any, cluster: Any = None) -> None:
        self.dask = dask_client
        self.cluster = cluster

    @property
    def address(self) -> str:
        """The Dask scheduler address."""
        return str(self.dask.scheduler.address)

    def _call(self, _op: str, **kwargs: Any) -> Any:
        reply = self.dask.sync(getattr(self.dask.scheduler, f"gym_tinker_{_op}"), **kwargs)
        return unwrap_reply(reply)

    def _check_plugin(self, address: str) -> None:
        try:
            self._call("ping")
        except Exception as exc:
            self.dask.close()
            raise ConnectError(
                f"the Dask scheduler at {address!r} does not run the gym-tinker scheduler ({exc}); start it "
                "with `dask scheduler --preload executors.plugin` or `gym-tinker cluster up`"
            ) from None

    # -- jobs ----------------------------------------------------------------------------------
    def submit(self, spec: JobSpec | dict[str, Any] | str | Path, priority: int | None = None) -> JobHandle:
        """Queue one job; returns once the scheduler has journaled it.

        Args:
            spec: a ``JobSpec``, a dict of its fields, or a path to a YAML/JSON file.
            priority: overrides the spec's priority.

        Raises:
            SpecError: the spec is invalid or its kind unknown; nothing is queued.
        """
        return self.submit_many([spec], priority=priority)[0]

    def submit_many(
        self, specs: Sequence[JobSpec | dict[str, Any] | str | Path], priority: int | None = None
    ) -> list[JobHandle]:
        """Queue several jobs in one round trip: all are queued, or (on a bad spec) none."""
        items = []
        for spec in specs:
            parsed = JobSpec.coerce(spec)
            if parsed.user is None:
                parsed = parsed.model_copy(update={"user": getpass.getuser()})
            items.append(
                {
                    "spec": parsed.model_dump(mode="json"),
                    "body": body_ref_for(parsed.kind),
                    "priority": priority,
                }
            )
        ids = self._call("submit", jobs=items)
        return [JobHandle(self, job_id) for job_id in ids]

    def job(self, job_id: int) -> JobHandle:
        """A handle on an existing job (raises ``JobNotFoundError`` if there is none)."""
        self._call("job", job_id=int(job_id))
        return JobHandle(self, int(job_id))

    def jobs(
        self, state: str | None = None, user: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Jobs in the journal, oldest first, optionally filtered by state and user."""
        return list(self._call("jobs", state=state, user=user, limit=limit))

    def wait(self, handles: Sequence[JobHandle | int], timeout: float | None = None) -> dict[int, str]:
        """Wait until all given jobs are final (or ``timeout`` passes); returns their states."""
        ids = [h.id if isinstance(h, JobHandle) else int(h) for h in handles]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            chunk = (
                _WAIT_CHUNK if deadline is None else max(0.0, min(_WAIT_CHUNK, deadline - time.monotonic()))
            )
            states = dict(self._call("wait", job_ids=ids, timeout=chunk))
            done = all(JobState(s).final for s in states.values())
            if done or (deadline is not None and time.monotonic() >= deadline):
                return states

    def follow(self, job_id: int, poll: float = 1.0) -> Iterator[dict[str, Any]]:
        """Yield the job's log and metric events as they arrive, until the job is final.

        Each event is a dict with ``type`` (``start``, ``log``, ``metric`` or ``signal``), ``ts``,
        ``attempt``, ``step`` and ``payload``.
        """
        after = 0
        while True:
            reply = self._call("events", job_id=int(job_id), after=after, timeout=poll)
            for event in reply["events"]:
                after = event["id"]
                yield event
            if JobState(reply["state"]).final and not reply["events"]:
                return

    def register_kind(self, name: str, body: Any) -> str:
        """Register a job kind for the whole cluster (journaled; survives scheduler restarts).

        ``body`` is as for ``register_job_kind``; it must be importable (or picklable) on the
        scheduler and workers.
        """
        ref = register_job_kind(name, body)
        return str(self._call("register_kind", name=name, body=ref))

    # -- life cycle --------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection, and the embedded cluster if there is one."""
        self.dask.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def __enter__(self) -> TinkerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TinkerClient {self.address}>"


class JobHandle:
    """A submitted job: ask its status, wait for it, read its logs and metrics, cancel it.

    >>> with connect(n_workers=1, threads_per_worker=1) as client:
    ...     job = client.submit({"kind": "steps", "params": {"steps": 3, "step_seconds": 0}})
    ...     job.wait(timeout=60), [m["accumulator"] for m in job.metrics()], job.cancel()
    ('succeeded', [1.0, 3.0, 6.0], 'succeeded')
    """

    def __init__(self, client: TinkerClient, job_id: int) -> None:
        self.client = client
        self.id = job_id

    def info(self) -> dict[str, Any]:
        """Everything the journal knows: spec, state, attempts, transitions, result, error."""
        return dict(self.client._call("job", job_id=self.id))

    def status(self) -> str:
        """The current state: queued, running, preempted, succeeded, failed or cancelled."""
        return str(self.info()["state"])

    def wait(self, timeout: float | None = None) -> str:
        """Block until the job is final and return its state.

        Raises:
            TimeoutError: the job is not final after ``timeout`` seconds.
        """
        state = self.client.wait([self.id], timeout=timeout)[self.id]
        if not JobState(state).final:
            raise TimeoutError(f"job {self.id} still {state} after {timeout} s")
        return state

    def result(self, timeout: float | None = None) -> Any:
        """Wait, then return the body's result.

        Raises:
            JobFailedError: the job failed or was cancelled (the message carries the reason).
        """
        state = self.wait(timeout)
        info = self.info()
        if state != JobState.SUCCEEDED.value:
            raise JobFailedError(
                f"job {self.id} {state}: {info.get('error') or info['transitions'][-1]['reason']}"
            )
        return info["result"]

    def cancel(self) -> str:
        """Cancel: a queued job at once, a running one at its next step boundary."""
        return str(self.client._call("cancel", job_id=self.id))

    def logs(self) -> list[str]:
        """The log lines the body wrote with ``ctx.log``."""
        reply = self.client._call("events", job_id=self.id, type="log")
        return [e["payload"]["message"] for e in reply["events"]]

    def metrics(self) -> list[dict[str, Any]]:
        """The body's ``ctx.report`` calls, as dicts with ``step``, ``ts`` and the metrics."""
        reply = self.client._call("events", job_id=self.id, type="metric")
        return [
            {"step": e["step"], "ts": e["ts"], "attempt": e["attempt"], **e["payload"]}
            for e in reply["events"]
        ]

    def __repr__(self) -> str:
        return f"<JobHandle {self.id}>"
