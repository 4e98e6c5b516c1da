"""The gym-tinker scheduler as a Dask scheduler plugin: our queue, admission, preemption and journal.

Install it with ``dask scheduler --preload executors.plugin`` (options:
``--gym-tinker-journal PATH``, ``--gym-tinker-state-dir DIR``, ``--gym-tinker-max-bypass N``,
``--gym-tinker-aging SECONDS``), with ``gym-tinker cluster up``, or implicitly through
``executors.connect()``. Clients talk to it through the ``gym_tinker_*`` scheduler handlers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import click
from distributed import Client
from distributed.diagnostics.plugin import SchedulerPlugin

from executors.context import EVENT_TOPIC
from executors.plugin_handlers import SchedulerHandlers
from executors.scheduler import KEY_PREFIX, SEND_INTERVAL, JobScheduler

__all__ = ["PLUGIN_NAME", "PriorityScheduler", "dask_setup"]

logger = logging.getLogger("executors.scheduler")
PLUGIN_NAME = "gym-tinker"
_FLUSH_SECONDS = 0.1
_ADMIT_EVERY = 5  # flush ticks between periodic admission rounds


class PriorityScheduler(JobScheduler, SchedulerPlugin):
    """The central job scheduler of one Dask cluster (see ``docs/scheduler.md``).

    Args:
        journal: SQLite journal path; default ``<state_dir>/journal.sqlite``.
        state_dir: default home of the journal and of checkpoints of jobs without ``output_dir``.
        max_bypass: how often a waiting job may be passed over before it reserves room.
        aging_interval: seconds of waiting worth one priority point (None: no aging).

    >>> PriorityScheduler(journal=":memory:").name
    'gym-tinker'
    """

    name = PLUGIN_NAME
    _fenced: set[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fenced = set()

    def __getstate__(self) -> dict[str, Any]:
        # Sent to the scheduler by Client.register_plugin before start(); only config travels.
        return {k: getattr(self, k) for k in ("state_dir", "journal_path", "max_bypass", "aging_interval")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["journal_path"], state["state_dir"], state["max_bypass"], state["aging_interval"])  # type: ignore[misc]

    # -- life cycle --------------------------------------------------------------------------
    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self._open()
        SchedulerHandlers(self).register(scheduler)
        # An in-process listener keeps our own client off the network (and outside TLS).
        await scheduler.listen("inproc://")
        self._spawn(self._connect(scheduler.listeners[-1].contact_address))
        self._spawn(self._flush_loop())
        logger.info("gym-tinker scheduler: journal %s, %d active jobs", self.journal_path, len(self.jobs))

    async def _connect(self, address: str) -> None:
        # A preloaded plugin starts before the scheduler accepts clients: wait until it does.
        while self.scheduler.status.name != "running":
            await asyncio.sleep(0.01)
        client = await Client(address, asynchronous=True, name="gym-tinker-scheduler")
        # The client batches messages for 10 ms by default; releases are latency-critical.
        client.scheduler_comm.interval = SEND_INTERVAL
        self.client = client
        for worker in self.scheduler.workers:
            self._tune_stream(worker)
        self._admit_soon()

    async def before_close(self) -> None:
        # Workers leaving because the cluster shuts down are not job failures: jobs still
        # running stay "running" in the journal and resume when a scheduler restarts on it.
        self._closing = True

    async def close(self) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self._journal is not None:
            self.commit()
            self.flush_events()
            self._journal.close()
            self._journal = None

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        # Normal endings arrive as "end" events (see log_event); this catches an attempt whose
        # task itself erred, e.g. a worker that cannot import executors.
        if finish == "erred" and isinstance(key, str) and key.startswith(KEY_PREFIX):
            job_id = int(key[len(KEY_PREFIX) :].split("-", 1)[0])
            error = str(kwargs.get("exception_text") or "the Dask task erred")
            self._on_outcome(
                job_id, key, {"outcome": "failed", "error": error, "traceback": kwargs.get("traceback_text")}
            )

    def add_worker(self, scheduler: Any, worker: str) -> None:
        self._admit_soon()

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        if self._closing:
            return
        for job in list(self._running.values()):
            if job.worker == worker and job.key is not None:
                self._on_outcome(
                    job.id, job.key, {"outcome": "lost", "error": f"worker {worker} left the cluster"}
                )
        self._admit_soon()

    def log_event(self, topic: str, msg: Any) -> None:
        if topic != EVENT_TOPIC or not isinstance(msg, dict):
            return
        job = self.jobs.get(msg.get("job", -1))
        if job is None or job.key != msg.get("key"):
            # An attempt this scheduler does not run (e.g. one from before a restart): stop it,
            # once. Keys without our prefix are run_attempt calls made outside the scheduler.
            key = str(msg.get("key", ""))
            if key.startswith(KEY_PREFIX) and key not in self._fenced and msg.get("worker"):
                self._fenced.add(key)
                self._spawn(self._deliver(msg["worker"], key, "cancel"))
            return
        kind = msg.get("type")
        if kind == "start":
            job.started_at = msg["ts"]
            if job.stop_signal is not None:
                self._spawn(self._deliver(msg["worker"], msg["key"], job.stop_signal))
        elif kind == "log":
            self._event_buffer.append(
                (job.id, msg["ts"], msg["attempt"], "log", None, {"message": msg["message"]})
            )
        elif kind == "metric":
            self._event_buffer.append(
                (job.id, msg["ts"], msg["attempt"], "metric", msg.get("step"), msg["metrics"])
            )
        elif kind == "checkpoint":
            job.checkpointed_at = msg["ts"]
        elif kind == "end":
            self._on_outcome(job.id, msg["key"], msg["outcome"])
        if kind == "start":
            where = {"worker": msg.get("worker"), "pid": msg.get("pid"), "host": msg.get("host")}
            self._event_buffer.append((job.id, msg["ts"], msg["attempt"], "start", None, where))

    async def _flush_loop(self) -> None:
        ticks = 0
        while True:
            await asyncio.sleep(_FLUSH_SECONDS)
            self.flush_events()
            ticks += 1
            if self._queue and ticks % _ADMIT_EVERY == 0:
                # Safety net for changes no hook reports (a worker un-pausing) and for aging.
                self._admit_soon()


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--gym-tinker-journal", default=None, envvar="GYM_TINKER_JOURNAL", help="SQLite journal path.")
@click.option("--gym-tinker-state-dir", default=None, envvar="GYM_TINKER_STATE_DIR", help="State directory.")
@click.option(
    "--gym-tinker-max-bypass", default=16, type=int, show_default=True, help="Anti-starvation bound."
)
@click.option("--gym-tinker-aging", default=None, type=float, help="Seconds of waiting per priority point.")
def dask_setup(
    scheduler: Any, gym_tinker_journal: str | None, gym_tinker_state_dir: str | None,
    gym_tinker_max_bypass: int, gym_tinker_aging: float | None,
) -> None:  # fmt: skip
    """Dask preload hook: ``dask scheduler --preload executors.plugin`` installs the scheduler."""
    plugin = PriorityScheduler(
        gym_tinker_journal, gym_tinker_state_dir, gym_tinker_max_bypass, gym_tinker_aging
    )
    scheduler.add_plugin(plugin, name=PLUGIN_NAME)
