"""Feeds a child's stdin and reads its stdout/stderr with a deadline and a byte cap (never buffers more)."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from dataclasses import dataclass, field

__all__ = ["CapturedStreams", "pump"]

_POLL_SECONDS = 0.05
_DRAIN_SECONDS = 0.2


@dataclass
class CapturedStreams:
    """What :func:`pump` read."""

    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    out_truncated: bool = False
    err_truncated: bool = False
    timed_out: bool = False


def pump(proc: subprocess.Popen[bytes], stdin: bytes, wall_seconds: float, cap: int) -> CapturedStreams:
    """Feed stdin and read stdout/stderr until exit, the deadline, or the output cap."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    streams = CapturedStreams()
    deadline = time.monotonic() + wall_seconds
    sel = selectors.DefaultSelector()
    targets = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"}
    for stream in (proc.stdout, proc.stderr):
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ)
    pending = memoryview(stdin)
    if pending:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    exited = False
    try:
        while targets:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                streams.timed_out = not exited
                return streams
            if not exited and proc.poll() is not None:
                # A detached descendant may hold the pipes open forever: drain briefly, then stop.
                exited = True
                deadline = min(deadline, time.monotonic() + _DRAIN_SECONDS)
            for key, _ in sel.select(timeout=min(remaining, _POLL_SECONDS)):
                fd = key.fd
                if key.fileobj is proc.stdin:
                    try:
                        pending = pending[os.write(fd, pending[:65536]) :]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    del targets[fd]
                    continue
                buf = streams.out if targets[fd] == "out" else streams.err
                room = cap - len(buf)
                buf += chunk[: max(room, 0)]
                if len(chunk) > room:
                    if targets[fd] == "out":
                        streams.out_truncated = True
                    else:
                        streams.err_truncated = True
                    return streams
        return streams
    finally:
        sel.close()
