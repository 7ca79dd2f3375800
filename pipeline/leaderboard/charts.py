"""The leaderboard's own charts, built from its tables: scores and ratings with their intervals."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

from pipeline.core.artifacts import save_chart
from pipeline.leaderboard.combine import BenchmarkBoard, CombinedEntry

FORMATS = ("html", "svg")  # the page shows the SVG, links the interactive HTML (Vega inlined)


def combined_frame(combined: dict[str, CombinedEntry]) -> pl.DataFrame:
    """Score and interval per model; `interval` says the row's section (full coverage or provisional)."""
    return pl.DataFrame(
        [
            {
                "model": m,
                "score": e.score,
                "score_lo": e.score if e.score_lo is None else e.score_lo,
                "score_hi": e.score if e.score_hi is None else e.score_hi,
                "rank": e.rank,
                "interval": ("provisional" if e.provisional else "full coverage")
                + ("" if e.settled else ", unsettled"),
            }
            for m, e in combined.items()
        ],
        schema={
            "model": pl.String,
            "score": pl.Float64,
            "score_lo": pl.Float64,
            "score_hi": pl.Float64,
            "rank": pl.Int64,
            "interval": pl.String,
        },
    )


def board_frame(board: BenchmarkBoard) -> pl.DataFrame:
    """mu and the interval drawn: the rating interval when settled, else mu +/- z sigma (see combine)."""
    rows = []
    for model, r in board.ratings.items():
        lo, hi = r.chart_interval or (r.mu, r.mu)
        rows.append(
            {
                "model": model,
                "mu": r.mu,
                "mu_lo": lo,
                "mu_hi": hi,
                "rank": r.rank,
                "interval": "bootstrap" if r.settled else "unsettled: mu ± z·sigma",
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "mu": pl.Float64,
            "mu_lo": pl.Float64,
            "mu_hi": pl.Float64,
            "rank": pl.Int64,
            "interval": pl.String,
        },
    )


def interval_chart(frame: pl.DataFrame, value: str, lo: str, hi: str, title: str, axis_title: str) -> alt.LayerChart:
    order = frame.sort("rank")["model"].to_list()
    base = alt.Chart(frame).encode(y=alt.Y("model:N", sort=order, title=None))
    rule = base.mark_rule(strokeWidth=2).encode(x=alt.X(f"{lo}:Q", title=axis_title), x2=f"{hi}:Q")
    extra = ["interval"] if "interval" in frame.columns else []
    point = base.mark_point(filled=True, size=70).encode(
        x=f"{value}:Q",
        tooltip=[
            "model",
            alt.Tooltip(f"{value}:Q", format=".2f"),
            alt.Tooltip(f"{lo}:Q", format=".2f"),
            alt.Tooltip(f"{hi}:Q", format=".2f"),
            *extra,
        ],
    )
    return (rule + point).properties(title=title, width=420, height=max(60, 24 * frame.height))


def write_charts(
    folder: Path, boards: list[BenchmarkBoard], combined: dict[str, CombinedEntry], method: str = "joint"
) -> dict[str, Path]:
    """Chart stems written under `folder`, keyed "combined" and by benchmark name."""
    written: dict[str, Path] = {}
    if combined:
        chart = interval_chart(
            combined_frame(combined),
            "score",
            "score_lo",
            "score_hi",
            "Combined rating with its 95% interval",
            "mean percentile rank (100 = first)" if method == "mean_percentile" else "joint rating (Elo scale)",
        )
        save_chart(chart, folder / "combined", FORMATS)
        written["combined"] = folder / "combined"
    for board in boards:
        if not board.ratings:
            continue
        chart = interval_chart(
            board_frame(board), "mu", "mu_lo", "mu_hi", f"{board.name}: TrueSkill mu with its interval", "mu"
        )
        save_chart(chart, folder / board.name, FORMATS)
        written[board.name] = folder / board.name
    return written
