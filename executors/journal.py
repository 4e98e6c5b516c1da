"""The scheduler's durable journal: every job, transition, log line and metric, in SQLite (WAL)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Journal"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    name TEXT,
    user TEXT,
    priority INTEGER NOT NULL,
    spec TEXT NOT NULL,
    body TEXT,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    preemptions INTEGER NOT NULL DEFAULT 0,
    crashes INTEGER NOT NULL DEFAULT 0,
    submitted REAL NOT NULL,
    updated REAL NOT NULL,
    started REAL,
    finished REAL,
    worker TEXT,
    checkpoint_dir TEXT NOT NULL DEFAULT '',
    result TEXT,
    error TEXT,
    traceback TEXT
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL REFERENCES jobs(id),
    ts REAL NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    reason TEXT
);
CREATE INDEX IF NOT EXISTS transitions_job ON transitions(job_id);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    ts REAL NOT NULL,
    attempt INTEGER,
    type TEXT NOT NULL,
    step INTEGER,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_job ON events(job_id, type, id);
CREATE TABLE IF NOT EXISTS kinds (name TEXT PRIMARY KEY, body TEXT NOT NULL, ts REAL NOT NULL);
"""

_JOB_FIELDS = (
    "attempts",
    "preemptions",
    "crashes",
    "started",
    "finished",
    "worker",
    "checkpoint_dir",
    "result",
    "error",
    "traceback",
    "priority",
)


class Journal:
    """SQLite journal; each method commits before returning, so a write that returned is durable.

    WAL mode with ``synchronous=NORMAL``: a committed write survives the scheduler process being
    killed; the last transactions may be lost only if the whole machine loses power.

    >>> j = Journal(":memory:")
    >>> [job_id] = j.add_jobs([{"kind": "noop", "priority": 0, "spec": {"kind": "noop"}}])
    >>> j.transition(job_id, "running", "started", attempts=1)
    >>> j.get_job(job_id)["state"], [t["to_state"] for t in j.transitions(job_id)]
    ('running', ['queued', 'running'])
    """

    def __init__(self, path: str | Path) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = str(path)
        # One connection used from the scheduler's event-loop thread only.
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def add_jobs(self, jobs: Sequence[dict[str, Any]], reason: str = "submitted") -> list[int]:
        """Insert jobs as ``queued`` (one transaction) and return their new ids, in order."""
        now = time.time()
        ids = []
        with self._tx():
            for job in jobs:
                cur = self._db.execute(
                    "INSERT INTO jobs (kind, name, user, priority, spec, body, state, submitted, updated)"
                    " VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
                    (
                        job["kind"],
                        job.get("name"),
                        job.get("user"),
                        job["priority"],
                        json.dumps(job["spec"]),
                        job.get("body"),
                        now,
                        now,
                    ),
                )
                job_id = int(cur.lastrowid or 0)
                ids.append(job_id)
                self._db.execute(
                    "INSERT INTO transitions (job_id, ts, from_state, to_state, reason) VALUES (?, ?, NULL, 'queued', ?)",
                    (job_id, now, reason),
                )
        return ids

    def transition(self, job_id: int, state: str, reason: str | None = None, **fields: Any) -> None:
        """Move a job to ``state``, recording the time and reason, and update the given columns."""
        self.transitions_many([(job_id, state, reason, fields)])

    def transitions_many(self, changes: Iterable[tuple[int, str, str | None, dict[str, Any]]]) -> None:
        """Apply several transitions in one transaction."""
        now = time.time()
        with self._tx():
            for job_id, state, reason, fields in changes:
                row = self._db.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
                if row is None:
                    raise KeyError(f"no job {job_id} in journal {self.path}")
                sets = ["state = ?", "updated = ?"]
                values: list[Any] = [state, now]
                for name, value in fields.items():
                    if name not in _JOB_FIELDS:
                        raise ValueError(f"unknown job column {name!r}; expected one of {_JOB_FIELDS}")
                    sets.append(f"{name} = ?")
                    values.append(json.dumps(value) if name == "result" else value)
                self._db.execute(f"UPDATE jobs SET {', '.join(sets)} WHERE id = ?", (*values, job_id))
                if row["state"] != state:
                    self._db.execute(
                        "INSERT INTO transitions (job_id, ts, from_state, to_state, reason) VALUES (?, ?, ?, ?, ?)",
                        (job_id, now, row["state"], state, reason),
                    )

    def add_events(
        self, events: Iterable[tuple[int, float, int | None, str, int | None, dict[str, Any]]]
    ) -> None:
        """Append log/metric events ``(job_id, ts, attempt, type, step, payload)``."""
        with self._tx():
            self._db.executemany(
                "INSERT INTO events (job_id, ts, attempt, type, step, payload) VALUES (?, ?, ?, ?, ?, ?)",
                [(j, ts, a, t, s, json.dumps(p)) for j, ts, a, t, s, p in events],
            )

    def get_job(self, job_id: int) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _job_dict(row) if row is not None else None

    def list_jobs(
        self,
        state: str | None = None,
        user: str | None = None,
        limit: int | None = None,
        *,
        with_body: bool = False,
    ) -> list[dict[str, Any]]:
        query = "SELECT * FROM jobs WHERE 1=1"
        args: list[Any] = []
        if state is not None:
            query += " AND state = ?"
            args.append(state)
        if user is not None:
            query += " AND user = ?"
            args.append(user)
        query += " ORDER BY id"
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        return [_job_dict(r, with_body) for r in self._db.execute(query, args)]

    def transitions(self, job_id: int) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT * FROM transitions WHERE job_id = ? ORDER BY id", (job_id,))
        return [dict(r) for r in rows]

    def events(self, job_id: int, type_: str | None = None, after: int = 0) -> list[dict[str, Any]]:
        """Events of a job with id greater than ``after`` (pass the last id seen to follow)."""
        query = "SELECT * FROM events WHERE job_id = ? AND id > ?"
        args: list[Any] = [job_id, after]
        if type_ is not None:
            query += " AND type = ?"
            args.append(type_)
        rows = self._db.execute(query + " ORDER BY id", args)
        return [{**dict(r), "payload": json.loads(r["payload"])} for r in rows]

    def add_kind(self, name: str, body: str) -> None:
        """Record a cluster-wide job kind (replacing any earlier body for that name)."""
        with self._tx():
            self._db.execute(
                "INSERT OR REPLACE INTO kinds (name, body, ts) VALUES (?, ?, ?)", (name, body, time.time())
            )

    def kinds(self) -> dict[str, str]:
        """Cluster-wide job kinds: name to body reference."""
        return {r["name"]: r["body"] for r in self._db.execute("SELECT name, body FROM kinds")}

    def _tx(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if exc_type is not None else "COMMIT")


def _job_dict(row: sqlite3.Row, with_body: bool = False) -> dict[str, Any]:
    job = dict(row)
    job["spec"] = json.loads(job["spec"])
    job["result"] = json.loads(job["result"]) if job["result"] is not None else None
    if not with_body:
        job.pop("body", None)
    return job
