"""Social metrics per model, from the tidy tables.

- betrayal rate (betrayer): rounds in which the model voted (or re-voted) against the seat it had
  just talked with in private, over its private chats (pairings). As victim: the same seen from
  the partner who was voted against.
- final-2 win rate: wins over games in which it reached the last two.
- first place / earliest out: seats that finished first / were eliminated first.
- wordiness: words per message before any cut (the original did not enforce limits, ours cut, so
  the words a model wrote stay measurable), over public, tie-break, plea and private messages.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl


def _rate(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    return pl.when(denominator > 0).then(numerator / denominator).otherwise(None)


def betrayals(pairs: pl.DataFrame, votes: pl.DataFrame) -> pl.DataFrame:
    """One row per (game, round, speaker, partner) direction, with `betrayed` when the seat voted
    against its partner of that round."""
    directed = pl.concat([
        pairs.select("game_id", "round", pl.col("seat_a").alias("seat"), pl.col("seat_b").alias("partner"),
                     pl.col("model_a").alias("model"), pl.col("model_b").alias("partner_model")),
        pairs.select("game_id", "round", pl.col("seat_b").alias("seat"), pl.col("seat_a").alias("partner"),
                     pl.col("model_b").alias("model"), pl.col("model_a").alias("partner_model")),
    ])
    against = (
        votes.filter(pl.col("phase").is_in(["vote", "revote"]) & pl.col("target_seat").is_not_null())
        .select("game_id", "round", pl.col("voter_seat").alias("seat"), pl.col("target_seat").alias("partner"))
        .unique()
        .with_columns(pl.lit(True).alias("betrayed"))
    )
    return directed.join(against, on=["game_id", "round", "seat", "partner"], how="left").with_columns(
        pl.col("betrayed").fill_null(False))


def model_stats(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    ranks = tables["final_ranks"].filter(pl.col("rank").is_not_null())
    placed = ranks.group_by("model").agg(
        pl.col("game_id").n_unique().alias("games"),
        pl.len().alias("seats"),
        (pl.col("rank") == 1).sum().alias("wins"),
        (pl.col("rank") == pl.col("seats")).sum().alias("first_out"),
        (pl.col("rank") <= 2).sum().alias("final2"),
        (pl.col("rank") == 1).sum().alias("final2_wins"),
    )
    chats = betrayals(tables["pairs"], tables["votes"])
    as_betrayer = chats.group_by("model").agg(pl.len().alias("private_chats"),
                                              pl.col("betrayed").sum().alias("betrayals"))
    as_victim = chats.group_by(pl.col("partner_model").alias("model")).agg(
        pl.col("betrayed").sum().alias("betrayed"))
    words = tables["messages"].filter(pl.col("model").is_not_null()).group_by("model").agg(
        pl.len().alias("messages"), pl.col("words").mean().alias("avg_words"),
        pl.col("cut").sum().alias("cut_messages"), pl.col("empty_at_token_limit").sum().alias("empty_messages"))
    votes = tables["votes"].filter(pl.col("voter_model").is_not_null()).group_by(
        pl.col("voter_model").alias("model")).agg(pl.len().alias("votes_cast"),
                                                  (~pl.col("valid")).sum().alias("invalid_votes"),
                                                  pl.col("token_limit_replies").sum().alias("empty_votes"))
    table = placed
    for other in (as_betrayer, as_victim, words, votes):
        table = table.join(other, on="model", how="left")
    counts = ["private_chats", "betrayals", "betrayed", "messages", "cut_messages", "votes_cast", "invalid_votes",
              "empty_messages", "empty_votes"]
    table = table.with_columns([pl.col(c).fill_null(0).cast(pl.Int64) for c in counts])
    table = table.with_columns((pl.col("empty_messages") + pl.col("empty_votes")).alias("empty_at_token_limit"))
    table = table.with_columns(
        _rate(pl.col("final2_wins"), pl.col("final2")).alias("final2_win_rate"),
        _rate(pl.col("betrayals"), pl.col("private_chats")).alias("betrayal_rate"),
        _rate(pl.col("betrayed"), pl.col("private_chats")).alias("betrayed_rate"),
    )
    return table.select(
        "model", "games", "seats", "wins", "first_out", "final2", "final2_wins", "final2_win_rate",
        "private_chats", "betrayals", "betrayal_rate", "betrayed", "betrayed_rate", "messages", "avg_words",
        "cut_messages", "votes_cast", "invalid_votes", "empty_at_token_limit",
    ).with_columns([pl.col(c).cast(pl.Int64) for c in ("games", "seats", "wins", "first_out", "final2",
                                                         "final2_wins")]).sort("model")


def rank_distribution(final_ranks: pl.DataFrame) -> pl.DataFrame:
    ranks = final_ranks.filter(pl.col("rank").is_not_null())
    counts = ranks.group_by("model", "rank").agg(pl.len().alias("count"))
    totals = ranks.group_by("model").agg(pl.len().alias("total"))
    return (counts.join(totals, on="model").with_columns((pl.col("count") / pl.col("total")).alias("share"))
            .select("model", pl.col("rank").cast(pl.Int64), pl.col("count").cast(pl.Int64), "share")
            .sort("model", "rank"))


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    return value


def metrics_json(leaderboard: pl.DataFrame, stats: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """`{model: {metric: value}}` for `dvc metrics` (stable keys, no NaN)."""
    stats_by_model = {row["model"]: row for row in stats.iter_rows(named=True)}
    result: dict[str, dict[str, Any]] = {}
    for row in leaderboard.iter_rows(named=True):
        s = stats_by_model.get(row["model"], {})
        result[row["model"]] = {k: _clean(v) for k, v in {
            "rank": row["rank"], "mu": row["mu"], "mu_rel": row["mu_rel"], "sigma": row["sigma"], "mu_lo": row["mu_lo"],
            "mu_hi": row["mu_hi"], "games": row["games"], "points_sum": row["points_sum"],
            "avg_points": row["avg_points"], "wins": s.get("wins"), "first_out": s.get("first_out"),
            "final2_win_rate": s.get("final2_win_rate"), "betrayal_rate": s.get("betrayal_rate"),
            "betrayed_rate": s.get("betrayed_rate"), "avg_words": s.get("avg_words"),
            "cut_messages": s.get("cut_messages"), "invalid_votes": s.get("invalid_votes"),
            "empty_at_token_limit": s.get("empty_at_token_limit"),
            **trueskill_metrics(row),
        }.items()}
    return result


def trueskill_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """The keys every room's metrics.json shares (see the rating contract)."""
    return {
        "trueskill_mu": row["mu"], "trueskill_sigma": row["sigma"], "trueskill_mu_lo": row["mu_lo"],
        "trueskill_mu_hi": row["mu_hi"], "trueskill_rank": row["rank"], "trueskill_rank_lo": row["rank_lo"],
        "trueskill_rank_hi": row["rank_hi"], "trueskill_games": row["rated_games"],
        "trueskill_resamples": row["resamples"],
    }
