"""Runs untrusted Python code in a separate, isolated process with hard resource limits.

Layers, all applied on every run:

* **bubblewrap** (when a working ``bwrap`` is on ``PATH``): no network, read-only filesystem, a small
  private ``/tmp``, own PID/IPC/UTS namespaces, an empty environment (only ``PATH``, ``LANG`` and
  ``HOME``). Without it, code runs as a plain child process and a warning is logged once
  (:attr:`SandboxResult.isolated` is then ``False``).
* **rlimits** in the child: CPU seconds, address space, processes, file size, open files.
* **a pids cgroup** where one is writable, because root ignores ``RLIMIT_NPROC``.
* **a wall-clock timeout** that kills the whole process tree, and **capped output** (reading
  stops and the process is killed once the cap is reached; nothing big is ever buffered).
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gym_tinker.tools._capped_io import CapturedStreams, pump
from gym_tinker.tools._pids_cgroup import PidsCgroup, pids_cgroup_root

__all__ = ["SandboxLimits", "SandboxResult", "bwrap_path", "process_limit_enforced", "run_python"]

_log = logging.getLogger(__name__)
_warned_unisolated: list[bool] = []
_warned_nproc: list[bool] = []
_BWRAP_WORKS: dict[str, str | None] = {}
_SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
_MB = 2**20
# The real interpreter behind a virtualenv's `python` link: a venv (or tox env) that lives under
# /tmp would be hidden by the sandbox's private /tmp. Sandboxed code needs only the stdlib.
_INTERPRETER = os.path.realpath(sys.executable)


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one sandboxed run. Every field must be positive.

    Example:
        >>> SandboxLimits(wall_seconds=1.0).cpu_seconds
        4
        >>> SandboxLimits(memory_bytes=0)
        Traceback (most recent call last):
        ...
        ValueError: SandboxLimits.memory_bytes must be positive, got 0
    """

    wall_seconds: float = 5.0
    """Wall-clock time before the whole process tree is killed."""
    cpu_seconds: int = 4
    """CPU time per process (``RLIMIT_CPU``)."""
    memory_bytes: int = 512 * _MB
    """Address space per process (``RLIMIT_AS``); allocations beyond it fail."""
    max_processes: int = 64
    """Processes and threads (``RLIMIT_NPROC`` and, where available, a pids cgroup)."""
    max_output_bytes: int = 1 * _MB
    """Bytes kept from each of stdout and stderr; more kills the run."""
    max_file_bytes: int = 1 * _MB
    """Largest file the code may write (``RLIMIT_FSIZE``)."""
    max_open_files: int = 64
    """File descriptors (``RLIMIT_NOFILE``)."""
    tmp_bytes: int = 16 * _MB
    """Size of the private ``/tmp`` under bubblewrap."""

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {value!r}")


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed run produced.

    Example:
        >>> r = run_python("print(6 * 7)")
        >>> r.stdout, r.exit_code, r.ok
        ('42\\n', 0, True)
    """

    stdout: str
    """Standard output (at most ``max_output_bytes``, decoded as UTF-8 with replacement)."""
    stderr: str
    """Standard error, likewise capped."""
    exit_code: int | None
    """The process's exit status; negative for a signal (as in :mod:`subprocess`)."""
    timed_out: bool = False
    """The wall-clock limit was reached and the process tree was killed."""
    stdout_truncated: bool = False
    """Standard output exceeded the cap; the run was killed."""
    stderr_truncated: bool = False
    """Standard error exceeded the cap; the run was killed."""
    error: str | None = None
    """A short reason when the run did not finish cleanly, e.g. ``"timed out after 5 s"``."""
    isolated: bool = True
    """Whether bubblewrap isolation was used (``False`` means rlimits and timeout only)."""
    duration: float = field(default=0.0, compare=False)
    """Wall-clock seconds the run took."""

    @property
    def ok(self) -> bool:
        """The code ran to completion with exit status 0."""
        return self.exit_code == 0 and self.error is None

    def as_text(self, *, include_error: bool = True) -> str:
        """A compact rendering for a tool result: stdout, then stderr and error if any.

        Example:
            >>> print(run_python("print('hi'); 1/0").as_text().splitlines()[-1])
            error: exit code 1
        """
        parts = [self.stdout.rstrip("\n")] if self.stdout else []
        if self.stdout_truncated:
            parts.append("[stdout truncated]")
        if self.stderr:
            parts.append(
                "stderr:\n"
                + self.stderr.rstrip("\n")
                + ("\n[stderr truncated]" if self.stderr_truncated else "")
            )
        if self.error and include_error:
            parts.append(f"error: {self.error}")
        return "\n".join(parts) if parts else "(no output)"


def bwrap_path() -> str | None:
    """Where a *working* ``bwrap`` is, or ``None`` when bubblewrap is missing or cannot sandbox here.

    Installed is not enough: in some containers namespaces are not permitted and ``bwrap`` fails,
    so it is tried once (per ``bwrap`` found) with the flags the sandbox uses.

    Example:
        >>> bwrap_path() is None or bwrap_path().endswith("bwrap")
        True
    """
    found = shutil.which("bwrap")
    if found is None:
        return None
    if found not in _BWRAP_WORKS:
        _BWRAP_WORKS[found] = _probe_bwrap(found)
    return found if _BWRAP_WORKS[found] is None else None


def process_limit_enforced() -> bool:
    """Whether ``max_processes`` binds here: a pids cgroup is writable, or we are not root.

    ``RLIMIT_NPROC`` does not apply to root, so as root without a writable pids cgroup a fork
    bomb is stopped only by the CPU and wall-clock limits (a warning says so once).

    Example:
        >>> isinstance(process_limit_enforced(), bool)
        True
    """
    return pids_cgroup_root() is not None or os.geteuid() != 0


def _probe_bwrap(bwrap: str) -> str | None:
    """``None`` if ``bwrap`` can run the sandbox here, else why not."""
    argv = _bwrap_argv(bwrap, SandboxLimits(), None)
    try:
        probe = subprocess.run(argv, capture_output=True, timeout=30, env={})
    except (OSError, subprocess.TimeoutExpired) as err:
        reason = f"{type(err).__name__}: {err}"
    else:
        if probe.returncode == 0:
            return None
        reason = probe.stderr.decode("utf-8", "replace").strip()[:300] or f"exit code {probe.returncode}"
    _log.warning("bubblewrap at %s cannot create a sandbox here (%s); isolation is reduced", bwrap, reason)
    return reason


def _bwrap_argv(bwrap: str, limits: SandboxLimits, script: Path | None) -> list[str]:
    """The bubblewrap command running ``script`` (or, for the probe, an empty program)."""
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/"]
    argv += ["--size", str(limits.tmp_bytes), "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    if script is not None:
        argv += ["--ro-bind", str(script), "/tmp/main.py"]
    argv += ["--chdir", "/tmp", "--clearenv"]
    for key, value in _SANDBOX_ENV.items():
        argv += ["--setenv", key, value]
    program = ["/tmp/main.py"] if script is not None else ["-c", "pass"]
    return [*argv, _INTERPRETER, "-I", *program]


def _child_setup(limits: SandboxLimits, cgroup: PidsCgroup | None) -> Callable[[], None]:
    """The ``preexec_fn``: runs in the child between fork and exec, so limits bind the code only."""

    def setup() -> None:
        os.setsid()  # own process group: the timeout kills the whole tree with killpg
        if cgroup is not None:
            cgroup.join()
        cpu = int(limits.cpu_seconds)
        # Soft CPU limit sends SIGXCPU, the hard one a second later SIGKILL.
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.max_file_bytes, limits.max_file_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.max_open_files, limits.max_open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return setup


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _describe(result: CapturedStreams, code: int | None, limits: SandboxLimits, stderr: str) -> str | None:
    if result.timed_out:
        return f"timed out after {limits.wall_seconds:g} s"
    if result.out_truncated or result.err_truncated:
        return f"killed: output limit of {limits.max_output_bytes} bytes exceeded"
    last_line = stderr.rstrip().rsplit("\n", 1)[-1]
    if last_line.startswith("MemoryError"):
        return f"killed: memory limit of {limits.memory_bytes // _MB} MB exceeded"
    if code is None or code == 0:
        return None
    if code in (-signal.SIGXCPU, -signal.SIGKILL) and "Traceback" not in stderr:
        return f"killed: CPU time limit of {limits.cpu_seconds} s exceeded"
    if code < 0:
        return (
            f"killed by signal {signal.Signals(-code).name}"
            if -code in signal.valid_signals()
            else f"killed by signal {-code}"
        )
    if last_line.startswith("OSError: [Errno 27]"):
        return f"killed: file size limit of {limits.max_file_bytes} bytes exceeded"
    return f"exit code {code}"


def _exit_code(raw: int | None, isolated: bool) -> int | None:
    # bubblewrap reports a child killed by signal N as exit status 128 + N.
    if isolated and raw is not None and raw > 128 and (raw - 128) in signal.valid_signals():
        return -(raw - 128)
    return raw


def run_python(
    code: str,
    *,
    stdin: str = "",
    limits: SandboxLimits | None = None,
    use_bwrap: bool | None = None,
) -> SandboxResult:
    """Run ``code`` as a Python script in a sandboxed child process.

    Args:
        code: Python source, run as ``__main__`` with the interpreter running this function.
        stdin: Text fed to the script's standard input.
        limits: Resource limits; defaults to :class:`SandboxLimits()`.
        use_bwrap: ``None`` uses bubblewrap when installed; ``True`` requires it (``RuntimeError``
            otherwise); ``False`` runs with rlimits and timeout only.

    Returns:
        A :class:`SandboxResult`; failures of the code (exceptions, limits) are reported in it,
        never raised.

    Example:
        >>> run_python("print(input()[::-1])", stdin="stressed").stdout
        'desserts\\n'
        >>> run_python("while True: pass", limits=SandboxLimits(wall_seconds=0.5)).error
        'timed out after 0.5 s'
    """
    if not isinstance(code, str):
        raise TypeError(f"run_python expects the code as a str, got {type(code).__name__}")
    if not isinstance(stdin, str):
        raise TypeError(f"run_python expects stdin as a str, got {type(stdin).__name__}")
    limits = limits or SandboxLimits()
    bwrap = bwrap_path() if use_bwrap is not False else None
    if use_bwrap and bwrap is None:
        raise RuntimeError(
            "use_bwrap=True but no working `bwrap` was found on PATH; install bubblewrap "
            "(apt-get install bubblewrap) on a host that permits user namespaces"
        )
    isolated = bwrap is not None
    if not isolated and not _warned_unisolated:
        _warned_unisolated.append(True)
        _log.warning(
            "Sandboxed code runs with rlimits and a timeout only, without bubblewrap's filesystem, "
            "network and environment isolation (%s).",
            "use_bwrap=False" if use_bwrap is False else "bubblewrap not available",
        )
    cgroup_root = pids_cgroup_root()
    if not process_limit_enforced() and not _warned_nproc:
        _warned_nproc.append(True)
        _log.warning(
            "Running as root without a writable pids cgroup: the sandbox's process limit cannot be "
            "enforced (only CPU and wall-clock limits stop a fork bomb). Run as a regular user."
        )
    cgroup = PidsCgroup(cgroup_root, limits.max_processes) if cgroup_root is not None else None
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gym-tinker-sandbox-") as workdir:
        script = Path(workdir) / "main.py"
        script.write_text(code, encoding="utf-8", errors="surrogatepass")
        if isolated:
            assert bwrap is not None
            argv, cwd = _bwrap_argv(bwrap, limits, script), None
        else:
            argv, cwd = [_INTERPRETER, "-I", str(script)], workdir
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=dict(_SANDBOX_ENV, HOME=workdir) if not isolated else {},
                preexec_fn=_child_setup(limits, cgroup),
                close_fds=True,
            )
        except BaseException:
            if cgroup is not None:
                cgroup.destroy()
            raise
        try:
            streams = pump(
                proc, stdin.encode("utf-8", errors="replace"), limits.wall_seconds, limits.max_output_bytes
            )
        finally:
            if proc.poll() is None:
                _kill_tree(proc)
            raw = proc.wait()
            _kill_tree(proc)  # descendants that outlived the main process
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None and not pipe.closed:
                    pipe.close()
            if cgroup is not None:
                cgroup.destroy()
    stderr = streams.err.decode("utf-8", errors="replace")
    exit_code = _exit_code(raw, isolated)
    return SandboxResult(
        stdout=streams.out.decode("utf-8", errors="replace"),
        stderr=stderr,
        exit_code=exit_code,
        timed_out=streams.timed_out,
        stdout_truncated=streams.out_truncated,
        stderr_truncated=streams.err_truncated,
        error=_describe(streams, exit_code, limits, stderr),
        isolated=isolated,
        duration=time.monotonic() - start,
    )
