"""Sandbox throughput: 200 short programs on warm workers, against bare subprocesses and the
one-sandbox-per-program path, in the same run.

Target (issue 27): at least 90% of bare Python's programs/s, isolation on (issue 5's floor was 20
programs/s on 2 cores). The baseline runs the same programs as plain `python3 -I -S` subprocesses
with the same parallelism; the old path (`Sandbox(warm=False)`: one bubblewrap sandbox and one
interpreter per program) runs them too. The load on a shared machine drifts, so the three take
turns: the programs are split into rounds, and each round runs its share under all three, in an
order that rotates from round to round. Each rate is programs over the time that method spent.

    .venv/bin/python bench/sandbox_throughput.py [--programs 200] [--jobs 2] [--rounds 10]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, write_result

import pipeline  # noqa: F401
from pipeline.core.sandbox.runner import Sandbox, _python


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
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    sources = programs(args.programs)
    warm, old = Sandbox(), Sandbox(warm=False)

    def run_bare(chunk: list[str]) -> list[str]:
        with ThreadPoolExecutor(args.jobs) as pool:
            return list(pool.map(bare, chunk))

    def run_sandbox(box: Sandbox) -> Callable[[list[str]], list[str]]:
        def run(chunk: list[str]) -> list[str]:
            results = box.run_many(chunk, jobs=args.jobs)
            assert all(r.ok for r in results), [r for r in results if not r.ok][:2]
            return [r.stdout for r in results]

        return run

    methods: dict[str, Callable[[list[str]], list[str]]] = {
        "warm": run_sandbox(warm),
        "old": run_sandbox(old),
        "bare": run_bare,
    }
    for run in methods.values():
        run(sources[:4])  # warm-up: isolation probe, the warm workers' start, page cache
    assert warm.warm, f"the warm path is off here: {warm.warm_failure}"

    spent = dict.fromkeys(methods, 0.0)
    outputs: dict[str, list[str]] = {name: [] for name in methods}
    loads = [(load_average() or [0.0])[0]]
    size = -(-len(sources) // args.rounds)
    names = list(methods)
    for number in range(args.rounds):
        chunk = sources[number * size : (number + 1) * size]
        for name in names[number % 3 :] + names[: number % 3]:
            started = time.perf_counter()
            outputs[name] += methods[name](chunk)
            spent[name] += time.perf_counter() - started
        loads.append((load_average() or [0.0])[0])
    assert outputs["warm"] == outputs["bare"] == outputs["old"], "the three printed different outputs"
    warm.close()

    rate = {name: round(args.programs / seconds, 2) for name, seconds in spent.items()}
    share = rate["warm"] / rate["bare"]
    write_result(
        "sandbox_throughput",
        metric="programs per second, isolation on (warm workers)",
        value=rate["warm"],
        unit="programs/s",
        target=">= 90% of bare Python's programs/s in the same run",
        baseline={
            "what": "the same programs as bare `python3 -I -S` subprocesses, same parallelism, same run, "
            "interleaved rounds; and the one-sandbox-per-program path (Sandbox(warm=False))",
            "programs_per_s": rate["bare"],
            "old_path_programs_per_s": rate["old"],
            "share_of_bare": round(share, 3),
            "warm_over_old": round(rate["warm"] / rate["old"], 2),
        },
        isolation=warm.isolation,
        programs=args.programs,
        jobs=args.jobs,
        rounds=args.rounds,
        load_1m_during_run=[min(loads), max(loads)],
        met=share >= 0.9,
    )


if __name__ == "__main__":
    main()
