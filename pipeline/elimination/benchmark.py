"""The Elimination Game as the registry sees it: 8 seats of public and private talk, secret votes
and a jury (docs/elimination.md)."""

from __future__ import annotations

from pipeline.core.run import Benchmark
from pipeline.elimination.replay import replays
from pipeline.elimination.schemas import (
    EliminationsSchema,
    FinalRanksSchema,
    GamesSchema,
    MessagesSchema,
    PairsSchema,
    SeatsSchema,
    VotesSchema,
)

BENCHMARK = Benchmark(
    name="elimination",
    title="Elimination Game",
    package="pipeline.elimination",
    outputs=(
        "games",
        "tables",
        "leaderboard.parquet",
        "leaderboard.csv",
        "import_report.json",
        "calls.parquet",
        "plots",
    ),
    tables={
        "tables/games.parquet": GamesSchema,
        "tables/seats.parquet": SeatsSchema,
        "tables/messages.parquet": MessagesSchema,
        "tables/votes.parquet": VotesSchema,
        "tables/eliminations.parquet": EliminationsSchema,
        "tables/pairs.parquet": PairsSchema,
        "tables/final_ranks.parquet": FinalRanksSchema,
    },
    replays=replays,
    headline=("games", "wins", "avg_points"),
    order=30,
    estimators="pipeline.elimination.estimators",
)
