"""Smoke runs of the benchmark scripts in ``bench/``: each runs briefly, prints its table and writes its JSON.

The scripts run as a user runs them (``python bench/<script>.py``, in a subprocess), with the
shortest settings they offer. Their figures are never asserted (speed is measured, not tested);
what is asserted is what a reader of the results relies on: every row present, rates positive,
and the mixed scheduler workload showing what priorities are for.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def run_script(name: str, *args: str, timeout: float = 240) -> str:
    """Runs ``bench/<name>`` with ``args``; returns its stdout (fails with its output if it fails)."""
    done = subprocess.run(
        [sys.executable, str(BENCH / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=BENCH.parent,
    )
    assert done.returncode == 0, (
        f"{name} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def load(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def test_env_throughput_one_env(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    args = ["--env", "tinker/GuessNumber-v0", "--no-async", "--seconds", "0.05", "--output", str(out)]
    stdout = run_script("env_throughput.py", *args)
    report = load(out)
    modes = {(row["policy"], row["mode"]) for row in report["rows"]}
    assert modes == {(p, m) for p in ("random", "oracle") for m in ("unwrapped", "gym.make", "sync x4")}
    assert all(row["steps"] > 0 and row["steps_per_s"] > 0 for row in report["rows"])
    # The oracle replay stays in step with the env: every episode solved, reward above 0.
    assert all(row["mean_return"] > 0 for row in report["rows"] if row["policy"] == "oracle")
    assert "bench/peers.py" in stdout


def test_action_sizes_one_env_and_one_game(tmp_path: Path) -> None:
    out = tmp_path / "sizes.json"
    run_script("action_sizes.py", "--size", "4096", "--only", "u", "--output", str(out))
    rows = load(out)["rows"]
    targets = {row["target"] for row in rows}
    assert {"tinker/GuessNumber-v0", "kuhn_poker_v0"} <= targets
    assert all("tictactoe" not in t for t in targets)  # --only filters
    assert {(row["target"], row["cap"]) for row in rows} == {(t, c) for t in targets for c in (None, 32768)}
    assert all(len(row["by_shape_wall_ms"]) == 40 and row["worst_wall_ms"] >= 0 for row in rows)


@pytest.mark.slow
def test_peers_side_by_side(tmp_path: Path) -> None:
    out = tmp_path / "peers.json"
    stdout = run_script("peers.py", "--quick", "--seconds", "0.03", "--repeats", "1", "--out", str(out))
    report = load(out)
    rows = report["rows"]
    tasks = {row["task"] for row in rows if row["ours"] and row["headline"]}
    assert tasks == {
        "tic-tac-toe",
        "GuessNumber (1-10, 4 turns)",
        "GuessNumber (1-100, 10 turns)",
        "Wordle (5 letters, 6 turns)",
    }
    assert all(row["best"]["steps_per_s"] > 0 for row in rows)
    if importlib.util.find_spec("gem") is not None:
        assert any(row["library"] == "gem" and row["task"].startswith("GuessNumber") for row in rows)
        assert {s["task"] for s in report["summary"]} >= {"GuessNumber (1-10, 4 turns)"}
    for summary in report["summary"]:
        assert summary["task"] in stdout and summary["ratio"] > 0


@pytest.mark.slow
def test_vector_scaling_both_modes(tmp_path: Path) -> None:
    out = tmp_path / "vector.json"
    run_script(
        "vector_scaling.py", "--seconds", "0.05", "--repeats", "1", "--num-envs", "1", "2", "--out", str(out)
    )
    rows = load(out)["rows"]
    ours = {(row["mode"], row["num_envs"]) for row in rows if row["library"] == "ours"}
    assert ours == {("sync", 1), ("sync", 2), ("async", 1), ("async", 2)}
    assert all(row["steps"] > 0 and row["steps"] <= row["vector_steps"] * row["num_envs"] for row in rows)


@pytest.mark.slow
def test_scheduler_mixed_priorities_cut_urgent_delay(tmp_path: Path) -> None:
    out = tmp_path / "mixed.json"
    stdout = run_script("scheduler_mixed.py", "--step-seconds", "0.02", "--out", str(out), timeout=280)
    report = load(out)
    results = report["results"]
    assert set(results) == {"ours", "ours FIFO", "raw Dask FIFO", "raw Dask priority="}
    assert len(report["jobs"]) == 20 and {job["user"] for job in report["jobs"]} == {"alice", "bob", "carol"}
    # Urgent jobs arrive while long GPU jobs hold both slots: with priorities and preemption they
    # start within a few steps, under FIFO they wait for the slots to drain.
    assert results["ours"]["urgent_delay_median_s"] < results["ours FIFO"]["urgent_delay_median_s"]
    assert results["ours"]["preemptions"] > 0 and results["ours FIFO"]["preemptions"] == 0
    assert all(0 < r["gpu_slot_utilisation"] <= 1.05 for r in results.values())
    assert "urgent jobs wait" in stdout
