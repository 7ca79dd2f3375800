"""The test suite's wall time, as `make test` runs it (pytest-xdist, whole files per worker), against
the issue's targets: the full suite within 10 minutes, the unit tier within 2, on 2 cores.

    .venv/bin/python bench/test_suite.py [--tier all|unit] [--workers N]

Runs pytest in this checkout with the Makefile's flags and a JUnit report, then writes
bench/results/test_suite_<tier>.json. Baseline, same run: the serial time, the sum of every test's
own duration in the report (setup, call and teardown, which pytest-xdist measures per test as a
serial run would) plus the collection, i.e. what the same tests cost one after another. The busiest
files and the CPU the run used (its own and its children's) go in too, to show what bounds it.
Run it on a quiet machine: the tests share the two cores with whatever else runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, write_result

REPO = Path(__file__).resolve().parents[1]
TARGET_S = {"all": 600.0, "unit": 120.0}


def per_test_seconds(report: Path) -> dict[str, float]:
    """Each test case's duration (classname::name) from a JUnit XML report."""
    cases = ET.parse(report).getroot().iter("testcase")
    return {f"{case.get('classname')}::{case.get('name')}": float(case.get("time") or 0.0) for case in cases}


def by_file(seconds: dict[str, float]) -> list[tuple[str, float]]:
    files: dict[str, float] = defaultdict(float)
    for test, took in seconds.items():
        module = test.split("::", 1)[0]
        files[module.replace(".", "/") + ".py"] += took
    return sorted(files.items(), key=lambda kv: -kv[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tier", choices=("all", "unit"), default="all")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("TEST_WORKERS", "4")))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-tests-") as tmp:
        report = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
        command += ["-n", str(args.workers), "--dist", "loadfile", "--no-loadscope-reorder", f"--basetemp={tmp}/t"]
        if args.tier == "unit":
            command += ["-m", "not slow"]
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
        load_before = load_average()
        started = time.monotonic()
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}")
        seconds = per_test_seconds(report)

    serial = sum(seconds.values())
    cpu = usage.ru_utime + usage.ru_stime
    write_result(
        f"test_suite_{args.tier}",
        metric=f"pytest wall time, {'the whole suite' if args.tier == 'all' else 'the unit tier (-m not slow)'}",
        value=round(wall, 1),
        unit="s",
        target=f"<= {TARGET_S[args.tier]:.0f} s on 2 cores",
        baseline={
            "description": "the same tests one after another: the sum of every test's duration in this run's report",
            "serial_s": round(serial, 1),
        },
        speedup=round(serial / wall, 2) if wall else None,
        tests=len(seconds),
        workers=args.workers,
        cpu_s=round(cpu, 1),
        cpu_bound_s=round(cpu / (os.cpu_count() or 1), 1),  # the wall time if every core were busy throughout
        busiest_files=[{"file": name, "s": round(took, 1)} for name, took in by_file(seconds)[:12]],
        load_avg_before=load_before,
        load_avg_after=load_average(),
        summary=done.stdout.strip().splitlines()[-1],
    )


if __name__ == "__main__":
    main()
