"""The Elimination Game as the registry sees it: 8 seats of public and private talk, secret votes
and a jury (docs/elimination.md)."""

from __future__ import annotations

from pipeline.core.artifacts.schemas import EVENTS_FILE, RatingEventsSchema
from pipeline.core.run.declaration import Rules
from pipeline.core.run.registry import Benchmark
from pipeline.core.run.verbs import Verb, flag
from pipeline.elimination import cli
from pipeline.elimination.adaptive import SPEC as ADAPTIVE
from pipeline.elimination.dataset import dataset_rows
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
from pipeline.elimination.workflow import RATE_MODULES, REPORT_MODULES, SKELETON

#: the tables `rate` writes under tables/ (<name>.parquet)
TABLES = (
    "games",
    "seats",
    "messages",
    "votes",
    "eliminations",
    "pairs",
    "final_ranks",
    "memory_notes",
    "model_stats",
    "rank_distribution",
)

BENCHMARK = Benchmark(
    name="elimination",
    title="Elimination Game",
    package="pipeline.elimination",
    description="Elimination Game: eight seats, talk, votes and a jury",
    # the standard rules (pipeline/core/run/standard.py): a job per game, API, embedded-model and
    # bot-only games many a job (shards); a game with the embedded model takes both cores (torch
    # threads), so two never compete; a game is done once its calls table is written (after its log)
    rules=Rules(
        schedule=SKELETON.scheduled,
        shards=True,
        local_threads=2,
        done="games/{game_id}/calls.parquet",
        report_reads=("leaderboard.parquet", *(f"tables/{table}.parquet" for table in TABLES)),
        rate_code=RATE_MODULES,
        report_code=REPORT_MODULES,
    ),
    schedule=SKELETON.schedule_verb("list the scheduled games (id and who sits where)"),
    play=SKELETON.play_verb("play scheduled games; write <out>/<game_id>/game_<n>.jsonl and its calls table"),
    rate=Verb(
        cli.rate,
        "tables, multi-pass TrueSkill, leaderboard.csv and metrics.json from every scheduled game",
        flags=flag("--games", "results/elimination/games", "the played games' folder"),
    ),
    report=Verb(cli.report, "plots from the rated tables"),
    extra_commands=cli.extra_commands,
    writes={
        "play": ("games/{game_id}/",),  # one folder per game
        "rate": (
            "leaderboard.csv",
            "leaderboard.parquet",
            "rating_events.parquet",
            "metrics.json",
            "import_report.json",
            "calls.parquet",
            *(f"tables/{table}.parquet" for table in TABLES),
        ),
        "report": ("plots/",),  # a folder
    },
    outputs=(
        "games",
        "rounds",  # the adaptive schedule's rounds (empty under the fixed schedule)
        "tables",
        "leaderboard.parquet",
        "leaderboard.csv",
        "rating_events.parquet",  # the rated events, for the combined leaderboard
        "import_report.json",
        "calls.parquet",
        "plots",
    ),
    tables={
        EVENTS_FILE: RatingEventsSchema,
        "tables/games.parquet": GamesSchema,
        "tables/seats.parquet": SeatsSchema,
        "tables/messages.parquet": MessagesSchema,
        "tables/votes.parquet": VotesSchema,
        "tables/eliminations.parquet": EliminationsSchema,
        "tables/pairs.parquet": PairsSchema,
        "tables/final_ranks.parquet": FinalRanksSchema,
    },
    replays=replays,
    site_reads=("games", EVENTS_FILE),
    headline=("wins", "avg_points"),  # games: the rated games of the rating table (one definition everywhere)
    order=30,
    estimators=SKELETON.estimators,
    contract=SKELETON.contract,
    adaptive=ADAPTIVE,
    dataset=dataset_rows,
)
