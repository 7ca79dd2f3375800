"""The coin flip benchmark's one declaration: the registry reads it (PIPELINE_BENCHMARKS=coinflip.benchmark).

No cli.py and no rules.smk: the core builds `python -m pipeline coinflip schedule|play|rate|report`
from the verbs below, the standard rules from `writes`, and its dvc.yaml stage from `outputs`.
"""

from __future__ import annotations

from coinflip.play import play, rate, report, schedule
from coinflip.replay import replays
from coinflip.schemas import GamesSchema
from pipeline.core.run.registry import Benchmark

BENCHMARK = Benchmark(
    name="coinflip",
    title="Coin flip",
    package="coinflip",
    schedule=schedule,
    play=play,
    rate=rate,
    report=report,
    writes={
        "play": ("games/{game_id}.json",),  # one game's files, named by its id
        "rate": ("games.parquet", "metrics.json"),
        "report": ("summary.md",),
    },
    outputs=("games", "games.parquet", "summary.md"),  # what DVC keeps (besides metrics.json)
    tables={"games.parquet": GamesSchema},
    replays=replays,
    headline=("wins",),
    plays_models=False,  # scripted coins: the run plan shows no calls
)
