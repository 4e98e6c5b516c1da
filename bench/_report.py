"""What every bench script's JSON report shares: the machine it ran on, and writing the file."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any


def machine(load_before: float, load_after: float) -> dict[str, Any]:
    """Platform, CPU count, Python version, and the 1-minute load average before and after the run."""
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1m": [round(load_before, 2), round(load_after, 2)],
    }


def write_report(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` as indented JSON to ``path`` (creating its folder) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")
