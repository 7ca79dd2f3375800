"""The SKATE benchmark as the registry sees it: models set code-output-prediction questions
for each other and answer them (docs/skate.md)."""

from __future__ import annotations

from pipeline.core.artifacts.schemas import EVENTS_FILE, RatingEventsSchema
from pipeline.core.run.declaration import Rules
from pipeline.core.run.registry import Benchmark
from pipeline.core.run.verbs import Verb
from pipeline.skate import cli
from pipeline.skate.adaptive import SPEC as ADAPTIVE
from pipeline.skate.dataset import dataset_rows
from pipeline.skate.outputs import WRITES
from pipeline.skate.replay import replays
from pipeline.skate.schemas import PCorrectSchema, QuestionsSchema
from pipeline.skate.workflow import scheduled

BENCHMARK = Benchmark(
    name="skate",
    title="SKATE",
    package="pipeline.skate",
    description="SKATE: models set and answer code-output-prediction questions",
    rules_file="rules.smk",  # its own stages: generate, round and answer jobs, analyses, strategy games
    rules=Rules(schedule=scheduled),  # rate, rounds, report and all: the standard rules
    schedule=Verb(cli.schedule, "list every job of the game with its id (generate, round, answer)"),
    play=Verb(
        cli.play,
        "play scheduled jobs: a setter's round (up to `attempts` tries, each run in the sandbox "
        "and checked), a round's question set, or an answerer's p(correct) on a round",
        concurrent=False,
    ),
    rate=Verb(cli.rate, "tables of the whole game and pairwise TrueSkill (relative and absolute)"),
    report=Verb(cli.report, "metrics.json, plots and the points-of-difference list"),
    extra_commands=cli.extra_commands,
    writes=WRITES,
    outputs=(
        "generate",
        "rounds",  # the round jobs, and the adaptive schedule's round files (none under the fixed game)
        "answers",
        "questions.parquet",
        "setter_rounds.parquet",
        "samples.parquet",
        "pcorrect.parquet",
        "calls.parquet",
        "ratings.parquet",
        "rating_history.parquet",
        "rating_events.parquet",  # the rated events, for the combined leaderboard
        "variance.parquet",
        "points_of_difference.md",
        "plots",
        "analyses",
        "strategies",
    ),
    tables={
        EVENTS_FILE: RatingEventsSchema,
        "questions.parquet": QuestionsSchema,
        "pcorrect.parquet": PCorrectSchema,
    },
    replays=replays,
    headline=("p_correct_mean", "questions_answered"),
    order=10,
    estimators="pipeline.skate.estimators",
    contract="pipeline.skate.contract",
    adaptive=ADAPTIVE,
    dataset=dataset_rows,
)
