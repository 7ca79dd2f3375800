"""The paper's analyses of a SKATE game, beyond the headline ranking.

- stability (paper section 6.2, Figure 7): models join in a given order; after each arrival the
  game is re-rated with only the models present (the questions their setters asked, answered by
  them), so one sees whether the existing models keep their ratings and order;
- answer-only re-ranking (section 6.1, Figure 6): the setting models ranked on their own
  questions, then re-ranked with the answer-only models answering the same questions;
- strategy comparison (section 5 and Appendix C): the same roster played once per augmentation
  strategy; ratings and setting metrics side by side.

The first two re-rate subsets of the one game played (cheap, from pcorrect.parquet). Within a
game a setter's questions depend on the other players only through the strategies that show
their p(correct) (full_personal_context, full_context): with the others, the subset game is the
game those models would have played. Rank agreement is Kendall's tau over the models common to
two rankings (1: same order).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts.metrics_record import read_metrics
from pipeline.skate.config import SkateParams
from pipeline.skate.ranking import question_games, ratings

_RATING_COLUMNS = {"player": pl.String, "mu": pl.Float64, "sigma": pl.Float64, "rank": pl.Int64}


def kendall_tau(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Rank agreement of two orderings (best first) over the names they share; None below 2."""
    common = [name for name in first if name in set(second)]
    if len(common) < 2:
        return None
    place = {name: i for i, name in enumerate(n for n in second if n in set(common))}
    pairs = list(combinations(common, 2))
    concordant = sum(1 for a, b in pairs if place[a] < place[b])
    return round((2 * concordant - len(pairs)) / len(pairs), 6)


def rate_subset(
    pcorrect: pl.DataFrame, params: SkateParams, setters: Sequence[str], answerers: Sequence[str]
) -> pl.DataFrame:
    """player, mu, sigma, rank of the primary mode on the questions of `setters`, answered by `answerers`."""
    subset = pcorrect.filter(pl.col("setter").is_in(list(setters)) & pl.col("answerer").is_in(list(answerers)))
    if subset.height == 0 or subset["answerer"].n_unique() < 2:
        return pl.DataFrame(schema=_RATING_COLUMNS)
    mode = params.ranking.primary
    games = question_games(subset, mode, params.answering.sigma_stop, params.ranking.pass_threshold, list(setters))
    table = ratings(games, params.ranking.rating_params(), params.ranking.passes, params.seed, mode, resamples=0)
    return table.select(list(_RATING_COLUMNS)).cast(_RATING_COLUMNS)  # type: ignore[arg-type]  # polars types cast()'s mapping keys as str | Selector | dtype (invariant)


def stability_order(params: SkateParams) -> list[str]:
    """The join order (params check that it names only the game's models)."""
    return list(params.analyses.stability_order or params.answerers)


def stability_table(pcorrect: pl.DataFrame, params: SkateParams) -> pl.DataFrame:
    """One row per (models present, player): the rating after each model joins, in order."""
    order = stability_order(params)
    frames = []
    for k in range(2, len(order) + 1):
        present = order[:k]
        setters = [m for m in present if m in params.players]
        table = rate_subset(pcorrect, params, setters, present)
        if table.height:
            frames.append(table.with_columns(pl.lit(k, pl.Int64).alias("models"), pl.lit(order[k - 1]).alias("joined")))
    schema = {"models": pl.Int64, "joined": pl.String, **_RATING_COLUMNS}
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames).select(list(schema)).sort(["models", "rank", "player"])


def answer_only_table(pcorrect: pl.DataFrame, params: SkateParams) -> pl.DataFrame:
    """Figure 6's first two panels: the setters alone, then with the answer-only models."""
    panels = (("setters only", params.players), ("with answer-only models", params.answerers))
    frames = [
        rate_subset(pcorrect, params, params.players, answerers).with_columns(pl.lit(name).alias("panel"))
        for name, answerers in panels
    ]
    schema = {"panel": pl.String, **_RATING_COLUMNS}
    # polars types cast()'s mapping keys as str | Selector | dtype (invariant), hence the ignore
    rated = [f.select(list(schema)).cast(schema) for f in frames if f.height]  # type: ignore[arg-type]
    return pl.concat(rated or [pl.DataFrame(schema=schema)]).sort(["panel", "rank", "player"])


def _order(table: pl.DataFrame) -> list[str]:
    return table.sort(["rank", "player"])["player"].to_list()


def stability_summary(stability: pl.DataFrame) -> list[dict[str, Any]]:
    """Per arrival: Kendall's tau of the models already present, before and after it joined."""
    steps = sorted(set(stability["models"].to_list()))
    result = []
    for before, after in pairwise(steps):
        earlier = stability.filter(pl.col("models") == before)
        later = stability.filter(pl.col("models") == after)
        shift = (
            earlier.join(later, on="player", suffix="_after")
            .select((pl.col("mu_after") - pl.col("mu")).abs().max())
            .item()
        )
        result.append(
            {
                "models": after,
                "joined": later["joined"][0],
                "kendall_tau_existing": kendall_tau(_order(earlier), _order(later)),
                "max_abs_mu_shift_existing": None if shift is None else round(shift, 4),
            }
        )
    return result


def strategy_rows(strategy: str, folder: Path) -> list[dict[str, Any]]:
    """One row per model of one strategy's game, from its metrics.json (read as the metrics record)."""
    metrics = read_metrics(folder / "metrics.json").to_json()
    keys = (
        "trueskill_mu",
        "trueskill_sigma",
        "trueskill_rank",
        "asking_skill",
        "answering_skill",
        "self_preference",
        "p_correct_own_questions",
        "valid_rate",
        "questions_entered",
    )
    return [
        {"strategy": strategy, "model": model, **{k: values.get(k) for k in keys}}
        for model, values in sorted(metrics.items())
    ]


STRATEGY_COLUMNS = {
    "strategy": pl.String,
    "model": pl.String,
    "trueskill_mu": pl.Float64,
    "trueskill_sigma": pl.Float64,
    "trueskill_rank": pl.Int64,
    "asking_skill": pl.Float64,
    "answering_skill": pl.Float64,
    "self_preference": pl.Float64,
    "p_correct_own_questions": pl.Float64,
    "valid_rate": pl.Float64,
    "questions_entered": pl.Int64,
}


def strategy_table(folders: dict[str, Path]) -> pl.DataFrame:
    rows = [row for strategy, folder in folders.items() for row in strategy_rows(strategy, folder)]
    return pl.DataFrame(rows, schema=STRATEGY_COLUMNS, orient="row").sort(["strategy", "model"])


def strategy_summary(table: pl.DataFrame, reference: str) -> list[dict[str, Any]]:
    """Per strategy: Kendall's tau of its ranking against the reference strategy's."""

    def order(strategy: str) -> list[str]:
        rows = table.filter((pl.col("strategy") == strategy) & pl.col("trueskill_rank").is_not_null())
        return rows.sort(["trueskill_rank", "model"])["model"].to_list()

    return [
        {"strategy": s, "kendall_tau_vs_" + reference: kendall_tau(order(reference), order(s))}
        for s in sorted(set(table["strategy"].to_list()))
    ]
