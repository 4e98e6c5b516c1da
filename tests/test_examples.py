"""Every script in ``examples/`` runs as written in its fast mode (``--quick``), and prints what it promises.

The examples are found by listing ``examples/*.py``, so a new example fails here until it has a
``--quick`` mode and an entry in ``CHECKS`` saying what its output must show. The three that
other modules already run (with their own fast flags) are listed in ``TESTED_ELSEWHERE``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(path.name for path in EXAMPLES.glob("*.py"))

TESTED_ELSEWHERE = {
    "quickstart.py": "tests/test_docs_and_examples.py",
    "selfplay_tictactoe.py": "tests/multiagent/test_examples.py",
    "league_tictactoe.py": "tests/multiagent/test_examples.py",
}
"""Examples whose fast mode another test module runs, and that module."""

Check = Callable[[str, Path], None]
CHECKS: dict[str, Check] = {}
"""Example script -> a check of its ``--quick`` output (stdout) given the test's temporary folder."""


def check(script: str) -> Callable[[Check], Check]:
    def register(function: Check) -> Check:
        CHECKS[script] = function
        return function

    return register


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def printed_path(pattern: str, out: str) -> Path:
    match = re.search(pattern, out)
    assert match is not None, f"{pattern!r} not in the output:\n{out}"
    return Path(match[1])


@check("gym_loop_tooluse.py")
def _(out: str, tmp: Path) -> None:
    assert out.count('<tool_call>{"name": "lookup"') == 3
    assert out.count("reward 1.0 after 2 turns") == 3 and "solved 3 of 3 episodes" in out


@check("vector_rollout.py")
def _(out: str, tmp: Path) -> None:
    for mode in ("default", "workers", "list   ", "async  "):
        match = re.search(rf"make_vec {mode}: 2 envs, first-episode returns \[(.*)\]", out)
        assert match is not None, out
        assert all(0 < float(r) <= 1 for r in match[1].split(","))  # binary search finds the number
    assert "rollout engine: 4 episodes on 2 envs, solved 4" in out and "dropped 0" in out


@check("custom_env.py")
def _(out: str, tmp: Path) -> None:
    assert "check_text_env and gymnasium check_env: passed" in out
    assert out.count("[observation] Correct.") == 2
    assert "solved 2 of 2 episodes of mine/ReverseWord-v0" in out


@check("llm_vs_bot.py")
def _(out: str, tmp: Path) -> None:
    match = re.search(
        r"tiny-random vs the random bot over 2 games: (\d+) wins, (\d+) draws, (\d+) losses", out
    )
    assert match is not None, out
    assert sum(map(int, match.groups())) == 2
    assert "per seat {'player_0'" in out and "'player_1'" in out  # the seats alternate


def check_training(kind: str, out: str) -> None:
    assert f"job 1 ({kind}, tiny-random, 2 steps)" in out
    assert "2/2" in out  # the progress bar reached the last step
    heldout = re.search(r"held-out accuracy by step: \{(.*)\}", out)
    assert heldout is not None and heldout[1].startswith("0: ") and "2: " in heldout[1], out
    adapter = printed_path(r"adapter: (\S+)", out)
    assert (adapter / "adapter_config.json").is_file()
    assert (adapter.parent / "metrics.jsonl").is_file() and (adapter.parent / "run.json").is_file()


@check("grpo_math.py")
def _(out: str, tmp: Path) -> None:
    check_training("grpo", out)


@check("ppo_guess_number.py")
def _(out: str, tmp: Path) -> None:
    check_training("ppo", out)


@check("sft_kept_trajectories.py")
def _(out: str, tmp: Path) -> None:
    from gym_tinker.trajectory import load_jsonl

    kept = printed_path(r"kept 4 \(keep=all\) in (\S+)", out)
    assert "sampled 4 episodes" in out and len(load_jsonl(kept)) == 4
    assert "sft: 4 sequences, 2 steps" in out
    adapter = printed_path(r"adapter in (\S+)", out)
    assert (adapter / "adapter_config.json").is_file()


@check("shared_cluster.py")
def _(out: str, tmp: Path) -> None:
    assert "final states: {1: 'succeeded', 2: 'succeeded'}" in out
    alice, bob = out.split("job 1 (alice, priority 0):")[1].split("job 2 (bob, priority 10):")
    states = re.findall(r"-> (\w+)", alice)
    assert states == ["queued", "running", "preempted", "queued", "running", "succeeded"], alice
    assert re.findall(r"-> (\w+)", bob.split("alice's log")[0]) == ["queued", "running", "succeeded"]
    assert re.search(r"resuming at step \d+ \(attempt 2\)", out)
    assert "alice: 1 preemption(s), 2 attempts, sum 210 (expected 210" in out


@check("existing_cluster.py")
def _(out: str, tmp: Path) -> None:
    pids = re.search(r"dask scheduler \(pid (\d+)\) at tcp://\S+ and a worker \(pid (\d+)\)", out)
    assert pids is not None, out
    assert "resources {'GPU': 1.0}" in out
    assert re.search(r"job 1 succeeded on tcp://\S+: sum 15 over 5 steps", out)
    assert "stopped the local scheduler and worker" in out
    assert all(process_gone(int(pid)) for pid in pids.groups())


@check("serve_adapter.py")
def _(out: str, tmp: Path) -> None:
    assert (printed_path(r"trained a 2-step GRPO adapter: (\S+)", out) / "adapter_config.json").is_file()
    pid = re.search(r"gym-tinker serve \(pid (\d+)\) is up at http://127\.0\.0\.1:\d+/v1", out)
    assert pid is not None, out
    assert "models: ['tiny-random', 'math']" in out
    assert re.search(r"^math: '.*'  \(\d+ tokens\)$", out, re.MULTILINE), out
    assert "server stopped" in out and process_gone(int(pid[1]))


def test_every_example_is_run_by_a_test():
    assert set(SCRIPTS) >= set(TESTED_ELSEWHERE) | set(CHECKS)
    untested = sorted(set(SCRIPTS) - set(TESTED_ELSEWHERE) - set(CHECKS))
    assert not untested, f"add a --quick mode and a CHECKS entry in {__file__} for {untested}"
    for script, module in TESTED_ELSEWHERE.items():
        assert script in (ROOT / module).read_text(encoding="utf-8"), f"{module} does not run {script}"


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s not in TESTED_ELSEWHERE])
def test_example_documents_how_to_run_it(script):
    source = (EXAMPLES / script).read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source))
    assert docstring, f"{script} needs a module docstring saying what it shows"
    assert f"python examples/{script}" in docstring and f"python examples/{script} --quick" in docstring
    assert 'if __name__ == "__main__":' in source and '"--quick"' in source


@pytest.mark.timeout(600)
@pytest.mark.parametrize("script", [s for s in SCRIPTS if s not in TESTED_ELSEWHERE])
def test_example_runs_in_its_fast_mode(script, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GYM_TINKER_ADDRESS"}
    env.update(
        COLUMNS="200",
        TMPDIR=str(tmp_path),  # the examples' default run folders and logs land here
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    )
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--quick"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    if script not in CHECKS:
        pytest.fail(
            f"{script} ran; now add a CHECKS entry in {__file__} saying what its --quick output shows"
        )
    CHECKS[script](done.stdout, tmp_path)
