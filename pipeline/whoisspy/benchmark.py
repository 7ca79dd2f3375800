"""The Who is Spy benchmark as the registry sees it: 6 players describe a secret word;
one spy has a different one (docs/whoisspy.md)."""

from __future__ import annotations

from pipeline.core.artifacts.schemas import EVENTS_FILE, RatingEventsSchema
from pipeline.core.run.declaration import Rules
from pipeline.core.run.registry import Benchmark, plot_files
from pipeline.core.run.verbs import Verb, flag
from pipeline.whoisspy import cli
from pipeline.whoisspy.adaptive import SPEC as ADAPTIVE
from pipeline.whoisspy.dataset import dataset_rows
from pipeline.whoisspy.replay import replays
from pipeline.whoisspy.schemas import GamesSchema, SeatsSchema, SpeechesSchema, VotesSchema
from pipeline.whoisspy.workflow import REPORT_MODULES, SKELETON

#: the tables `rate` writes (<name>.parquet), besides metrics.json
TABLES = ("games", "seats", "speeches", "votes", "leaderboard", "variants", "ratings", "rating_events", "calls")
#: the plots `report` draws (pipeline/whoisspy/plots.py: PLOTS)
PLOTS = ("points_leaderboard", "win_rate_by_role", "vote_accuracy", "foul_rate", "variants")

BENCHMARK = Benchmark(
    name="whoisspy",
    title="Who is Spy",
    package="pipeline.whoisspy",
    description="Who is Spy: six players, one spy with a different word",
    # the standard rules (pipeline/core/run/standard.py): a job per game, API, embedded-model and
    # bot-only games many a job (shards); a game is done once its record is written (after its calls)
    rules=Rules(
        schedule=SKELETON.scheduled,
        shards=True,
        done="games/{game_id}.json",
        rate_code=REPORT_MODULES,
        report_code=REPORT_MODULES,
    ),
    schedule=SKELETON.schedule_verb("list the scheduled games (id, variant, words, seats)"),
    play=SKELETON.play_verb("play scheduled games; write <out>/<game_id>.json and its calls table"),
    rate=Verb(
        cli.rate,
        "tables, TrueSkill ratings and metrics.json from every scheduled game",
        flags=flag("--games", "results/whoisspy/games", "the played games' folder"),
    ),
    report=Verb(cli.report, "plots from the rated tables"),
    extra_commands=cli.extra_commands,
    writes={
        "play": ("games/{game_id}.json", "games/{game_id}.calls.parquet"),
        "rate": (*(f"{table}.parquet" for table in TABLES), "metrics.json"),
        "report": plot_files(*PLOTS),
    },
    outputs=(
        "games",
        "rounds",  # the adaptive schedule's rounds (empty under the fixed schedule)
        "games.parquet",
        "seats.parquet",
        "speeches.parquet",
        "votes.parquet",
        "leaderboard.parquet",
        "variants.parquet",
        "ratings.parquet",
        "rating_events.parquet",  # the rated events, for the combined leaderboard
        "calls.parquet",
        "plots",
    ),
    tables={
        EVENTS_FILE: RatingEventsSchema,
        "games.parquet": GamesSchema,
        "seats.parquet": SeatsSchema,
        "speeches.parquet": SpeechesSchema,
        "votes.parquet": VotesSchema,
    },
    replays=replays,
    site_reads=("games", EVENTS_FILE),
    headline=("points", "win_rate"),  # games: the rated games of the rating table (one definition everywhere)
    order=40,
    estimators=SKELETON.estimators,
    contract=SKELETON.contract,
    adaptive=ADAPTIVE,
    dataset=dataset_rows,
)
