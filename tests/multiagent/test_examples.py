"""Run each example script in its fast mode, as a user would, and check what it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from gym_tinker.trajectory import load_jsonl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(script: str, *args: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_selfplay_tictactoe():
    out = run("selfplay_tictactoe.py", "--games", "6")
    assert "6 games of tic-tac-toe" in out
    minimax = re.search(r"^minimax\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.MULTILINE)
    random = re.search(r"^random\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.MULTILINE)
    assert minimax is not None and random is not None, out
    wins, draws, losses = map(int, minimax.groups())
    assert wins + draws + losses == 6 and losses == 0
    assert list(map(int, random.groups())) == [losses, draws, wins]


def test_league_tictactoe(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    out = run("league_tictactoe.py", "--rounds", "2", "--games", "4", "--out", str(path))
    assert "round 2:" in out and "league after 2 rounds" in out
    for name in ("learner@1", "learner@2", "minimax", "random"):
        assert name in out
    trajectories = load_jsonl(path)
    assert trajectories and all(t.metadata["policy"] == "learner" for t in trajectories)
    assert f"saved {len(trajectories)} trajectories" in out
