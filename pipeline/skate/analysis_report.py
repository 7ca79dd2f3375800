"""Writing the analyses (pipeline/skate/analyses.py): tables, a JSON summary and plots under
results/skate/analyses/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt
import polars as pl

from pipeline.core.artifacts import read_table, save_chart, write_json_atomic, write_table
from pipeline.skate.analyses import (
    answer_only_table,
    kendall_tau,
    stability_summary,
    stability_table,
    strategy_summary,
    strategy_table,
)
from pipeline.skate.config import SkateParams
from pipeline.skate.schemas import (
    AnswerOnlyRankingSchema,
    PCorrectSchema,
    StabilitySchema,
    StrategyComparisonSchema,
)


def stability_chart(table: pl.DataFrame) -> alt.TopLevelMixin:
    return (
        alt.Chart(alt.Data(values=table.to_dicts()))
        .mark_line(point=True)
        .encode(
            x=alt.X("models:O", title="models in the game (joining in order)"),
            y=alt.Y("mu:Q", title="TrueSkill mu", scale=alt.Scale(zero=False)),
            color=alt.Color("player:N", title="model"),
            tooltip=["player:N", "models:O", "joined:N", alt.Tooltip("mu:Q", format=".2f"), "rank:Q"],
        )
        .properties(title="Ranking stability as models join", width=380, height=260)
    )


def answer_only_chart(table: pl.DataFrame) -> alt.TopLevelMixin:
    return (
        alt.Chart(alt.Data(values=table.to_dicts()))
        .mark_line(point=True)
        .encode(
            x=alt.X("panel:N", title=None, sort=["setters only", "with answer-only models"]),
            y=alt.Y("mu:Q", title="TrueSkill mu", scale=alt.Scale(zero=False)),
            color=alt.Color("player:N", title="model"),
            tooltip=["player:N", "panel:N", alt.Tooltip("mu:Q", format=".2f"), "rank:Q"],
        )
        .properties(title="Re-ranking when answer-only models join", width=300, height=260)
    )


def strategy_chart(table: pl.DataFrame) -> alt.TopLevelMixin:
    long = table.unpivot(
        index=["strategy", "model"], on=["trueskill_mu", "asking_skill"], variable_name="measure", value_name="value"
    ).drop_nulls("value")
    return (
        alt.Chart(alt.Data(values=long.to_dicts()))
        .mark_line(point=True)
        .encode(
            x=alt.X("strategy:N", title="augmentation strategy"),
            y=alt.Y("value:Q", title=None, scale=alt.Scale(zero=False)),
            color=alt.Color("model:N"),
            tooltip=["model:N", "strategy:N", "measure:N", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(width=300, height=240)
        .facet(column=alt.Column("measure:N", title=None))
        .resolve_scale(y="independent")
        .properties(title="Augmentation strategies compared (one game each)")
    )


def write_game_analyses(params: SkateParams, out: str | Path) -> dict[str, Any]:
    """Stability and answer-only re-ranking, from the game's pcorrect.parquet."""
    out = Path(out)
    folder = out / "analyses"
    pcorrect = read_table(out / "pcorrect.parquet", PCorrectSchema)
    stability = stability_table(pcorrect, params)
    reranked = answer_only_table(pcorrect, params)
    write_table(folder / "stability.parquet", stability, StabilitySchema, sort_by=["models", "player"])
    write_table(folder / "answer_only.parquet", reranked, AnswerOnlyRankingSchema, sort_by=["panel", "player"])
    panels = [
        reranked.filter(pl.col("panel") == p).sort(["rank", "player"])["player"].to_list()
        for p in ("setters only", "with answer-only models")
    ]
    summary = {
        "mode": params.ranking.primary,
        "stability": stability_summary(stability),
        "answer_only": {
            "kendall_tau_setters": kendall_tau(*panels),
            "setters_only": panels[0],
            "with_answer_only": panels[1],
        },
    }
    write_json_atomic(folder / "game_analyses.json", summary)
    save_chart(stability_chart(stability), folder / "plots" / "stability")
    save_chart(answer_only_chart(reranked), folder / "plots" / "answer_only")
    return summary


def write_strategy_comparison(params: SkateParams, out: str | Path) -> dict[str, Any]:
    """The strategies' games (results/skate/strategies/<strategy>/) side by side."""
    if not params.analyses.strategies:
        return {}
    out = Path(out)
    folder = out / "analyses"
    table = strategy_table({s: out / "strategies" / s for s in params.analyses.strategies})
    write_table(folder / "strategies.parquet", table, StrategyComparisonSchema, sort_by=["strategy", "model"])
    reference = params.strategy if params.strategy in params.analyses.strategies else params.analyses.strategies[0]
    summary = {"reference": reference, "rank_agreement": strategy_summary(table, reference)}
    write_json_atomic(folder / "strategies.json", summary)
    save_chart(strategy_chart(table), folder / "plots" / "strategies")
    return summary
