"""What the leaderboard reads from the benchmarks' results folders: each registered benchmark's
metrics.json (as the metrics record, pipeline/core/artifacts/metrics_record.py) and declared tables
(pipeline/core/run/registry.py), hashed into the version stamp."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.artifacts.metrics_record import read_metrics
from pipeline.core.artifacts.results import BenchmarkResults
from pipeline.core.run import Benchmark, benchmark
from pipeline.leaderboard.combine import BenchmarkBoard, benchmark_board
from pipeline.leaderboard.config import LeaderboardParams, headline_keys


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
    """The benchmark's results folder with its metrics.json read as the metrics record (a file that is
    not one stops with a MetricsError naming the file, the model and the key)."""
    loaded = BenchmarkResults(name=bench.name, folder=results / bench.name, metrics=None, tables=bench.tables)
    metrics_path = loaded.path("metrics.json")
    if metrics_path is not None:
        loaded.metrics = read_metrics(metrics_path)
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


def benchmark_boards(params: LeaderboardParams, benches: dict[str, BenchmarkResults]) -> list[BenchmarkBoard]:
    """Each loaded benchmark's ratings and headline metrics, from its metrics record, in order."""
    return [
        benchmark_board(name, bench.metrics, headline_keys(params, name), params.interval_z)
        for name, bench in benches.items()
        if bench.metrics is not None
    ]
