"""Sandbox throughput: 200 short programs with isolation on, against bare subprocesses.

Target (issue 5): at least 20 programs/s on 2 cores. The baseline runs the same programs as plain
`python3 -I -S` subprocesses with the same parallelism, in the same run, so the ratio is the cost
of isolation and limits.

    .venv/bin/python bench/sandbox_throughput.py [--programs 200] [--jobs 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result  # noqa: E402

import pipeline  # noqa: E402,F401
from pipeline.core.sandbox import Sandbox, _python  # noqa: E402


def programs(count: int) -> list[str]:
    # short code-output-prediction style programs, as SKATE questions are
    return [
        f"xs = [i * {k % 7 + 1} for i in range({k % 11 + 3})]\n"
        f"d = {{str(x): x % 3 for x in xs}}\n"
        f"print(sorted(d.items())[:3], sum(xs) // {k % 5 + 1})\n"
        for k in range(count)
    ]


def bare(source: str) -> str:
    return subprocess.run([_python(), "-I", "-S", "-c", source], capture_output=True, text=True, timeout=30).stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sources = programs(args.programs)
    sandbox = Sandbox()
    sandbox.run_many(sources[:4], jobs=args.jobs)  # warm-up: isolation probe, page cache

    started = time.perf_counter()
    results = sandbox.run_many(sources, jobs=args.jobs)
    isolated_s = time.perf_counter() - started
    assert all(r.ok for r in results), [r for r in results if not r.ok][:2]

    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        plain = list(pool.map(bare, sources))
    bare_s = time.perf_counter() - started
    assert plain == [r.stdout for r in results], "isolated and bare runs printed different outputs"

    rate = args.programs / isolated_s
    write_result(
        "sandbox_throughput",
        metric="programs per second, isolation on",
        value=round(rate, 2),
        unit="programs/s",
        target=">= 20 programs/s on 2 cores",
        baseline={
            "what": "the same programs as bare `python3 -I -S` subprocesses, same parallelism",
            "programs_per_s": round(args.programs / bare_s, 2),
            "isolation_overhead_ms_per_program": round((isolated_s - bare_s) / args.programs * 1000 * args.jobs, 1),
        },
        isolation=sandbox.isolation,
        programs=args.programs,
        jobs=args.jobs,
        met=rate >= 20,
    )


if __name__ == "__main__":
    main()
