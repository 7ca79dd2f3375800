"""Every plot of the spec, each built from one table (leaderboard, rank distribution, model stats):
the original's charts under their names and definitions, our variants under names of their own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import altair as alt
import polars as pl

from pipeline.core.artifacts import FORMATS, save_chart

# the original's charts (its definitions), then our variants under their own names
PLOT_NAMES = (
    "trueskill",
    "rank_distribution",
    "betrayal_betrayer",
    "betrayal_victim",
    "first_place",
    "earliest_out",
    "final2_win_rate",
    "average_words",
    "betrayal_betrayer_per_chat",
    "betrayal_victim_per_chat",
    "first_place_raw_count",
    "earliest_out_raw_count",
    "average_words_all_messages",
)


def _height(n: int) -> int:
    return max(120, 22 * n)


def trueskill_chart(board: pl.DataFrame) -> alt.Chart:
    data = board.select("model", "mu", "sigma").with_columns(
        (pl.col("mu") - pl.col("sigma")).alias("low"), (pl.col("mu") + pl.col("sigma")).alias("high")
    )
    order = data["model"].to_list()  # already sorted by mu
    base = alt.Chart(data).encode(y=alt.Y("model:N", sort=order, title=None))
    title = "TrueSkill mu (error bar: ±sigma)"
    bars = base.mark_bar().encode(x=alt.X("mu:Q", title=title), tooltip=["model", "mu", "sigma"])
    errors = base.mark_errorbar(ticks=True).encode(x=alt.X("low:Q", title=title), x2="high:Q")
    return (bars + errors).properties(title="TrueSkill rating (mu ± sigma)", height=_height(len(order)))


def rank_distribution_chart(distribution: pl.DataFrame, order: Sequence[str]) -> alt.Chart:
    return (
        alt.Chart(distribution)
        .mark_bar()
        .encode(
            y=alt.Y("model:N", sort=list(order), title=None),
            x=alt.X("share:Q", stack="normalize", title="share of seats played", axis=alt.Axis(format="%")),
            color=alt.Color("rank:O", scale=alt.Scale(scheme="viridis"), title="final rank"),
            order=alt.Order("rank:Q"),
            tooltip=["model", "rank", "count", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(title="Rank distribution (1 = winner)", height=_height(len(order)))
    )


def bar_chart(
    stats: pl.DataFrame, column: str, title: str, axis_title: str, percent: bool = False, counts: Sequence[str] = ()
) -> alt.Chart:
    """One bar per model, largest first; `counts`: the columns behind the value, in the tooltip."""
    data = stats.select("model", column, *counts).drop_nulls(column).sort([column, "model"], descending=[True, False])
    axis = alt.Axis(format="%") if percent else alt.Axis()
    value = alt.Tooltip(f"{column}:Q", format=".1%" if percent else ".1f")
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("model:N", sort=data["model"].to_list(), title=None),
            x=alt.X(f"{column}:Q", title=axis_title, axis=axis),
            tooltip=["model", value, *counts],
        )
        .properties(title=title, height=_height(data.height))
    )


def original_charts(stats: pl.DataFrame) -> dict[str, alt.Chart]:
    """The original's social charts, as it defines them (rated games only)."""
    return {
        "betrayal_betrayer": bar_chart(
            stats,
            "buddy_betrayal_rate",
            "Buddy betrayal rate (betrayer)",
            "times it voted out that round's private-chat partner / private chats",
            percent=True,
            counts=("buddy_betrayals", "buddy_chats"),
        ),
        "betrayal_victim": bar_chart(
            stats,
            "buddy_betrayed_rate",
            "Buddy betrayal rate (victim)",
            "times that round's private-chat partner voted it out / private chats",
            percent=True,
            counts=("buddy_betrayed", "buddy_chats"),
        ),
        "first_place": bar_chart(
            stats,
            "first_place_rate",
            "First-place finishes",
            "share of appearances won",
            percent=True,
            counts=("wins", "seats"),
        ),
        "earliest_out": bar_chart(
            stats,
            "earliest_out_rate",
            "Eliminated first",
            "share of appearances out first",
            percent=True,
            counts=("first_out", "seats"),
        ),
        "final2_win_rate": bar_chart(
            stats,
            "final2_win_rate",
            "Final 2 → win rate",
            "wins / games in the final two",
            percent=True,
            counts=("final2_wins", "final2"),
        ),
        "average_words": bar_chart(
            stats,
            "words_per_message",
            "Average words per message",
            "words per public, tie-break and final statement",
            counts=("public_messages",),
        ),
    }


def our_charts(stats: pl.DataFrame) -> dict[str, alt.Chart]:
    """Our variants, named apart from the original's charts."""
    return {
        "betrayal_betrayer_per_chat": bar_chart(
            stats,
            "betrayal_rate",
            "Private chats ending in a vote against the partner (every log)",
            "chats with a vote or re-vote against the partner / private chats",
            percent=True,
            counts=("betrayals", "private_chats"),
        ),
        "betrayal_victim_per_chat": bar_chart(
            stats,
            "betrayed_rate",
            "Private chats ending in the partner's vote against it (every log)",
            "chats whose partner voted against it / private chats",
            percent=True,
            counts=("betrayed", "private_chats"),
        ),
        "first_place_raw_count": bar_chart(stats, "wins", "First-place finishes (count)", "games won"),
        "earliest_out_raw_count": bar_chart(stats, "first_out", "Eliminated first (count)", "games out first"),
        "average_words_all_messages": bar_chart(
            stats,
            "avg_words",
            "Words per message, private messages included",
            "average words (every message, before any cut)",
            counts=("messages",),
        ),
    }


def charts(board: pl.DataFrame, distribution: pl.DataFrame, stats: pl.DataFrame) -> dict[str, alt.Chart]:
    order = board["model"].to_list()
    return {
        "trueskill": trueskill_chart(board),
        "rank_distribution": rank_distribution_chart(distribution, order),
        **original_charts(stats),
        **our_charts(stats),
    }


def write_plots(
    board: pl.DataFrame,
    distribution: pl.DataFrame,
    stats: pl.DataFrame,
    out_dir: str | Path,
    formats: Sequence[str] = FORMATS,
) -> list[Path]:
    written: list[Path] = []
    for name, chart in charts(board, distribution, stats).items():
        written += save_chart(chart, Path(out_dir) / name, formats)
    return written
