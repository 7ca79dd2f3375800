"""The coin flip benchmark's one declaration: the registry reads it (PIPELINE_BENCHMARKS=coinflip.benchmark)."""

from __future__ import annotations

from coinflip.replay import replays
from coinflip.schemas import GamesSchema
from pipeline.core.run import Benchmark

BENCHMARK = Benchmark(
    name="coinflip",
    title="Coin flip",
    package="coinflip",
    outputs=("games", "games.parquet", "summary.md"),
    tables={"games.parquet": GamesSchema},
    replays=replays,
    headline=("wins",),
    plays_models=False,  # scripted coins: the run plan shows no calls
)
