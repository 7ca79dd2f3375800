"""`python -m pipeline compare MODEL_A MODEL_B`: two roster entries (typically two versions of one
model) side by side: ratings with intervals per benchmark, head-to-head records in the games they
shared, the SKATE questions where their p(correct) differs most, the xent maps with the largest gaps."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from pipeline.core.artifacts import write_text_atomic
from pipeline.core.artifacts.results import BenchmarkResults
from pipeline.leaderboard.build import RosterView, combined_board
from pipeline.leaderboard.combine import (
    SETTLED_RULE,
    BenchmarkBoard,
    Rating,
    combined_separation,
    mu_text,
    rank_text,
    rating_separation,
    score_text,
)
from pipeline.leaderboard.config import LeaderboardParams, load_leaderboard_params
from pipeline.leaderboard.report import Report
from pipeline.leaderboard.sources import benchmark_boards, load_benchmark_results


def rating_cell(r: Rating | None) -> str:
    """mu [interval], rank (interval); an unsettled rating shows no mu interval and the whole field
    as its rank interval, marked (pipeline.core.rating.multipass.interval_settled); the verdict says why."""
    if r is None:
        return "–"
    return f"{mu_text(r)}, rank {rank_text(r.rank, r.rank_lo, r.rank_hi, r.settled)}"


def head_to_head(per_game: pl.DataFrame, a: str, b: str, better: str) -> tuple[int, int, int, int]:
    """(shared games, a ahead, b ahead, even) from one value per (game, model); `better` = 'low'|'high'."""
    wide = per_game.filter(pl.col("model").is_in([a, b])).pivot(on="model", index="game_id", values="value")
    if a not in wide.columns or b not in wide.columns:
        return 0, 0, 0, 0
    wide = wide.drop_nulls([a, b])
    sign = -1 if better == "low" else 1
    diff = (wide[a] - wide[b]) * sign
    return wide.height, int((diff > 0).sum()), int((diff < 0).sum()), int((diff == 0).sum())


def elimination_h2h(bench: BenchmarkResults, a: str, b: str) -> tuple[int, int, int, int] | None:
    ranks = bench.table("tables/final_ranks.parquet", ["game_id", "model", "rank"])
    if ranks is None:
        return None
    # a model with several seats in a game counts by its best-placed seat
    best = (
        ranks.drop_nulls("rank").group_by("game_id", "model").agg(pl.col("rank").min().cast(pl.Float64).alias("value"))
    )
    return head_to_head(best, a, b, "low")


def whoisspy_h2h(bench: BenchmarkResults, a: str, b: str) -> tuple[int, int, int, int] | None:
    seats = bench.table("seats.parquet", ["game_id", "model", "score"])
    if seats is None:
        return None
    mean = seats.group_by("game_id", "model").agg(pl.col("score").mean().cast(pl.Float64).alias("value"))
    return head_to_head(mean, a, b, "high")


def skate_gaps(bench: BenchmarkResults, a: str, b: str, top: int) -> list[list[object]]:
    pc = bench.table("pcorrect.parquet", ["question_id", "setter", "answerer", "p_correct"])
    if pc is None:
        return []
    wide = pc.filter(pl.col("answerer").is_in([a, b])).pivot(
        on="answerer", index=["question_id", "setter"], values="p_correct", aggregate_function="mean"
    )
    if a not in wide.columns or b not in wide.columns:
        return []
    wide = wide.drop_nulls([a, b]).with_columns((pl.col(a) - pl.col(b)).alias("gap"))
    questions = bench.table("questions.parquet", ["question_id", "description"])
    if questions is not None:
        wide = wide.join(questions.drop_nulls("question_id").unique("question_id"), on="question_id", how="left")
    else:
        wide = wide.with_columns(pl.lit("").alias("description"))
    wide = wide.sort([pl.col("gap").abs(), pl.col("question_id")], descending=[True, False]).head(top)
    return [
        [r["question_id"], r["setter"], (r["description"] or "")[:80], f"{r[a]:.3f}", f"{r[b]:.3f}", f"{r['gap']:+.3f}"]
        for r in wide.iter_rows(named=True)
    ]


def xent_gaps(bench: BenchmarkResults, a: str, b: str, top: int) -> list[list[object]]:
    scores = bench.table("scores.parquet", ["game", "map_id", "model", "map_score", "normalized_score"])
    if scores is None:
        return []
    wide = scores.filter(pl.col("model").is_in([a, b])).pivot(
        on="model", index=["game", "map_id"], values="map_score", aggregate_function="mean"
    )
    if a not in wide.columns or b not in wide.columns:
        return []
    wide = (
        wide.drop_nulls([a, b])
        .with_columns((pl.col(a) - pl.col(b)).alias("gap"))
        .sort([pl.col("gap").abs(), pl.col("game"), pl.col("map_id")], descending=[True, False, False])
        .head(top)
    )
    return [
        [r["game"], r["map_id"], f"{r[a]:.2f}", f"{r[b]:.2f}", f"{r['gap']:+.2f}"] for r in wide.iter_rows(named=True)
    ]


def models_seen(boards: list[BenchmarkBoard]) -> set[str]:
    return {m for board in boards for m in board.ratings} | {m for board in boards for m in board.headline}


def compare_report(params: LeaderboardParams, results: Path, a: str, b: str) -> Report:
    benches = load_benchmark_results(results, params.benchmarks)
    boards = benchmark_boards(params, benches)
    known = models_seen(boards)
    missing = [m for m in (a, b) if m not in known]
    if missing:
        raise LookupError(
            f"no results for {', '.join(map(repr, missing))}; models with results: "
            f"{', '.join(sorted(known)) or '(none)'}"
        )
    report = Report(f"{a} vs {b}")
    report.heading("Ratings per benchmark")
    report.paragraph(
        "mu [95% interval], rank (95% interval); delta = A - B. Two models are separable when "
        "both rank intervals are settled and do not overlap; not separable when settled intervals "
        f"overlap; otherwise there are not enough games to tell ({SETTLED_RULE}; an unsettled rank "
        "interval is the whole field). Each verdict names the games per model and the resamples."
    )
    rows: list[list[object]] = []
    combined = combined_board(params, benches, boards, RosterView())
    if a in combined and b in combined:
        ca, cb = combined[a], combined[b]
        rows.append(
            [
                "combined",
                *(
                    f"{score_text(c)}, rank {rank_text(c.rank, c.rank_lo, c.rank_hi, c.settled)}"
                    + (" provisional" if c.provisional else "")
                    for c in (ca, cb)
                ),
                f"{ca.score - cb.score:+.1f}",
                combined_separation(ca, cb),
            ]
        )
    for board in boards:
        ra, rb = board.ratings.get(a), board.ratings.get(b)
        if ra is None and rb is None:
            continue
        delta = f"{ra.mu - rb.mu:+.2f}" if ra and rb else "–"
        rows.append([board.name, rating_cell(ra), rating_cell(rb), delta, rating_separation(ra, rb)])
    report.table(["benchmark", a, b, "delta", "verdict"], rows)

    report.heading("Head to head in shared games")
    report.paragraph("elimination: the better final rank (best seat); whoisspy: the higher game score.")
    h2h_rows = []
    for name, reader in (("elimination", elimination_h2h), ("whoisspy", whoisspy_h2h)):
        if name in benches and (record := reader(benches[name], a, b)) is not None:
            shared, ahead_a, ahead_b, even = record
            h2h_rows.append([name, shared, ahead_a, ahead_b, even])
    report.table(["benchmark", "shared games", f"{a} ahead", f"{b} ahead", "even"], h2h_rows)

    if "skate" in benches:
        report.heading("SKATE questions where p(correct) differs most")
        report.table(
            ["question", "setter", "question text", f"p {a}", f"p {b}", "gap"],
            skate_gaps(benches["skate"], a, b, params.compare.top_questions),
            empty="(no question answered by both)",
        )
    if "xent" in benches:
        report.heading("xent maps with the largest gaps")
        report.table(
            ["game", "map", f"{a} (bits)", f"{b} (bits)", "gap"],
            xent_gaps(benches["xent"], a, b, params.compare.top_maps),
            empty="(no map played by both)",
        )
    return report


def run_compare(args: argparse.Namespace) -> int:
    params = load_leaderboard_params(args.params)
    try:
        report = compare_report(params, Path(args.results), args.model_a, args.model_b)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.html:
        write_text_atomic(args.html, report.html())
    print(report.markdown())
    return 0
