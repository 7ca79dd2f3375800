"""Multi-pass TrueSkill over final ranks: each finished game is one free-for-all update.

The original's procedure (its README): every pass starts from fresh priors and rates all games
in a random order; the passes' results are summarized (`aggregate`: mean, or median). Every part
is a setting: prior mu and sigma, beta, tau, passes, seed, aggregate. TrueSkill's updates depend
on mu differences only, so the prior mu shifts every model by the same amount: `mu_rel` (mu minus
the field mean over rated models) compares with any published table whatever prior it used.

A model filling several seats of one game (allowed only when params say so) takes part in that
game's update once, with its best seat's rank; the models' ranks are renumbered 1..m, so they
never tie (draw probability 0). A game with fewer than two distinct models is not rated.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline.core.artifacts import seed_from
from pipeline.core.rating.multipass import FreeForAll, RatingParams, pass_ratings, rating_summary
from pipeline.elimination.config import RatingSettings


def rating_params(settings: RatingSettings) -> RatingParams:
    return settings.rating_params()


def rating_events(final_ranks: pl.DataFrame) -> list[FreeForAll]:
    """One event per finished game, in game id order."""
    return [event for _, event in game_events(final_ranks)]


def game_events(final_ranks: pl.DataFrame) -> list[tuple[str, FreeForAll]]:
    """(game id, its event) per finished game with two models or more, in game id order."""
    best = (
        final_ranks.filter(pl.col("rank").is_not_null())
        .group_by("game_id", "model")
        .agg(pl.col("rank").min().alias("best"))
        .sort("game_id", "best", "model")
    )
    events = []
    for (game,), group in best.group_by("game_id", maintain_order=True):
        models = group["model"].to_list()
        if len(models) >= 2:
            events.append((str(game), FreeForAll(ranks={m: i + 1 for i, m in enumerate(models)})))
    return events


def rating_seed(settings: RatingSettings) -> int:
    return seed_from("elimination", "rating", settings.seed)


def rate(
    final_ranks: pl.DataFrame, settings: RatingSettings, passes: int | None = None, bootstrap: int | None = None
) -> pl.DataFrame:
    """Per model: mu, sigma (means over passes), mu_sd, the bootstrap interval mu_lo..mu_hi,
    rank (by mu) and its bootstrap interval rank_lo..rank_hi (see `rating_summary`)."""
    events = rating_events(final_ranks)
    resamples = settings.bootstrap_resamples if bootstrap is None else bootstrap
    n_passes = passes or settings.passes
    table = rating_summary(
        events,
        rating_params(settings),
        n_passes,
        rating_seed(settings),
        resamples=resamples,
        bootstrap_passes=settings.bootstrap_passes,
    )
    if settings.aggregate == "median" and events:
        names, mus, sigmas = pass_ratings(events, rating_params(settings), n_passes, rating_seed(settings))
        medians = pl.DataFrame(
            {"player": list(names), "mu_median": np.median(mus, axis=0), "sigma_median": np.median(sigmas, axis=0)}
        )
        table = (
            table.join(medians, on="player", how="left")
            .with_columns(pl.col("mu_median").alias("mu"), pl.col("sigma_median").alias("sigma"))
            .drop("mu_median", "sigma_median")
        )
    return table.rename({"player": "model"})


def leaderboard(ratings: pl.DataFrame, final_ranks: pl.DataFrame) -> pl.DataFrame:
    """rank, rank_lo, rank_hi, model, mu, mu_rel, sigma, mu_lo, mu_hi, games, seats, points_sum,
    avg_points, rated_games, resamples, settled; sorted by mu. `mu_rel` is mu minus the mean mu of
    the rated models; `rated_games` the games behind the rating (with another model at the table),
    `settled` whether the rank interval is informative (core's `interval_settled`: else it is the
    whole field)."""
    played = (
        final_ranks.filter(pl.col("rank").is_not_null())
        .group_by("model")
        .agg(
            pl.col("game_id").n_unique().cast(pl.Int64).alias("games"),
            pl.len().alias("seats"),
            pl.col("points").sum().alias("points_sum"),
        )
    )
    # inner join: a model seen only in unrated games (no other model at the table) has no rating
    rated = ratings.select(
        "model",
        "mu",
        "sigma",
        "mu_lo",
        "mu_hi",
        "rank_lo",
        "rank_hi",
        pl.col("events").alias("rated_games"),
        "resamples",
        "settled",
    )
    table = played.join(rated, on="model", how="inner")
    table = table.with_columns(
        (pl.col("points_sum") / pl.col("seats")).alias("avg_points"),
        (pl.col("mu") - pl.col("mu").mean()).alias("mu_rel"),
    ).sort(["mu", "model"], descending=[True, False])
    table = table.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int64))
    return table.select(
        "rank",
        "rank_lo",
        "rank_hi",
        "model",
        "mu",
        "mu_rel",
        "sigma",
        "mu_lo",
        "mu_hi",
        "games",
        pl.col("seats").cast(pl.Int64),
        "points_sum",
        "avg_points",
        "rated_games",
        "resamples",
        "settled",
    )
