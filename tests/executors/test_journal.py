"""The SQLite journal: transitions, events, and what survives reopening."""

from __future__ import annotations

import sqlite3

import pytest

from executors.journal import Journal


def test_jobs_transitions_and_events_survive_reopening(tmp_path):
    path = tmp_path / "j" / "journal.sqlite"
    journal = Journal(path)
    ids = journal.add_jobs(
        [{"kind": "steps", "priority": p, "spec": {"kind": "steps"}, "user": "ann"} for p in (1, 2)]
    )
    assert ids == [1, 2]
    journal.transition(1, "running", "released", attempts=1, worker="tcp://w")
    journal.transition(1, "failed", "boom", error="RuntimeError: boom", traceback="Traceback ...")
    journal.add_events([(2, 1.0, 1, "log", None, {"message": "hi"}), (2, 2.0, 1, "metric", 3, {"loss": 0.5})])
    journal.add_kind("mine", "pkg.mod:body")
    journal.close()

    journal = Journal(path)
    assert journal.get_job(1)["state"] == "failed" and journal.get_job(1)["traceback"] == "Traceback ..."
    assert [(t["from_state"], t["to_state"], t["reason"]) for t in journal.transitions(1)] == [
        (None, "queued", "submitted"),
        ("queued", "running", "released"),
        ("running", "failed", "boom"),
    ]
    assert [j["id"] for j in journal.list_jobs(state="queued", user="ann")] == [2]
    events = journal.events(2)
    assert [e["type"] for e in events] == ["log", "metric"] and journal.events(2, after=events[0]["id"])[0][
        "step"
    ] == 3
    assert journal.kinds() == {"mine": "pkg.mod:body"}
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    journal.close()


def test_failed_batch_writes_nothing(tmp_path):
    journal = Journal(tmp_path / "j.sqlite")
    journal.add_jobs([{"kind": "noop", "priority": 0, "spec": {}}])
    with pytest.raises(KeyError, match="no job 99"):
        journal.transitions_many([(1, "running", None, {}), (99, "running", None, {})])
    assert journal.get_job(1)["state"] == "queued"
    with pytest.raises(ValueError, match="unknown job column"):
        journal.transition(1, "running", None, bogus=1)
    journal.close()
