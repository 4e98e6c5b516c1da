"""A per-run pids cgroup, so a fork bomb is capped even for root (who ignores ``RLIMIT_NPROC``)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from pathlib import Path

__all__ = ["PidsCgroup", "pids_cgroup_root"]

_log = logging.getLogger(__name__)
_ROOT_CACHE: list[Path | None] = []


def _mount_points() -> dict[str, Path]:
    """``{"v1:pids": path, "v2": path}`` for the cgroup mounts that can hold a pids limit."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        # mountinfo: "... mount_point options - fstype source super_options"
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        fstype, super_options = tail[0], tail[2].split(",")
        if fstype == "cgroup" and "pids" in super_options:
            found.setdefault("v1:pids", Path(fields[4]))
        elif fstype == "cgroup2":
            found.setdefault("v2", Path(fields[4]))
    return found


def _own_cgroup_paths() -> dict[str, str]:
    """This process's cgroup path per hierarchy, keyed like :func:`_mount_points`."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            hierarchy, controllers, path = line.split(":", 2)
            if hierarchy == "0" and not controllers:
                paths["v2"] = path
            elif "pids" in controllers.split(","):
                paths["v1:pids"] = path
    return paths


def _find_root() -> Path | None:
    mounts, own = _mount_points(), _own_cgroup_paths()
    for key in ("v1:pids", "v2"):
        if key not in mounts or key not in own:
            continue
        base = mounts[key] / own[key].lstrip("/")
        if key == "v2":
            # cgroup v2 only offers pids.max in children when the parent delegates the controller.
            try:
                if "pids" not in (base / "cgroup.subtree_control").read_text().split():
                    continue
            except OSError:
                continue
        root = base / "gym-tinker-sandbox"
        try:
            root.mkdir(exist_ok=True)
            probe = root / f"probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            probe.mkdir()
            usable = (probe / "pids.max").exists()
            probe.rmdir()
        except OSError:
            continue
        if usable:
            return root
    return None


def pids_cgroup_root() -> Path | None:
    """The writable cgroup directory that per-run pids cgroups are created in, or ``None``.

    Found once per process (cgroup v1 ``pids`` hierarchy, or cgroup v2 with the ``pids``
    controller delegated to this process's cgroup).

    Example:
        >>> root = pids_cgroup_root()
        >>> root is None or root.name == "gym-tinker-sandbox"
        True
    """
    if not _ROOT_CACHE:
        _ROOT_CACHE.append(_find_root())
    return _ROOT_CACHE[0]


class PidsCgroup:
    """One cgroup with a ``pids.max`` limit; the sandboxed child joins it before ``exec``.

    Args:
        root: Directory from :func:`pids_cgroup_root`.
        max_pids: Most tasks (processes and threads) the cgroup may hold at once.
    """

    def __init__(self, root: Path, max_pids: int):
        self.path = root / f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(max_pids))
        self._procs_file = str(self.path / "cgroup.procs")

    def join(self) -> None:
        """Move the calling process into the cgroup (called in the child, between fork and exec)."""
        fd = os.open(self._procs_file, os.O_WRONLY)
        try:
            os.write(fd, b"0")  # "0" means the writing process itself
        finally:
            os.close(fd)

    def pids(self) -> list[int]:
        """Processes still in the cgroup."""
        try:
            return [int(p) for p in Path(self._procs_file).read_text().split()]
        except OSError:
            return []

    def destroy(self, timeout: float = 2.0) -> None:
        """Kill everything still inside, then remove the cgroup (best effort, never raises)."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                _log.warning("sandbox cgroup %s still holds processes %s", self.path, pids)
                return
            time.sleep(0.005)
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                # Killed tasks leave the cgroup a moment after their parent reaps them.
                time.sleep(0.01)
        _log.warning("could not remove sandbox cgroup %s", self.path)
