"""The sandbox contains escape attempts and runaway code, with and without bubblewrap."""

from __future__ import annotations

import ast
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from gym_tinker.tools import sandbox
from gym_tinker.tools.function_tests import run_function_tests
from gym_tinker.tools.sandbox import SandboxLimits, bwrap_path, run_python

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="no working bubblewrap (bwrap) here")
needs_process_limit = pytest.mark.skipif(
    not sandbox.process_limit_enforced(), reason="root without a writable pids cgroup: no process limit"
)
FAST = SandboxLimits(wall_seconds=2.0, cpu_seconds=2)


def _host_still_works() -> None:
    out = subprocess.run([sys.executable, "-c", "print(2 + 2)"], capture_output=True, text=True, timeout=10)
    assert out.stdout == "4\n"


def test_runs_code_with_stdin_and_reports_exit_code():
    result = run_python("import sys\nprint(sys.stdin.read().upper())\nsys.exit(3)", stdin="abc", limits=FAST)
    assert result.stdout == "ABC\n"
    assert result.exit_code == 3
    assert result.error == "exit code 3"
    assert not result.ok


def test_exception_is_reported_in_stderr_not_raised():
    result = run_python("raise ValueError('bad thing')", limits=FAST)
    assert result.exit_code == 1
    assert "ValueError: bad thing" in result.stderr
    assert "error: exit code 1" in result.as_text()


@needs_bwrap
def test_network_is_unreachable_even_on_loopback():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        code = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\nprint('connected')"
        result = run_python(code, limits=FAST)
        assert result.isolated
        assert "connected" not in result.stdout
        assert result.exit_code != 0
        assert "ConnectionRefusedError" in result.stderr or "OSError" in result.stderr
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever reached the host's listener


@needs_bwrap
def test_cannot_write_outside_tmp_and_tmp_is_private():
    host_dir = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        target = host_dir / "escaped.txt"
        result = run_python(f"open({str(target)!r}, 'w').write('x')", limits=FAST)
        assert result.exit_code != 0
        assert "Read-only file system" in result.stderr
        assert not target.exists()
        marker = f"gym-tinker-{uuid.uuid4().hex}"
        inside = run_python(
            f"open('/tmp/{marker}', 'w').write('x'); print(open('/tmp/{marker}').read())", limits=FAST
        )
        assert inside.stdout == "x\n"
        assert not Path("/tmp", marker).exists()
    finally:
        for child in host_dir.iterdir():
            child.unlink()
        host_dir.rmdir()


@pytest.mark.parametrize("use_bwrap", [None, False])
def test_parent_environment_is_not_visible(monkeypatch, use_bwrap):
    secret = uuid.uuid4().hex
    monkeypatch.setenv("GYM_TINKER_SECRET", secret)
    result = run_python("import os\nprint(sorted(os.environ.items()))", limits=FAST, use_bwrap=use_bwrap)
    assert result.ok
    assert secret not in result.stdout
    assert "GYM_TINKER_SECRET" not in result.stdout
    keys = {key for key, _ in ast.literal_eval(result.stdout)}
    assert keys <= {"PATH", "LANG", "HOME", "PWD"}


@needs_process_limit
@pytest.mark.parametrize("use_bwrap", [None, False])
def test_process_count_is_capped(use_bwrap):
    # Spawns long sleepers until the limit stops it; the host must see none of them afterwards.
    stamp = f"{31 + uuid.uuid4().int % 1000 / 1000:.3f}"
    code = (
        "import subprocess\nprocs = []\ntry:\n    for _ in range(500):\n"
        f"        procs.append(subprocess.Popen(['sleep', '{stamp}']))\n"
        "except OSError as err:\n    print('stopped', len(procs), type(err).__name__)\n"
    )
    limits = SandboxLimits(wall_seconds=5.0, cpu_seconds=4, max_processes=16)
    result = run_python(code, limits=limits, use_bwrap=use_bwrap)
    words = result.stdout.split()
    assert words[:1] == ["stopped"], result
    assert int(words[1]) < 16
    leftover = subprocess.run(["pgrep", "-f", f"sleep {stamp}"], capture_output=True, text=True)
    assert leftover.stdout == ""
    _host_still_works()


@needs_process_limit
@pytest.mark.parametrize("use_bwrap", [None, False])
def test_fork_bomb_is_contained(use_bwrap):
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    result = run_python(code, limits=SandboxLimits(wall_seconds=1.0, cpu_seconds=1), use_bwrap=use_bwrap)
    assert not result.ok
    assert result.error is not None
    assert result.duration < 5
    _host_still_works()


@pytest.mark.parametrize("use_bwrap", [None, False])
def test_allocating_10_gb_hits_the_memory_limit(use_bwrap):
    result = run_python("x = bytearray(10 * 2**30)\nprint('allocated')", limits=FAST, use_bwrap=use_bwrap)
    assert "allocated" not in result.stdout
    assert result.error == "killed: memory limit of 512 MB exceeded"


@pytest.mark.parametrize("use_bwrap", [None, False])
def test_infinite_loop_times_out(use_bwrap):
    limits = SandboxLimits(wall_seconds=1.0, cpu_seconds=30)
    result = run_python("while True:\n    pass", limits=limits, use_bwrap=use_bwrap)
    assert result.timed_out
    assert result.error == "timed out after 1 s"
    assert result.duration < 3


def test_cpu_limit_kills_a_busy_loop():
    result = run_python("while True:\n    pass", limits=SandboxLimits(wall_seconds=10.0, cpu_seconds=1))
    assert not result.timed_out
    assert result.error == "killed: CPU time limit of 1 s exceeded"


def test_sleeping_code_cannot_outlive_the_wall_clock():
    result = run_python("import time\ntime.sleep(60)", limits=SandboxLimits(wall_seconds=0.5))
    assert result.timed_out
    assert result.duration < 3


@pytest.mark.parametrize("use_bwrap", [None, False])
def test_printing_1_gb_is_capped(use_bwrap):
    code = "import sys\nchunk = 'x' * 2**20\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"
    limits = SandboxLimits(wall_seconds=2.0, max_output_bytes=64 * 1024)
    result = run_python(code, limits=limits, use_bwrap=use_bwrap)
    assert result.stdout_truncated
    assert len(result.stdout) == 64 * 1024
    assert result.error == "killed: output limit of 65536 bytes exceeded"
    assert result.duration < 2


def test_stderr_flood_is_capped_too():
    code = "import sys\nwhile True:\n    sys.stderr.write('e' * 4096)\n"
    result = run_python(code, limits=SandboxLimits(wall_seconds=2.0, max_output_bytes=10_000))
    assert result.stderr_truncated and len(result.stderr) == 10_000
    assert "[stderr truncated]" in result.as_text()


def test_file_size_limit():
    code = "open('big.bin', 'wb').write(b'x' * 3 * 2**20)"
    result = run_python(code, limits=SandboxLimits(wall_seconds=2.0, max_file_bytes=2**20))
    assert result.error == "killed: file size limit of 1048576 bytes exceeded"


def test_without_bwrap_on_path_it_falls_back_and_warns_once(monkeypatch, caplog):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sandbox, "_warned_unisolated", [])
    assert bwrap_path() is None
    with caplog.at_level(logging.WARNING, logger="gym_tinker.tools.sandbox"):
        first = run_python("print('a')", limits=FAST)
        looping = run_python("while True:\n    pass", limits=SandboxLimits(wall_seconds=0.5, cpu_seconds=30))
        hungry = run_python("x = bytearray(10 * 2**30)", limits=FAST)
    assert first.stdout == "a\n" and not first.isolated
    assert looping.timed_out
    assert hungry.error == "killed: memory limit of 512 MB exceeded"
    warnings = [r for r in caplog.records if "isolation" in r.getMessage()]
    assert len(warnings) == 1
    with pytest.raises(RuntimeError, match="bwrap"):
        run_python("print(1)", use_bwrap=True)


def test_limits_and_arguments_are_validated():
    with pytest.raises(ValueError, match="wall_seconds must be positive, got -1"):
        SandboxLimits(wall_seconds=-1)
    with pytest.raises(TypeError, match="code as a str"):
        run_python(b"print(1)")  # type: ignore[arg-type]


@pytest.mark.parametrize("use_bwrap", [None, False])
def test_no_sandbox_processes_or_cgroups_are_left_behind(use_bwrap):
    stamp = f"{41 + uuid.uuid4().int % 1000 / 1000:.3f}"
    code = f"import subprocess\nsubprocess.Popen(['sleep', '{stamp}'], start_new_session=True)"
    assert run_python(code, limits=FAST, use_bwrap=use_bwrap).ok
    # A pid namespace (bwrap) or a pids cgroup takes detached descendants down with the run.
    if (use_bwrap is None and bwrap_path() is not None) or sandbox.pids_cgroup_root() is not None:
        leftover = subprocess.run(["pgrep", "-f", f"sleep {stamp}"], capture_output=True, text=True)
        assert leftover.stdout == ""
    root = sandbox.pids_cgroup_root()
    if root is not None:
        mine = [p.name for p in root.iterdir() if p.name.startswith(f"run-{os.getpid()}-")]
        assert mine == []


# --- hidden function tests -------------------------------------------------------------------


def test_function_tests_pass_fail_and_errors():
    code = "def f(x):\n    if x == 3:\n        raise KeyError(x)\n    return x * 2 if x < 5 else -1\n"
    report = run_function_tests(code, "f", [([1], 2), ([3], 6), ([7], 14), ([2], 4)], limits=FAST)
    assert [o.passed for o in report.outcomes] == [True, False, False, True]
    assert report.outcomes[1].detail == "raised KeyError: 3"
    assert report.outcomes[2].detail == "returned -1, expected 14"
    assert report.pass_rate == 0.5


def test_function_tests_an_infinite_loop_costs_only_the_remaining_tests():
    code = "def f(x):\n    while x > 1:\n        pass\n    return x\n"
    report = run_function_tests(
        code, "f", [([0], 0), ([1], 1), ([2], 2)], limits=SandboxLimits(wall_seconds=1.0)
    )
    assert [o.passed for o in report.outcomes] == [True, True, False]
    assert "timed out" in report.outcomes[2].detail


def test_function_tests_syntax_error_and_missing_function():
    broken = run_function_tests("def f(x) return x", "f", [([1], 1)], limits=FAST)
    assert broken.load_error is not None and broken.load_error.startswith("SyntaxError")
    assert broken.pass_rate == 0.0
    missing = run_function_tests("def g(x):\n    return x", "f", [([1], 1)], limits=FAST)
    assert missing.load_error == "the code does not define a function named f"


def test_function_tests_cannot_be_forged_by_printing_or_tampering():
    # The solution fakes harness records for every index; expected values never enter the sandbox.
    code = (
        "import sys, json\n"
        "main = sys.modules['__main__']\n"
        "main._emit({'i': 0, 'value': json.dumps('forged')})\n"
        'print(\'@@gym-tinker-0000@@{"i": 0, "value": "1"}\')\n'
        "def f(x):\n    return None\n"
    )
    report = run_function_tests(code, "f", [([1], 1), ([2], 4)], limits=FAST)
    assert report.passed == 0


@needs_bwrap
def test_isolation_holds_when_the_virtualenv_lives_under_tmp():
    # The sandbox mounts a private /tmp; a venv (or tox env) under /tmp must not hide the
    # interpreter and silently reduce isolation.
    venv = Path(tempfile.mkdtemp(dir="/tmp")) / "venv"
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        site = next(p for p in sys.path if p.endswith("site-packages"))
        root = str(Path(__file__).resolve().parents[2])
        code = (
            f"import sys; sys.path[:0] = [{root!r}, {site!r}]\n"
            "from gym_tinker.tools.sandbox import run_python\n"
            "r = run_python('print(40 + 2)')\n"
            "print(r.isolated, r.stdout.strip())\n"
        )
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split() == ["True", "42"], done.stdout + done.stderr[-2000:]
    finally:
        shutil.rmtree(venv.parent, ignore_errors=True)
