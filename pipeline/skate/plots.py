"""The spec's plots, each built from one of the stage's tables."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

from pipeline.core.artifacts import save_chart


def trueskill_history(history: pl.DataFrame) -> alt.TopLevelMixin:
    data = history.with_columns(lo=pl.col("mu") - pl.col("sigma"), hi=pl.col("mu") + pl.col("sigma")).to_dicts()
    base = alt.Chart(alt.Data(values=data)).encode(
        x=alt.X("step:Q", title="questions so far", axis=alt.Axis(tickMinStep=1, format="d")),
        color=alt.Color("player:N", title="model"),
    )
    band = base.mark_area(opacity=0.15).encode(y=alt.Y("lo:Q", title="TrueSkill mu ± sigma"), y2="hi:Q")
    line = base.mark_line(point=True).encode(
        y="mu:Q",
        tooltip=[
            "player:N",
            "step:Q",
            "round:O",
            alt.Tooltip("mu:Q", format=".2f"),
            alt.Tooltip("sigma:Q", format=".2f"),
        ],
    )
    return (
        (band + line)
        .properties(width=360, height=260)
        .facet(column=alt.Column("mode:N", title="ranking mode"))
        .properties(title="TrueSkill over the game")
    )


def asking_vs_answering(skills: pl.DataFrame) -> alt.TopLevelMixin:
    shown = skills.drop_nulls(["asking_skill", "answering_skill"])
    data = shown.to_dicts()
    left_out = sorted(set(skills["model"]) - set(shown["model"]))
    note = (
        f"not shown (answer-only, entered no question, or answered no one else's): {', '.join(left_out)}"
        if left_out
        else ""
    )
    base = alt.Chart(alt.Data(values=data)).encode(
        x=alt.X(
            "answering_skill:Q",
            title="answering skill (mean p(correct) on others' questions)",
            scale=alt.Scale(domain=[0, 1]),
        ),
        y=alt.Y("asking_skill:Q", title="asking skill (1 - others' mean p(correct))", scale=alt.Scale(domain=[0, 1])),
    )
    return (
        base.mark_point(size=80, filled=True).encode(color="model:N")
        + base.mark_text(dx=8, align="left").encode(text="model:N")
    ).properties(title=alt.Title("Asking vs answering skill", subtitle=note), width=360, height=360)


def cumulative_p_correct(cumulative: pl.DataFrame) -> alt.TopLevelMixin:
    return (
        alt.Chart(alt.Data(values=cumulative.to_dicts()))
        .mark_line(point=True)
        .encode(
            x=alt.X("round:O", title="round"),
            y=alt.Y("cumulative_p_correct:Q", title="cumulative mean p(correct)", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("setter:N", title="setter"),
            tooltip=["setter:N", "questions:N", "round:O", alt.Tooltip("cumulative_p_correct:Q", format=".2f"), "n:Q"],
        )
        .properties(width=300, height=240)
        .facet(row=alt.Row("questions:N", title=None, sort="descending"))
        .properties(title="Cumulative p(correct) on each setter's questions: its own, and the other setters'")
    )


def self_preference(skills: pl.DataFrame) -> alt.TopLevelMixin:
    long = (
        skills.unpivot(
            index="model",
            on=["self_preference", "self_preference_confident"],
            variable_name="questions",
            value_name="gap",
        )
        .drop_nulls("gap")
        .with_columns(
            pl.col("questions").replace(
                {"self_preference": "all its questions", "self_preference_confident": "its p(correct) >= 0.5"}
            )
        )
    )
    return (
        alt.Chart(alt.Data(values=long.to_dicts()))
        .mark_bar()
        .encode(
            x=alt.X("model:N", title="setter"),
            xOffset="questions:N",
            y=alt.Y("gap:Q", title="own p(correct) - others' mean"),
            color=alt.Color("questions:N", title="questions"),
            tooltip=["model:N", "questions:N", alt.Tooltip("gap:Q", format=".3f")],
        )
        .properties(title="Self-preference", width=360, height=260)
    )


def p_correct_variance(variance: pl.DataFrame) -> alt.TopLevelMixin:
    return (
        alt.Chart(alt.Data(values=variance.to_dicts()))
        .mark_bar()
        .encode(
            x=alt.X("variance:Q", bin=alt.Bin(maxbins=20), title="variance of p(correct) across models"),
            y=alt.Y("count():Q", title="questions"),
        )
        .properties(title="Points of difference (see points_of_difference.md)", width=360, height=240)
    )


def write_plots(
    out: str | Path, history: pl.DataFrame, skills: pl.DataFrame, cumulative: pl.DataFrame, variance: pl.DataFrame
) -> list[Path]:
    folder = Path(out) / "plots"
    charts = {
        "trueskill_history": trueskill_history(history),
        "asking_vs_answering": asking_vs_answering(skills),
        "cumulative_p_correct": cumulative_p_correct(cumulative),
        "self_preference": self_preference(skills),
        "p_correct_variance": p_correct_variance(variance),
    }
    written: list[Path] = []
    for name, chart in charts.items():
        written += save_chart(chart, folder / name)
    return written
