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


def test_readme_run_command_trains_its_config_with_the_tiny_model(tmp_path):
    """The README's main job (`gym-tinker train CONFIG`) runs as written, shrunk to the tiny model."""
    pytest.importorskip("trl")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = re.search(r"```bash\n(python3 -m venv .*?)\n```", readme).group(1)
    main_job = command.split("&&")[-1].split()
    assert main_job[:2] == ["gym-tinker", "train"], main_job
    config = ROOT / main_job[2]
    assert config.is_file(), config
    overrides = ["model=tiny-random", "steps=2", "prompts_per_step=2", "group_size=2", "max_tokens=4",
                 "eval_episodes=4", "eval_every=1", "report_to=none"]  # fmt: skip
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gym-tinker"), "train", str(config), *overrides,
         "--output-dir", str(tmp_path / "run")],
        env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "succeeded" in done.stdout
    assert (tmp_path / "run" / "reward_curve.png").is_file() and (tmp_path / "run" / "adapter").is_dir()
