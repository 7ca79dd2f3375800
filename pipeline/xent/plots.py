"""Plots built from the xent tables: score by round, running best, normalized-score bars.

The per-token heat map of the replay is drawn by the leaderboard from token_xents.parquet.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

from pipeline.core.artifacts import save_chart


def write_plots(rounds: pl.DataFrame, scores: pl.DataFrame, folder: str | Path) -> None:
    folder = Path(folder)
    per_round = (
        rounds.filter(pl.col("total_bits").is_not_null())
        .group_by(["game", "model", "round"])
        .agg(pl.col("total_bits").mean().alias("mean_total_bits"))
        .sort(["game", "model", "round"])
    )
    chart = (
        alt.Chart(alt.Data(values=per_round.to_dicts()))
        .mark_line(point=True)
        .encode(
            x=alt.X("round:O", title="round"),
            y=alt.Y("mean_total_bits:Q", title="mean round reward (bits)"),
            color=alt.Color("model:N", title="model"),
            column=alt.Column("game:N", title=None),
            tooltip=["game:N", "model:N", "round:O", alt.Tooltip("mean_total_bits:Q", format=".2f")],
        )
        .properties(width=220, height=200, title="Score by round (mean over maps)")
    )
    save_chart(chart, folder / "score_by_round")

    best = (
        rounds.filter(pl.col("running_best").is_not_null())
        .group_by(["game", "model", "round"])
        .agg(pl.col("running_best").mean().alias("mean_running_best"))
        .sort(["game", "model", "round"])
    )
    chart = (
        alt.Chart(alt.Data(values=best.to_dicts()))
        .mark_line(point=True)
        .encode(
            x=alt.X("round:O", title="round"),
            y=alt.Y("mean_running_best:Q", title="best round so far (bits)"),
            color=alt.Color("model:N", title="model"),
            column=alt.Column("game:N", title=None),
            tooltip=["game:N", "model:N", "round:O", alt.Tooltip("mean_running_best:Q", format=".2f")],
        )
        .properties(width=220, height=200, title="Running best per model (playability curve)")
    )
    save_chart(chart, folder / "running_best")

    normalized = (
        scores.filter(pl.col("normalized_score").is_not_null())
        .group_by(["game", "model"])
        .agg((pl.col("normalized_score").mean() * 100).alias("score"))
        .sort(["game", "model"])
    )
    chart = (
        alt.Chart(alt.Data(values=normalized.to_dicts()))
        .mark_bar()
        .encode(
            x=alt.X("model:N", title=None),
            y=alt.Y("score:Q", title="normalized score (x100)"),
            color=alt.Color("model:N", legend=None),
            column=alt.Column("game:N", title=None),
            tooltip=["game:N", "model:N", alt.Tooltip("score:Q", format=".1f")],
        )
        .properties(width=160, height=200, title="Normalized score per game")
    )
    save_chart(chart, folder / "normalized_scores")
