"""Who is Spy plots, each built from one table and saved as HTML + PNG + SVG."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

from pipeline.core.artifacts import PALETTE, save_chart
from pipeline.whoisspy.config import VARIANTS
from pipeline.whoisspy.metrics import ALL_MODELS
from pipeline.whoisspy.scoring import START_POINTS

PLOTS: tuple[str, ...] = ("points_leaderboard", "win_rate_by_role", "vote_accuracy", "foul_rate", "variants")


def _records(frame: pl.DataFrame) -> list[dict]:
    return frame.to_dicts()


def points_chart(board: pl.DataFrame) -> alt.Chart:
    order = board.sort("rank")["model"].to_list()
    # games: the rated games, as on every page; points charge for seats (a model may fill two of a game)
    table = board.select("model", "points", "seats", "rank", games="trueskill_games").with_columns(
        start=pl.lit(START_POINTS),
        side=pl.when(pl.col("points") >= START_POINTS).then(pl.lit("gained")).otherwise(pl.lit("lost")),
    )
    # bars grow from the starting 100 points, so gains and losses both show
    bars = (
        alt.Chart(alt.Data(values=_records(table)))
        .mark_bar()
        .encode(
            x=alt.X(
                "points:Q",
                title=f"ranking points (start {START_POINTS:g}, -1 per seat, + scores)",
                scale=alt.Scale(zero=False),
            ),
            x2="start:Q",
            y=alt.Y("model:N", sort=order, title=None),
            color=alt.Color(
                "side:N", scale=alt.Scale(domain=["gained", "lost"], range=[PALETTE[0], PALETTE[3]]), legend=None
            ),
            tooltip=["rank:O", "model:N", alt.Tooltip("points:Q", format=".1f"), "games:Q", "seats:Q"],
        )
    )
    start = alt.Chart(alt.Data(values=[{"x": START_POINTS}])).mark_rule(strokeDash=[4, 3]).encode(x="x:Q")
    return (bars + start).properties(title="Who is Spy: ranking points")


def win_rate_chart(board: pl.DataFrame) -> alt.Chart:
    long = (
        board.select("model", spy="win_rate_spy", civilian="win_rate_civilian", overall="win_rate")
        .unpivot(index="model", variable_name="role", value_name="win_rate")
        .drop_nulls("win_rate")
    )
    order = board.sort("rank")["model"].to_list()
    return (
        alt.Chart(alt.Data(values=_records(long)))
        .mark_bar()
        .encode(
            x=alt.X("win_rate:Q", title="win rate", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("role:N", title=None, sort=["spy", "civilian", "overall"]),
            color=alt.Color("role:N", sort=["spy", "civilian", "overall"]),
            row=alt.Row("model:N", sort=order, title=None),
            tooltip=["model:N", "role:N", alt.Tooltip("win_rate:Q", format=".2f")],
        )
        .properties(title="Who is Spy: win rate by role", height=60)
    )


def _rate_chart(board: pl.DataFrame, column: str, title: str, axis: str) -> alt.Chart:
    data = board.select("model", column).drop_nulls(column)
    return (
        alt.Chart(alt.Data(values=_records(data)))
        .mark_bar()
        .encode(
            x=alt.X(f"{column}:Q", title=axis, scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("model:N", sort="-x", title=None),
            tooltip=["model:N", alt.Tooltip(f"{column}:Q", format=".2f")],
        )
        .properties(title=title)
    )


def variants_chart(variants: pl.DataFrame) -> alt.Chart:
    data = variants.filter(pl.col("model") != ALL_MODELS).drop_nulls("value")
    present = [v for v in VARIANTS if v in set(data["variant"].to_list())]
    return (
        alt.Chart(alt.Data(values=_records(data)))
        .mark_bar()
        .encode(
            x=alt.X("value:Q", title=None),
            y=alt.Y("variant:N", sort=present, title=None),
            color=alt.Color("variant:N", sort=present),
            row=alt.Row("model:N", title=None),
            column=alt.Column("metric:N", title=None),
            tooltip=[
                "model:N",
                "variant:N",
                "metric:N",
                alt.Tooltip("value:Q", format=".3f"),
                alt.Tooltip("delta:Q", format="+.3f", title="vs baseline"),
            ],
        )
        .resolve_scale(x="independent")
        .properties(title="Who is Spy: variants against the baseline", width=140, height=70)
    )


def save_plots(board: pl.DataFrame, variants: pl.DataFrame, out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    written: list[Path] = []
    written += save_chart(points_chart(board), out / "points_leaderboard")
    written += save_chart(win_rate_chart(board), out / "win_rate_by_role")
    written += save_chart(
        _rate_chart(
            board, "vote_accuracy", "Who is Spy: vote accuracy", "civilian votes naming the spy / civilian votes"
        ),
        out / "vote_accuracy",
    )
    written += save_chart(
        _rate_chart(board, "foul_rate", "Who is Spy: foul rate", "descriptions with a foul / descriptions"),
        out / "foul_rate",
    )
    written += save_chart(variants_chart(variants), out / "variants")
    return written
