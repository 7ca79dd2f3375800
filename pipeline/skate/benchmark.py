"""The SKATE benchmark as the registry sees it: models set code-output-prediction questions
for each other and answer them (docs/skate.md)."""

from __future__ import annotations

from pipeline.core.run import Benchmark
from pipeline.skate.replay import replays
from pipeline.skate.schemas import PCorrectSchema, QuestionsSchema

BENCHMARK = Benchmark(
    name="skate",
    title="SKATE",
    package="pipeline.skate",
    outputs=(
        "generate",
        "rounds",
        "answers",
        "questions.parquet",
        "setter_rounds.parquet",
        "samples.parquet",
        "pcorrect.parquet",
        "calls.parquet",
        "ratings.parquet",
        "rating_history.parquet",
        "variance.parquet",
        "points_of_difference.md",
        "plots",
        "analyses",
        "strategies",
    ),
    tables={
        "questions.parquet": QuestionsSchema,
        "pcorrect.parquet": PCorrectSchema,
    },
    replays=replays,
    headline=("p_correct_mean", "questions_answered"),
    order=10,
    estimators="pipeline.skate.estimators",
)
