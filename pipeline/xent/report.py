"""Scores, playability curves, TrueSkill over per-map rankings, metrics.json and plots.

- round total = the sum of the rewards to the player's roles (null when the round errored);
- map score = the best round; a map on which one of the player's rounds errored is *voided* for
  that player (the reference's run of that map raises, so it has no score there);
- normalized score (the reference's) = map score / |best map score of any non-voided player on the
  map|, null for voided maps and for maps whose best is exactly 0;
- `xent_score` (the headline, the reference's) = mean over the player's games of the mean over the
  game's maps of the normalized score, x 100; `xent_score_<game>` the per-game means x 100;
  `xent_score_pooled` = the mean over all maps pooled across games, x 100 (our other aggregate);
- a map is flagged when no player's running best improves after round 1;
- `empty_at_token_limit` = the model's replies in Xent's play jobs (as player or as opponent) that
  the token limit cut before any visible text (a reasoning model whose hidden reasoning spent the
  whole budget), counted from the calls tables (pipeline.core.models.reply_budgets.empty_at_limit_counts);
- `map_set_differs` (only when the run plays an imported map set) = the params fields in which
  the run is not the map set's (judge, judge_dtype, rounds, players, ...; pipeline.xent.settings),
  [] when none: a published table shows whether its scores are comparable with the reference's.

Scores and bits are rounded to `SCORE_DIGITS` / `BITS_DIGITS` decimals: docs/xent.md gives the
measured run-to-run spread of the judge that justifies them. The ratings follow the metrics
record's rule (pipeline/core/artifacts/metrics_record.py), as every benchmark's do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts import CallsSchema, read_table, seed_from, write_table
from pipeline.core.artifacts.metrics_record import MetricsRecord, ModelMetrics
from pipeline.core.artifacts.schemas import empty_table
from pipeline.core.artifacts.tables import declared_columns
from pipeline.core.models import empty_at_limit_counts
from pipeline.core.rating.joint import EVENTS_FILE, write_rating_events
from pipeline.core.rating.multipass import FreeForAll, RatingParams, rating_summary
from pipeline.xent.config import load_xent
from pipeline.xent.schemas import (
    MapsSchema,
    RewardsSchema,
    RoundsSchema,
    RoundStatusSchema,
    ScoresSchema,
    XentRatingsSchema,
)


def report_outputs(root: str) -> list[str]:
    """What `report` writes: the plots, as declared (xent.outputs)."""
    from pipeline.xent.outputs import written

    return written("report", root)


def round_table(rewards: pl.DataFrame, errors: pl.DataFrame) -> pl.DataFrame:
    """Every played round (from `errors`: game, map_id, model, round, error) with its total and running best."""
    totals = rewards.group_by(["game", "map_id", "model", "round"]).agg(pl.col("total_bits").sum())
    rounds = errors.join(totals, on=["game", "map_id", "model", "round"], how="left")
    rounds = rounds.with_columns(
        pl.when(pl.col("error").is_null()).then(pl.col("total_bits").fill_null(0.0)).otherwise(None).alias("total_bits")
    ).sort(["game", "map_id", "model", "round"])
    return rounds.with_columns(
        pl.col("total_bits").cum_max().over(["game", "map_id", "model"]).alias("running_best")
    ).select(["game", "map_id", "model", "round", "total_bits", "running_best", "error"])


def score_table(rounds: pl.DataFrame) -> pl.DataFrame:
    """Per (game, map, model): best round, voided flag and the reference's normalized score."""
    scores = rounds.group_by(["game", "map_id", "model"]).agg(
        pl.col("total_bits").max().alias("map_score"),
        pl.len().cast(pl.Int64).alias("rounds"),
        pl.col("error").is_not_null().any().alias("voided"),
    )
    best = (
        scores.filter(~pl.col("voided") & pl.col("map_score").is_not_null())
        .group_by(["game", "map_id"])
        .agg(pl.col("map_score").max().alias("best"))
    )
    scores = scores.join(best, on=["game", "map_id"], how="left")
    normalized = (
        pl.when(pl.col("voided") | pl.col("map_score").is_null() | pl.col("best").is_null() | (pl.col("best") == 0))
        .then(None)
        .otherwise(pl.col("map_score") / pl.col("best").abs())
    )
    return scores.with_columns(normalized.alias("normalized_score")).select(
        ["game", "map_id", "model", "map_score", "normalized_score", "voided", "rounds"]
    )


def headline_scores(scores: pl.DataFrame) -> dict[str, dict[str, float | None]]:
    """Per model: the reference's score (mean of per-game means, x100), per-game and pooled means."""
    out: dict[str, dict[str, float | None]] = {}
    valid = scores.filter(pl.col("normalized_score").is_not_null())
    for model in sorted(scores["model"].unique().to_list()):
        mine = valid.filter(pl.col("model") == model)
        per_game = {
            game: _mean(mine.filter(pl.col("game") == game)["normalized_score"].to_list())
            for game in sorted(scores.filter(pl.col("model") == model)["game"].unique().to_list())
        }
        game_means = [v for v in per_game.values() if v is not None]
        entry: dict[str, float | None] = {
            "xent_score": _mean(game_means),
            "xent_score_pooled": _mean(mine["normalized_score"].to_list()),
        }
        entry.update({f"xent_score_{game}": value for game, value in per_game.items()})
        out[model] = {k: (None if v is None else v * 100) for k, v in entry.items()}
    return out


def _mean(values: list[float]) -> float | None:
    # math.fsum: the sum does not depend on the order the rows come in
    return math.fsum(values) / len(values) if values else None


def map_table(rounds: pl.DataFrame, scores: pl.DataFrame) -> pl.DataFrame:
    first = rounds.filter(pl.col("round") == 1).select(["game", "map_id", "model", pl.col("total_bits").alias("first")])
    later = (
        rounds.filter(pl.col("round") > 1)
        .group_by(["game", "map_id", "model"])
        .agg(pl.col("total_bits").max().alias("later"))
    )
    improved = (
        first.join(later, on=["game", "map_id", "model"], how="left")
        .with_columns(
            (pl.col("later").is_not_null() & (pl.col("first").is_null() | (pl.col("later") > pl.col("first")))).alias(
                "improved"
            )
        )
        .group_by(["game", "map_id"])
        .agg(pl.col("improved").any().alias("improved_after_round_1"))
    )
    best = (
        scores.filter(pl.col("map_score").is_not_null() & ~pl.col("voided"))  # a voided score is no map's best
        .sort(["map_score", "model"], descending=[True, False])
        .group_by(["game", "map_id"], maintain_order=True)
        .agg(pl.col("map_score").first().alias("best_score"), pl.col("model").first().alias("best_model"))
    )
    maps = scores.select(["game", "map_id"]).unique().join(best, on=["game", "map_id"], how="left")
    maps = maps.join(improved, on=["game", "map_id"], how="left").with_columns(
        pl.col("improved_after_round_1").fill_null(False)
    )
    return maps.with_columns((~pl.col("improved_after_round_1")).alias("flagged")).select(
        ["game", "map_id", "best_score", "best_model", "improved_after_round_1", "flagged"]
    )


def ranked_event(scores: Mapping[str, tuple[float | None, bool]]) -> FreeForAll | None:
    """One map's players (model -> (map score, voided)) ranked by map score: equal scores tie, a
    voided map (or none) ranks its player last; None with fewer than two players. The adaptive
    schedule's tables are rated by the same rule (pipeline.xent.adaptive)."""
    if len(scores) < 2:
        return None
    values = {m: (s if s is not None and not void else -math.inf) for m, (s, void) in scores.items()}
    ordered = sorted(set(values.values()), reverse=True)
    return FreeForAll({m: ordered.index(v) + 1 for m, v in values.items()})


def rating_events(scores: pl.DataFrame) -> list[FreeForAll]:
    """Per map, players ranked by map score (`ranked_event`). Under the adaptive schedule a map's
    players are those of every table dealt it: one event holds all their scores, as in the fixed
    schedule."""
    return [event for _, event in map_events(scores)]


def map_events(scores: pl.DataFrame) -> list[tuple[str, FreeForAll]]:
    """("game/map_id", its event) per map with two players or more, in (game, map) order."""
    events = []
    for (game, map_id), group in scores.sort(["game", "map_id", "model"]).group_by(
        ["game", "map_id"], maintain_order=True
    ):
        event = ranked_event(
            {m: (s, void) for m, s, void in zip(group["model"], group["map_score"], group["voided"], strict=True)}
        )
        if event is not None:
            events.append((f"{game}/{map_id}", event))
    return events


def write_rate(params_path: str, out: str, models_path: str = "params/models.yaml") -> dict[str, Any]:
    """The rescored tables in; rounds, scores, maps, TrueSkill ratings and metrics.json out."""
    params = load_xent(params_path)
    root = Path(out)
    rewards = read_table(root / "rewards.parquet", RewardsSchema)
    played = read_table(root / "round_status.parquet", RoundStatusSchema).select(
        ["game", "map_id", "model", "round", "error"]
    )
    rounds = round_table(rewards, played)
    write_table(root / "rounds.parquet", rounds, RoundsSchema, sort_by=["game", "map_id", "model", "round"])
    scores = score_table(rounds)
    write_table(root / "scores.parquet", scores, ScoresSchema, sort_by=["game", "map_id", "model"])
    maps = map_table(rounds, scores)
    write_table(root / "maps.parquet", maps, MapsSchema, sort_by=["game", "map_id"])

    keyed = map_events(scores)
    write_rating_events(root / EVENTS_FILE, keyed)
    events = [event for _, event in keyed]
    rating = params.rating
    if events:
        ratings = rating_summary(
            events,
            rating.rating_params(),
            rating.passes,
            seed_from("xent-ratings", params.seed),
            rating.bootstrap_resamples,
        )
    else:
        ratings = empty_table(XentRatingsSchema)
    ratings = ratings.select(list(declared_columns(XentRatingsSchema)))
    write_table(root / "ratings.parquet", ratings, XentRatingsSchema, sort_by=["rank", "player"])

    calls_path = root / "calls.parquet"  # every play job's calls, written by rescore
    empty = empty_at_limit_counts(read_table(calls_path, CallsSchema)) if calls_path.exists() else {}
    metrics = metrics_record(scores, ratings, maps, empty)
    if params.schedule.adaptive.enabled:  # the adaptive schedule's correction (docs/adaptive.md); fixed runs as before
        metrics = metrics.with_metrics(opponent_rate_metrics(events, ratings, rating.rating_params()))
    if params.map_set:
        differs = map_set_fields_differing(params, params_path, models_path)
        metrics = metrics.with_metrics({model: {"map_set_differs": differs} for model in metrics.models})
    metrics.write(root / "metrics.json")
    return {
        "models": len(metrics.models),
        "maps": maps.height,
        "flagged_maps": int(maps["flagged"].sum()),
        "rating_events": len(events),
    }


def opponent_rate_metrics(
    events: Sequence[FreeForAll], ratings: pl.DataFrame, params: RatingParams
) -> dict[str, dict[str, float | int | None]]:
    """Per model, the share of the other players of its maps it scored above (a tie counts 1/2), two
    ways (core's `opponent_rates`): `opponent_win_rate`, naive over all its maps, so weighted by how
    often the schedule compared it with each player; `opponent_win_rate_uniform`, the mean over the
    other models of its rate against each (a uniform mix, what the fixed schedule's naive rate
    estimates), a pair never compared entering at TrueSkill's prediction from the ratings' mu and
    sigma (`opponent_win_rate_imputed` counts them). Written only under the adaptive schedule."""
    from pipeline.core.rating.adaptive import Standing, opponent_rates

    standings = {
        row["player"]: Standing(float(row["mu"]), float(row["sigma"]))
        for row in ratings.iter_rows(named=True)
        if row["mu"] is not None and row["sigma"] is not None and row["sigma"] > 0
    }
    return opponent_rates(events, standings, params).metrics(standings)


def map_set_fields_differing(params: Any, params_path: str, models_path: str) -> list[str]:
    """The fields in which the run is not its map set's (said on stderr too); [] when none."""
    import sys

    from pipeline.core.models import load_models
    from pipeline.xent.settings import differences_note, map_set_differences

    models = load_models(models_path) if Path(models_path).exists() else None
    differences = map_set_differences(params, models)
    note = differences_note(params, differences, params_path)
    if note:
        print(note, file=sys.stderr)
    return [d.field for d in differences]


def write_report(out: str) -> list[str]:
    """The plots, from the tables `rate` wrote."""
    from pipeline.xent.plots import write_plots

    root = Path(out)
    write_plots(
        read_table(root / "rounds.parquet", RoundsSchema),
        read_table(root / "scores.parquet", ScoresSchema),
        root / "plots",
    )
    return report_outputs(out)


SCORE_DIGITS = 2  # xent scores (x100 scale)
BITS_DIGITS = 3  # bits


def _round(value: Any, digits: int) -> Any:
    """Xent's own numbers, to the digits its judge's measured spread allows (docs/xent.md); the
    record's rule rounds everything else."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return round(float(value), digits)


def metrics_record(
    scores: pl.DataFrame, ratings: pl.DataFrame, maps: pl.DataFrame, empty_at_limit: dict[str, int] | None = None
) -> MetricsRecord:
    """Per model: its rating and rated games (the ranked maps it played), the scores, and
    `empty_at_token_limit` (replies the token limit cut before any visible text, per roster name:
    `empty_at_limit_counts` of the calls; 0 when none)."""
    empty = empty_at_limit or {}
    by_player = {row["player"]: row for row in ratings.iter_rows(named=True)}
    headline = headline_scores(scores)
    models = {}
    for model in sorted(scores["model"].unique().to_list()):
        mine = scores.filter(pl.col("model") == model)
        entry: dict[str, Any] = {name: _round(value, SCORE_DIGITS) for name, value in headline[model].items()}
        kept = mine.filter(~pl.col("voided"))["map_score"].drop_nulls().to_list()
        entry.update(
            {
                "maps_played": mine.height,
                "maps_voided": int(mine["voided"].sum()),
                "mean_map_score_bits": _round(_mean(kept), BITS_DIGITS),
                "empty_at_token_limit": int(empty.get(model, 0)),
            }
        )
        row = by_player.get(model)
        models[model] = ModelMetrics.rated(row, entry) if row else ModelMetrics.unrated(entry)
    return MetricsRecord(models=models)
