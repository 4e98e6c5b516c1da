"""The README's code blocks and the quickstart example run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def readme_blocks() -> list[str]:
    return PYTHON_BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def test_readme_has_python_examples():
    assert len(readme_blocks()) >= 3


@pytest.mark.parametrize("index", range(len(readme_blocks())))
def test_readme_block_runs(index, tmp_path):
    script = tmp_path / f"readme_block_{index}.py"
    script.write_text(readme_blocks()[index], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]


def test_quickstart_main_job_runs_on_the_embedded_cluster(tmp_path):
    pytest.importorskip("torch")
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "quickstart.py"),
            "--model",
            "tiny-random",
            "--episodes",
            "2",
            "--batch-size",
            "2",
            "--max-tokens",
            "4",
            "--out",
            str(tmp_path / "run"),
        ],
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "success" in done.stdout and "over 2 episodes" in done.stdout
    assert (tmp_path / "run" / "trajectories.jsonl").is_file()
