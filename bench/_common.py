"""Shared by the benchmarks under bench/: machine description and the result JSON.

Each benchmark writes bench/results/<name>.json with at least name, metric, value, unit, target,
baseline (what it was compared with, measured in the same run) and machine.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpu": _cpu_model(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def write_result(
    name: str,
    *,
    metric: str,
    value: float,
    unit: str,
    target: str,
    baseline: dict[str, Any],
    **extra: Any,
) -> Path:
    """Write bench/results/<name>.json and print it; `baseline` describes the comparison run."""
    record = {
        "name": name,
        "metric": metric,
        "value": value,
        "unit": unit,
        "target": target,
        "baseline": baseline,
        "machine": machine(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **extra,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    json.dump(record, sys.stdout, indent=2)
    print()
    return path
