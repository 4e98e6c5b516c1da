"""Admission policy: which queued jobs start now, on which worker, and which running jobs yield.

Pure functions over plain data, so the rule is easy to read and to test. The rule:

1. Waiting jobs are taken in order of effective priority (higher first; with aging, one point
   per ``aging_interval`` seconds waited), then submission order (FIFO).
2. A job starts on the worker where it fits best (every resource it asks for, plus one of the
   worker's thread slots). Jobs that do not fit are skipped, so smaller jobs behind them still
   start: no head-of-line blocking.
3. A job that does not fit may preempt: on a worker where it would fit once some running jobs
   left, the preemptible jobs of strictly lower priority are asked to yield (lowest priority
   first, most recently started first among equals) and the freed room is reserved for it.
4. Anti-starvation: each time a job that does not fit is passed over by a job behind it, its
   ``bypassed`` count grows; once it reaches ``max_bypass``, the job reserves room on the worker
   with the most room for it, and later jobs may only use what is left there. Room frees up as
   running jobs end, and the job starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["SLOTS", "Placed", "Plan", "Waiting", "admission_order", "plan_admission"]

SLOTS = "_slots"
"""Pseudo-resource: one per worker thread; every job holds one, so admission bounds concurrency."""


@dataclass
class Waiting:
    """A queued job as admission sees it."""

    job_id: int
    priority: int
    seq: int
    demand: dict[str, float]
    bypassed: int = 0
    waited: float = 0.0


@dataclass
class Placed:
    """A job released to Dask and still holding its resources on ``worker``."""

    job_id: int
    worker: str
    priority: int
    demand: dict[str, float]
    preemptible: bool
    started: float
    stopping: bool = False


@dataclass
class Plan:
    """What to do now."""

    release: list[tuple[int, str]] = field(default_factory=list)
    """(job id, worker address) pairs to hand to Dask, in order."""
    preempt: list[int] = field(default_factory=list)
    """Running jobs to ask to yield."""
    bypassed: list[int] = field(default_factory=list)
    """Waiting jobs that were passed over this round (their counters grow by one each)."""
    unplaceable: dict[int, str] = field(default_factory=dict)
    """Waiting jobs that no current worker could ever hold, with the reason."""


def _fits(demand: Mapping[str, float], free: Mapping[str, float]) -> bool:
    return all(free.get(k, 0.0) >= v - 1e-9 for k, v in demand.items())


def _sub(a: Mapping[str, float], b: Mapping[str, float], sign: float = 1.0) -> dict[str, float]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0.0) - sign * v
    return out


def plan_admission(
    waiting: Iterable[Waiting],
    capacity: Mapping[str, Mapping[str, float]],
    placed: Iterable[Placed],
    *,
    max_bypass: int = 16,
    aging_interval: float | None = None,
) -> Plan:
    """Decide releases and preemptions for one round.

    Args:
        waiting: queued jobs in admission order (see ``admission_order``); consumed lazily.
        capacity: per worker address, what it offers (its Dask resources and ``SLOTS``).
        placed: jobs currently released to Dask.
        max_bypass: passes-over after which a waiting job reserves room (anti-starvation).
        aging_interval: seconds of waiting worth one priority point; None disables aging.

    >>> cap = {"w1": {SLOTS: 2, "GPU": 1}}
    >>> big = Waiting(1, priority=0, seq=1, demand={SLOTS: 1, "GPU": 2})
    >>> small = Waiting(2, priority=0, seq=2, demand={SLOTS: 1})
    >>> plan = plan_admission(admission_order([small, big]), cap, [])
    >>> plan.release, plan.unplaceable[1]
    ([(2, 'w1')], "no worker offers {'_slots': 1, 'GPU': 2}")
    """
    placed = list(placed)
    free = {w: dict(c) for w, c in capacity.items()}
    for p in placed:
        if p.worker in free:
            free[p.worker] = _sub(free[p.worker], p.demand)
    # Room that jobs already asked to yield will free, not yet claimed by a waiting job.
    yielding = {p.job_id: p for p in placed if p.stopping and p.worker in free}
    plan = Plan()

    victim_floor = min((p.priority for p in placed if p.preemptible), default=None)
    blocked: list[Waiting] = []
    for job in waiting:
        if (
            aging_interval is None
            and not yielding
            and all(f.get(SLOTS, 0.0) < 1.0 for f in free.values())
            and (victim_floor is None or job.priority <= victim_floor)
        ):
            # Every slot is taken and this job (so every later one) cannot preempt: stop here.
            break
        fitting = [w for w, f in free.items() if _fits(job.demand, f)]
        if fitting:
            # Best fit: leave the least of what this job asks for, keeping big holes for big jobs.
            worker = min(fitting, key=lambda w: (sum(free[w].get(k, 0.0) for k in job.demand), w))
            free[worker] = _sub(free[worker], job.demand)
            plan.release.append((job.job_id, worker))
            plan.bypassed.extend(b.job_id for b in blocked)
            continue
        if not any(_fits(job.demand, c) for c in capacity.values()):
            plan.unplaceable[job.job_id] = f"no worker offers {dict(job.demand)}"
            continue
        blocked.append(job)
        if _claim_yielding(job, free, yielding):
            continue
        victims = _choose_victims(job, free, placed)
        if victims is not None:
            worker, chosen = victims
            for v in chosen:
                v.stopping = True
                plan.preempt.append(v.job_id)
                free[worker] = _sub(free[worker], v.demand, sign=-1.0)
            free[worker] = _sub(free[worker], job.demand)
            continue
        if job.bypassed >= max_bypass:
            # Reserve on the worker where the job is closest to fitting.
            worker = max(
                (w for w, c in capacity.items() if _fits(job.demand, c)),
                key=lambda w: (min(free[w].get(k, 0.0) - v for k, v in job.demand.items()), w),
            )
            free[worker] = _sub(free[worker], job.demand)
    return plan


def admission_order(waiting: Iterable[Waiting], aging_interval: float | None = None) -> list[Waiting]:
    """Sort by effective priority (priority plus one per ``aging_interval`` seconds waited), then FIFO.

    >>> [w.job_id for w in admission_order([Waiting(1, 0, 1, {}), Waiting(2, 5, 2, {}), Waiting(3, 0, 3, {})])]
    [2, 1, 3]
    """

    def key(w: Waiting) -> tuple[float, int]:
        aged = w.priority + (int(w.waited // aging_interval) if aging_interval else 0)
        return (-aged, w.seq)

    return sorted(waiting, key=key)


def _claim_yielding(job: Waiting, free: dict[str, dict[str, float]], yielding: dict[int, Placed]) -> bool:
    """Reserve for ``job`` the room that already-stopping jobs will free, if that is enough."""
    by_worker: dict[str, list[Placed]] = {}
    for p in yielding.values():
        by_worker.setdefault(p.worker, []).append(p)
    for worker, stopping in sorted(by_worker.items()):
        room = dict(free[worker])
        used = []
        for p in stopping:
            room = _sub(room, p.demand, sign=-1.0)
            used.append(p)
            if _fits(job.demand, room):
                for u in used:
                    del yielding[u.job_id]
                free[worker] = _sub(room, job.demand)
                return True
    return False


def _choose_victims(
    job: Waiting, free: dict[str, dict[str, float]], placed: list[Placed]
) -> tuple[str, list[Placed]] | None:
    best: tuple[tuple[int, int, str], str, list[Placed]] | None = None
    for worker in sorted(free):
        candidates = sorted(
            (
                p
                for p in placed
                if p.worker == worker and p.preemptible and not p.stopping and p.priority < job.priority
            ),
            key=lambda p: (p.priority, -p.started),
        )
        room = dict(free[worker])
        chosen: list[Placed] = []
        for p in candidates:
            if _fits(job.demand, room):
                break
            room = _sub(room, p.demand, sign=-1.0)
            chosen.append(p)
        if chosen and _fits(job.demand, room):
            cost = (max(p.priority for p in chosen), len(chosen), worker)
            if best is None or cost < best[0]:
                best = (cost, worker, chosen)
    return None if best is None else (best[1], best[2])
