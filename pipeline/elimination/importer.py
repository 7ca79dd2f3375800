"""Logs -> tables, ratings, leaderboard, metrics and plots: the same path for our games and the
original benchmark's logs (`python -m pipeline elimination import DIR --out OUTDIR`)."""

from __future__ import annotations

import io
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts import CallsSchema, TableError, atomic_open, read_table, write_json_atomic, write_table
from pipeline.core.rating.joint import EVENTS_FILE, write_rating_events
from pipeline.elimination import metrics as metric_tables
from pipeline.elimination.config import RatingSettings
from pipeline.elimination.ratings import game_events, leaderboard, rate, rating_events, rating_params
from pipeline.elimination.reader import TABLE_KEYS, Corpus, read_corpus
from pipeline.elimination.schemas import (
    TABLE_SCHEMAS,
    LeaderboardSchema,
    ModelStatsSchema,
    RankDistributionSchema,
)

LEADERBOARD_CSV_COLUMNS = ["model", "mu", "mu_rel", "sigma", "games", "points_sum", "avg_points"]


@dataclass
class ImportResult:
    corpus: Corpus
    leaderboard: pl.DataFrame
    stats: pl.DataFrame
    report: dict[str, Any]
    seconds: dict[str, float]


def write_csv_atomic(path: Path, frame: pl.DataFrame) -> None:
    buffer = io.StringIO()
    frame.write_csv(buffer)
    with atomic_open(path, "w") as handle:
        handle.write(buffer.getvalue())


def collect_calls(paths: Iterable[str | Path]) -> pl.DataFrame:
    """The calls tables written beside game logs (one per game job), stacked."""
    frames = []
    for path in map(Path, paths):
        candidates = sorted(path.rglob("calls.parquet")) if path.is_dir() else []
        for file in candidates:
            try:
                frames.append(read_table(file, CallsSchema))
            except TableError:
                continue  # reported by the game's own stage; the ratings do not need it
    if not frames:
        from pipeline.core.artifacts import calls_frame

        return calls_frame([])
    return pl.concat(frames, how="vertical")


def rank_differences(final_ranks: pl.DataFrame, games: pl.DataFrame) -> list[dict[str, Any]]:
    """Per game whose re-derived ranks differ from the recorded ones: the file and each seat's two ranks."""
    differ = final_ranks.filter(
        pl.col("recorded_rank").is_not_null()
        & pl.col("derived_rank").is_not_null()
        & (pl.col("recorded_rank") != pl.col("derived_rank"))
    )
    if differ.is_empty():
        return []
    files = dict(zip(games["game_id"].to_list(), games["file"].to_list(), strict=True))
    out = []
    for (game_id,), group in differ.sort("game_id", "seat").group_by("game_id", maintain_order=True):
        out.append(
            {
                "game_id": game_id,
                "file": files.get(game_id),
                "seats": {
                    r["seat"]: {"model": r["model"], "recorded": r["recorded_rank"], "derived": r["derived_rank"]}
                    for r in group.iter_rows(named=True)
                },
            }
        )
    return sorted(out, key=lambda d: (d["file"] or "", d["game_id"]))


def _empty_replies(corpus: Corpus) -> dict[str, int]:
    """Per model: replies the token limit cut before any visible text (messages and vote tries)."""
    counts: Counter[str] = Counter()
    for row in corpus.tables["messages"].filter(pl.col("empty_at_token_limit")).iter_rows(named=True):
        counts[row["model"]] += 1
    for row in corpus.tables["votes"].filter(pl.col("token_limit_replies") > 0).iter_rows(named=True):
        counts[row["voter_model"]] += row["token_limit_replies"]
    return dict(sorted(counts.items()))


def build_report(corpus: Corpus, ranks: str = "recorded") -> dict[str, Any]:
    """What was read and how: every skipped file with its reason, the rank source of every game
    that did not use the chosen one, and every game whose re-derived ranks differ from the recorded."""
    games = corpus.tables["games"]
    votes = corpus.tables["votes"]
    unknown: dict[str, int] = {}
    for game in corpus.games:
        for kind, count in game.unknown.items():
            unknown[kind] = unknown.get(kind, 0) + count
    wanted = "final_results" if ranks == "recorded" else "derived"
    markers = votes.filter(pl.col("target_marker").is_not_null()).group_by("target_marker").len().sort("target_marker")
    return {
        "files": corpus.files,
        "games_read": len(corpus.games),
        "games_finished": len(corpus.finished),
        "ranks": ranks,
        "skipped": sorted(corpus.skipped, key=lambda s: s["file"]),
        "incomplete": sorted(g.file for g in corpus.games if not g.ranks),
        "rank_source_fallback": games.filter(pl.col("rank_source").is_not_null() & (pl.col("rank_source") != wanted))[
            "file"
        ]
        .sort()
        .to_list(),
        "ranks_from_final_results": games.filter(pl.col("rank_source") == "final_results")["file"].sort().to_list()
        if ranks == "derived"
        else [],
        "differ_from_final_results": games.filter(pl.col("matches_final_results") == False)["file"].sort().to_list(),  # noqa: E712
        "rank_differences": rank_differences(corpus.tables["final_ranks"], games),
        "variants": dict(sorted(Counter(games["variant"].to_list()).items())),
        "invalid_vote_markers": dict(zip(markers["target_marker"].to_list(), markers["len"].to_list(), strict=True)),
        "invalid_votes": int(votes.filter(~pl.col("valid")).height),
        "memory_notes": corpus.tables["memory_notes"].height,
        "empty_at_token_limit": _empty_replies(corpus),
        "unknown_record_kinds": dict(sorted(unknown.items())),
        "problems": {g.file: g.problems for g in sorted(corpus.games, key=lambda g: g.file) if g.problems},
    }


def check_import_paths(paths: Sequence[str | Path]) -> list[Path]:
    """The game logs `import` reads from `paths`; an InputError naming the path and the fix when
    none is given, one does not exist, or none holds a log (an empty leaderboard is no result)."""
    from pipeline.core.artifacts import InputError
    from pipeline.elimination.reader import find_logs

    what = "directories of game logs (*.jsonl, searched recursively) or log files"
    if not paths:
        raise InputError(f"elimination import: no path given; name {what}")
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise InputError(f"elimination import: {', '.join(missing)}: no such file or directory; name {what}")
    logs = find_logs(paths)
    if not logs:
        raise InputError(f"elimination import: no game log (*.jsonl) in {', '.join(map(str, paths))}; name {what}")
    return logs


def run_import(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    settings: RatingSettings,
    *,
    passes: int | None = None,
    bootstrap: int | None = None,
    plots: bool = True,
    calls_out: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    require_games: bool = False,
    opponent_rates: bool = False,
) -> ImportResult:
    """`require_games`: stop with an InputError, before writing anything, when no log could be read.
    `opponent_rates`: metrics.json also gets each model's pairwise win rate, naive and against a
    uniform mix of opponents (`metrics.opponent_rate_metrics`; the adaptive schedule's correction)."""
    say = progress or (lambda _m: None)
    out = Path(out_dir)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    corpus = read_corpus(paths, settings.ranks)
    seconds["read"] = time.perf_counter() - started
    say(
        f"read {corpus.files} file(s): {len(corpus.games)} game(s), {len(corpus.finished)} finished, "
        f"{len(corpus.skipped)} skipped"
    )
    for skipped in corpus.skipped:
        say(f"  skipped {skipped['file']}: {skipped['error']}")
    if require_games and not corpus.games:
        from pipeline.core.artifacts import InputError

        raise InputError(
            f"elimination import: none of the {corpus.files} file(s) under {', '.join(map(str, paths))} "
            "is a readable game log (the reasons are above); nothing was written"
        )

    started = time.perf_counter()
    tables = {}
    for name, schema in TABLE_SCHEMAS.items():
        tables[name] = write_table(
            out / "tables" / f"{name}.parquet", corpus.tables[name], schema, sort_by=TABLE_KEYS[name]
        )
    seconds["tables"] = time.perf_counter() - started

    started = time.perf_counter()
    ratings = rate(tables["final_ranks"], settings, passes=passes, bootstrap=bootstrap)
    board = leaderboard(ratings, tables["final_ranks"])
    seconds["rating"] = time.perf_counter() - started

    board = write_table(out / "leaderboard.parquet", board, LeaderboardSchema)
    write_rating_events(out / EVENTS_FILE, game_events(tables["final_ranks"]))
    write_csv_atomic(out / "leaderboard.csv", board.select(LEADERBOARD_CSV_COLUMNS))
    stats = write_table(
        out / "tables" / "model_stats.parquet", metric_tables.model_stats(tables), ModelStatsSchema, sort_by=["model"]
    )
    distribution = write_table(
        out / "tables" / "rank_distribution.parquet",
        metric_tables.rank_distribution(tables["final_ranks"]),
        RankDistributionSchema,
        sort_by=["model", "rank"],
    )
    metrics = metric_tables.metrics_json(board, stats)
    if opponent_rates:
        metrics = metrics.with_metrics(
            metric_tables.opponent_rate_metrics(rating_events(tables["final_ranks"]), board, rating_params(settings))
        )
    metrics.write(out / "metrics.json")
    report = build_report(corpus, settings.ranks)
    write_json_atomic(out / "import_report.json", report)
    say(
        f"final ranks: {settings.ranks}; {len(report['rank_differences'])} game(s) whose re-derived ranks differ "
        f"from the recorded ones, {report['invalid_votes']} invalid vote(s), {report['memory_notes']} memory "
        f"note(s); details in {out / 'import_report.json'}"
    )
    if calls_out is not None:
        write_table(
            calls_out, collect_calls(paths), CallsSchema, sort_by=["job", "roster_name", "request_id", "attempt"]
        )

    if plots:
        started = time.perf_counter()
        from pipeline.elimination.plots import write_plots

        write_plots(board, distribution, stats, out / "plots")
        seconds["plots"] = time.perf_counter() - started
    return ImportResult(corpus, board, stats, report, seconds)


def write_report(out_dir: str | Path) -> list[Path]:
    """The plots, from the tables `rate` (or `import --no-plots`) wrote under `out_dir`."""
    from pipeline.elimination.plots import write_plots

    out = Path(out_dir)
    board = read_table(out / "leaderboard.parquet", LeaderboardSchema)
    stats = read_table(out / "tables" / "model_stats.parquet", ModelStatsSchema)
    distribution = read_table(out / "tables" / "rank_distribution.parquet", RankDistributionSchema)
    return write_plots(board, distribution, stats, out / "plots")
