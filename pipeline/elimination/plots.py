"""Every plot of the spec, each built from one table (leaderboard, rank distribution, model stats)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import altair as alt
import polars as pl

from pipeline.core.plots import FORMATS, save_chart

PLOT_NAMES = (
    "trueskill", "rank_distribution", "betrayal_betrayer", "betrayal_victim", "first_place",
    "earliest_out", "final2_win_rate", "average_words",
)


def _height(n: int) -> int:
    return max(120, 22 * n)


def trueskill_chart(board: pl.DataFrame) -> alt.Chart:
    data = board.select("model", "mu", "sigma").with_columns(
        (pl.col("mu") - pl.col("sigma")).alias("low"), (pl.col("mu") + pl.col("sigma")).alias("high"))
    order = data["model"].to_list()  # already sorted by mu
    base = alt.Chart(data).encode(y=alt.Y("model:N", sort=order, title=None))
    title = "TrueSkill mu (error bar: ±sigma)"
    bars = base.mark_bar().encode(x=alt.X("mu:Q", title=title), tooltip=["model", "mu", "sigma"])
    errors = base.mark_errorbar(ticks=True).encode(x=alt.X("low:Q", title=title), x2="high:Q")
    return (bars + errors).properties(title="TrueSkill rating (mu ± sigma)", height=_height(len(order)))


def rank_distribution_chart(distribution: pl.DataFrame, order: Sequence[str]) -> alt.Chart:
    return alt.Chart(distribution).mark_bar().encode(
        y=alt.Y("model:N", sort=list(order), title=None),
        x=alt.X("share:Q", stack="normalize", title="share of seats played", axis=alt.Axis(format="%")),
        color=alt.Color("rank:O", scale=alt.Scale(scheme="viridis"), title="final rank"),
        order=alt.Order("rank:Q"),
        tooltip=["model", "rank", "count", alt.Tooltip("share:Q", format=".1%")],
    ).properties(title="Rank distribution (1 = winner)", height=_height(len(order)))


def bar_chart(stats: pl.DataFrame, column: str, title: str, axis_title: str, percent: bool = False) -> alt.Chart:
    data = stats.select("model", column).drop_nulls().sort([column, "model"], descending=[True, False])
    axis = alt.Axis(format="%") if percent else alt.Axis()
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("model:N", sort=data["model"].to_list(), title=None),
        x=alt.X(f"{column}:Q", title=axis_title, axis=axis),
        tooltip=["model", column],
    ).properties(title=title, height=_height(data.height))


def charts(board: pl.DataFrame, distribution: pl.DataFrame, stats: pl.DataFrame) -> dict[str, alt.Chart]:
    order = board["model"].to_list()
    return {
        "trueskill": trueskill_chart(board),
        "rank_distribution": rank_distribution_chart(distribution, order),
        "betrayal_betrayer": bar_chart(stats, "betrayal_rate", "Buddy betrayal rate (betrayer)",
                                       "votes against the private partner / private chats", percent=True),
        "betrayal_victim": bar_chart(stats, "betrayed_rate", "Buddy betrayal rate (victim)",
                                     "voted against by the private partner / private chats", percent=True),
        "first_place": bar_chart(stats, "wins", "First-place finishes", "games won"),
        "earliest_out": bar_chart(stats, "first_out", "Eliminated first", "games out first"),
        "final2_win_rate": bar_chart(stats, "final2_win_rate", "Final 2 → win rate",
                                     "wins / games in the final two", percent=True),
        "average_words": bar_chart(stats, "avg_words", "Words per message", "average words (before any cut)"),
    }


def write_plots(board: pl.DataFrame, distribution: pl.DataFrame, stats: pl.DataFrame, out_dir: str | Path,
                formats: Sequence[str] = FORMATS) -> list[Path]:
    written: list[Path] = []
    for name, chart in charts(board, distribution, stats).items():
        written += save_chart(chart, Path(out_dir) / name, formats)
    return written
