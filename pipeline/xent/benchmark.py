"""The Xent benchmark as the registry sees it: cross-entropy games written in XGL,
scored in bits by a judge language model (docs/xent.md)."""

from __future__ import annotations

from pipeline.core.artifacts.schemas import EVENTS_FILE, RatingEventsSchema
from pipeline.core.run.declaration import Rules
from pipeline.core.run.registry import Benchmark
from pipeline.core.run.verbs import Verb
from pipeline.xent import cli
from pipeline.xent.adaptive import SPEC as ADAPTIVE
from pipeline.xent.dataset import dataset_rows
from pipeline.xent.outputs import WRITES
from pipeline.xent.replay import replays
from pipeline.xent.schemas import MovesSchema, RewardsSchema, ScoresSchema, TokenXentsSchema
from pipeline.xent.workflow import PLOT_MODULES, RATE_MODULES, schedule_notes, scheduled

BENCHMARK = Benchmark(
    name="xent",
    title="Xent",
    package="pipeline.xent",
    description="Xent: cross-entropy games in XGL, scored by a judge model",
    rules_file="rules.smk",  # its own stages: maps, play (and its shards), rescore
    # rate (from rescore's tables), rounds, report and all: the standard rules
    rules=Rules(schedule=scheduled, rate_reads=WRITES["rescore"], rate_code=RATE_MODULES, report_code=PLOT_MODULES),
    schedule=Verb(cli.schedule, "list the play jobs (id, game, player, maps)"),
    play=Verb(
        cli.play,
        "play scheduled jobs (one game, one player, all its maps); write "
        "<out>/<game>/<job_id>.json and its calls table",
        out="results/xent/play",
        out_help="the play records' folder",
        concurrent=False,
        flags=cli.play_flags,
    ),
    rate=Verb(cli.rate, "rounds, scores, maps, TrueSkill ratings and metrics.json from the rescored tables"),
    report=Verb(cli.report, "plots from the rated tables"),
    extra_commands=cli.extra_commands,
    writes=WRITES,
    outputs=(
        "maps",
        "play",
        "rounds",  # the adaptive schedule's rounds (empty under the fixed schedule)
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
        "rating_events.parquet",  # the rated events, for the combined leaderboard
        "plots",
    ),
    tables={
        EVENTS_FILE: RatingEventsSchema,
        "moves.parquet": MovesSchema,
        "rewards.parquet": RewardsSchema,
        "token_xents.parquet": TokenXentsSchema,
        "scores.parquet": ScoresSchema,
    },
    replays=replays,
    site_reads=("moves.parquet", "token_xents.parquet", EVENTS_FILE),
    headline=("xent_score",),
    extra_inputs=("maps/**/*.xgl",),
    order=20,
    estimators="pipeline.xent.estimators",
    contract="pipeline.xent.contract",
    schedule_notes=schedule_notes,
    adaptive=ADAPTIVE,
    dataset=dataset_rows,
)
