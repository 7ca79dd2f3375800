"""What the leaderboard reads from the benchmarks' results folders: each registered benchmark's
metrics.json and declared tables (pipeline/core/run/registry.py), hashed into the version stamp."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.core.artifacts.results import BenchmarkResults
from pipeline.core.run import Benchmark, benchmark


def hash_inputs(inputs: BenchmarkResults, bench: Benchmark) -> None:
    """Hash every file the leaderboard may read, so the stamp does not depend on what a run rendered."""
    inputs.path("metrics.json")
    for relative in bench.tables:
        inputs.path(relative)
    inputs.plot_files()
    for pattern in bench.extra_inputs:
        for found in sorted(inputs.folder.glob(pattern)):
            if found.is_file():
                inputs.path(found.relative_to(inputs.folder).as_posix())


def load_benchmark_result(results: Path, bench: Benchmark) -> BenchmarkResults:
    loaded = BenchmarkResults(name=bench.name, folder=results / bench.name, metrics=None, tables=bench.tables)
    metrics_path = loaded.path("metrics.json")
    if metrics_path is not None:
        data = json.loads(metrics_path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            loaded.metrics = {str(k): v for k, v in data.items() if isinstance(v, dict)}
    return loaded


def load_benchmark_results(results: Path, names: list[str]) -> dict[str, BenchmarkResults]:
    """The benchmarks among `names` whose metrics.json exists, in the given order."""
    benches = {}
    for name in names:
        bench = benchmark(name)
        loaded = load_benchmark_result(results, bench)
        if loaded.metrics is not None:
            hash_inputs(loaded, bench)
            benches[name] = loaded
    return benches
