"""The Xent benchmark as the registry sees it: cross-entropy games written in XGL,
scored in bits by a judge language model (docs/xent.md)."""

from __future__ import annotations

from pipeline.core.run import Benchmark
from pipeline.xent.replay import replays
from pipeline.xent.schemas import MovesSchema, RewardsSchema, ScoresSchema, TokenXentsSchema

BENCHMARK = Benchmark(
    name="xent",
    title="Xent",
    package="pipeline.xent",
    outputs=(
        "maps",
        "play",
        "moves.parquet",
        "rewards.parquet",
        "token_xents.parquet",
        "rescore.parquet",
        "round_status.parquet",
        "rescore_check.json",
        "calls.parquet",
        "rounds.parquet",
        "scores.parquet",
        "maps.parquet",
        "ratings.parquet",
        "plots",
    ),
    tables={
        "moves.parquet": MovesSchema,
        "rewards.parquet": RewardsSchema,
        "token_xents.parquet": TokenXentsSchema,
        "scores.parquet": ScoresSchema,
    },
    replays=replays,
    headline=("xent_score",),
    extra_inputs=("maps/**/*.xgl",),
    order=20,
    estimators="pipeline.xent.estimators",
)
