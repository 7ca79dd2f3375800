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

from pipeline.cpu import pin_cpu_kernels

# the same kernels as every `python -m pipeline` process (pipeline/cpu.py), set before a benchmark
# imports numpy or torch: a benchmark measures what the pipeline runs
pin_cpu_kernels()

RESULTS = Path(__file__).resolve().parent / "results"


def machine(device: str | None = None) -> dict[str, Any]:
    """What the numbers depend on. The CPU here is shared, so the load average goes in too."""
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
        info["torch_threads"] = torch.get_num_threads()
        on_gpu = torch.cuda.is_available() and (device is None or device.startswith("cuda"))
        gpu_device = device if device and device.startswith("cuda") else 0
        info["gpu"] = torch.cuda.get_device_name(gpu_device) if on_gpu else None
    except ImportError:
        pass
    if device is not None:
        info["device"] = device  # where the measured work ran
    return info


def run_conditions(load_before: list[float] | None) -> dict[str, Any]:
    """How busy the machine was around a run (started at `load_before`): the threads this process may
    use, the load average before and after, and the process's nice value."""
    return {
        "threads": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_avg_before": load_before,
        "load_avg_after": load_average(),
        "pid_nice": os.nice(0),
    }


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


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
    target: Any,
    baseline: Any,
    device: str | None = None,
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
        "machine": machine(device),
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
