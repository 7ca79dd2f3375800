"""The Who is Spy benchmark as the registry sees it: 6 players describe a secret word;
one spy has a different one (docs/whoisspy.md)."""

from __future__ import annotations

from pipeline.core.run import Benchmark
from pipeline.whoisspy.replay import replays
from pipeline.whoisspy.schemas import GamesSchema, SeatsSchema, SpeechesSchema, VotesSchema

BENCHMARK = Benchmark(
    name="whoisspy",
    title="Who is Spy",
    package="pipeline.whoisspy",
    outputs=(
        "games",
        "games.parquet",
        "seats.parquet",
        "speeches.parquet",
        "votes.parquet",
        "leaderboard.parquet",
        "variants.parquet",
        "ratings.parquet",
        "calls.parquet",
        "plots",
    ),
    tables={
        "games.parquet": GamesSchema,
        "seats.parquet": SeatsSchema,
        "speeches.parquet": SpeechesSchema,
        "votes.parquet": VotesSchema,
    },
    replays=replays,
    headline=("games", "points", "win_rate"),
    order=40,
    estimators="pipeline.whoisspy.estimators",
)
