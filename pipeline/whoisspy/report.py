"""The stage's closing jobs: `rate` (every game record in; tables, ratings, metrics.json out) and
`report` (the rated tables in; plots out)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts import CallsSchema, RatingsSchema, calls_frame, read_table, write_table
from pipeline.core.rating.joint import EVENTS_FILE, write_rating_events
from pipeline.whoisspy.config import WhoIsSpyParams
from pipeline.whoisspy.metrics import (
    build_tables,
    game_events,
    leaderboard,
    load_records,
    metrics_json,
    opponent_rate_metrics,
    ratings,
    variants_table,
)
from pipeline.whoisspy.schemas import (
    GamesSchema,
    LeaderboardSchema,
    SeatsSchema,
    SpeechesSchema,
    VariantsSchema,
    VotesSchema,
)

# what `rate` and `report` write is declared once, in benchmark.py (`writes`): the rules' outputs and dvc.yaml


def write_rate(params: WhoIsSpyParams, game_files: list[Path], out_dir: str | Path) -> dict[str, Any]:
    out = Path(out_dir)
    records = load_records(game_files)
    tables = build_tables(records)
    games = write_table(out / "games.parquet", tables["games"], GamesSchema, sort_by=["game_id"])
    seats = write_table(out / "seats.parquet", tables["seats"], SeatsSchema, sort_by=["game_id", "seat"])
    write_table(out / "speeches.parquet", tables["speeches"], SpeechesSchema, sort_by=["game_id", "round", "seat"])
    write_table(out / "votes.parquet", tables["votes"], VotesSchema, sort_by=["game_id", "round", "voter"])

    keyed = game_events(games, seats, params.rank_variant, params.rating.matchup)
    write_rating_events(out / EVENTS_FILE, keyed)
    events = [event for _, event in keyed]
    rating_table, intervals = ratings(events, params.rating, params.seed)
    write_table(out / "ratings.parquet", rating_table, RatingsSchema, sort_by=["player"])
    board = write_table(
        out / "leaderboard.parquet", leaderboard(seats, params.rank_variant, rating_table, intervals), LeaderboardSchema
    )
    variants = write_table(
        out / "variants.parquet",
        variants_table(seats, params.rank_variant),
        VariantsSchema,
        sort_by=["model", "variant", "metric"],
    )

    calls = [read_table(f.with_name(f.name.removesuffix(".json") + ".calls.parquet"), CallsSchema) for f in game_files]
    all_calls = pl.concat(calls) if calls else calls_frame([])
    write_table(out / "calls.parquet", all_calls, CallsSchema, sort_by=["job", "roster_name", "request_id", "attempt"])

    metrics = metrics_json(board, variants, params.rank_variant, seats)
    if params.schedule.adaptive.enabled:  # the adaptive schedule's correction (docs/adaptive.md); fixed runs as before
        metrics = metrics.with_metrics(opponent_rate_metrics(events, board, params.rating.rating_params()))
    metrics.write(out / "metrics.json")
    return {"games": games.height, "rating_events": len(events), "models": board.height}


def write_report(out_dir: str | Path) -> list[Path]:
    """The plots, from the tables `rate` wrote."""
    out = Path(out_dir)
    board = read_table(out / "leaderboard.parquet", LeaderboardSchema)
    variants = read_table(out / "variants.parquet", VariantsSchema)
    from pipeline.whoisspy.plots import save_plots  # altair: about 0.3 CPU-s, which a rate job does not need

    return save_plots(board, variants, out / "plots")
