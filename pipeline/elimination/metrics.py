"""Social metrics per model, from the tidy tables: the original benchmark's charts under their
names, and our variants under theirs (docs/elimination.md, "Metrics").

As the original computes them, over the games its leaderboard counts (those with final ranks):

- `buddy_betrayal_rate` (betrayer): the times the model voted (first vote or re-vote, each `vote`
  record) against the seat it had talked with in private that round, over its private chats (one
  per round in which it was paired). `buddy_betrayed_rate` (victim): the times its partner of the
  round voted against it, over the same chats.
- `words_per_message`: words of the messages every seat hears (the log's `conversation` records:
  public statements, tie-break statements, final pleas), as the log recorded them.
- `first_place_rate` / `earliest_out_rate`: seats that finished first / went out first, over the
  model's appearances (seats with a final rank).
- `final2_win_rate`: wins over appearances in the last two.

Ours: `betrayal_rate` / `betrayed_rate` (private chats with at least one vote against the partner,
over every log read), `avg_words` (every message, private ones included, before any cut: the
words a model wrote stay measurable when `words.cut` is on), `wins` / `first_out` (raw counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.core.artifacts.metrics_record import MetricsRecord, ModelMetrics, Rating

if TYPE_CHECKING:
    from pipeline.core.rating.events import RatingEvent, RatingParams

# the kinds of the log's `conversation` records: every seat (and the jury) hears them
HEARD_BY_ALL = ("public", "tiebreak", "plea")


def _rate(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    return pl.when(denominator > 0).then(numerator / denominator).otherwise(None)


def rated_games(final_ranks: pl.DataFrame) -> pl.DataFrame:
    """The games with final ranks (column `game_id`): the ones the original's leaderboard counts,
    so the ones its charts describe."""
    return final_ranks.filter(pl.col("rank").is_not_null()).select("game_id").unique().sort("game_id")


def betrayals(pairs: pl.DataFrame, votes: pl.DataFrame) -> pl.DataFrame:
    """One row per private chat seen from one side (game, round, seat, partner), with
    `votes_against`: the seat's votes of that round (first vote and re-vote) naming its partner,
    and `betrayed`: at least one such vote."""
    directed = pl.concat(
        [
            pairs.select(
                "game_id",
                "round",
                pl.col("seat_a").alias("seat"),
                pl.col("seat_b").alias("partner"),
                pl.col("model_a").alias("model"),
                pl.col("model_b").alias("partner_model"),
            ),
            pairs.select(
                "game_id",
                "round",
                pl.col("seat_b").alias("seat"),
                pl.col("seat_a").alias("partner"),
                pl.col("model_b").alias("model"),
                pl.col("model_a").alias("partner_model"),
            ),
        ]
    )
    against = (
        votes.filter(pl.col("phase").is_in(["vote", "revote"]) & pl.col("target_seat").is_not_null())
        .group_by("game_id", "round", pl.col("voter_seat").alias("seat"), pl.col("target_seat").alias("partner"))
        .agg(pl.len().cast(pl.Int64).alias("votes_against"))
    )
    return (
        directed.join(against, on=["game_id", "round", "seat", "partner"], how="left")
        .with_columns(pl.col("votes_against").fill_null(0))
        .with_columns((pl.col("votes_against") > 0).alias("betrayed"))
        .sort("game_id", "round", "seat")
    )


def _buddy_betrayals(chats: pl.DataFrame, suffix: str = "") -> tuple[pl.DataFrame, pl.DataFrame]:
    """The original's counts: (per model its chats and the times it voted against the partner,
    per model the times its partner voted against it)."""
    betrayer = chats.group_by("model").agg(
        pl.len().alias(f"buddy_chats{suffix}"), pl.col("votes_against").sum().alias(f"buddy_betrayals{suffix}")
    )
    victim = chats.group_by(pl.col("partner_model").alias("model")).agg(
        pl.col("votes_against").sum().alias(f"buddy_betrayed{suffix}")
    )
    return betrayer, victim


def consistent_games(rated: pl.DataFrame, games: pl.DataFrame) -> pl.DataFrame:
    """The rated games whose recorded result agrees with their final ranks: the log's
    `final_results` and the ranks re-derived from its records name the same order (`games`'
    `matches_final_results` not false). The betrayal chart's game set (docs/elimination.md)."""
    differ = games.filter(pl.col("matches_final_results") == False).select("game_id")  # noqa: E712
    return rated.join(differ, on="game_id", how="anti")


def _chat_betrayals(chats: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Ours: per model its chats and those with a vote against the partner, and the chats in
    which the partner voted against it."""
    betrayer = chats.group_by("model").agg(pl.len().alias("private_chats"), pl.col("betrayed").sum().alias("betrayals"))
    victim = chats.group_by(pl.col("partner_model").alias("model")).agg(pl.col("betrayed").sum().alias("betrayed"))
    return betrayer, victim


def _words(messages: pl.DataFrame, rated: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(ours: every message, words before any cut; the original's: the messages every seat
    hears in the rated games, words as recorded)."""
    spoken = messages.filter(pl.col("model").is_not_null())
    every = spoken.group_by("model").agg(
        pl.len().alias("messages"),
        pl.col("words").mean().alias("avg_words"),
        pl.col("cut").sum().alias("cut_messages"),
        pl.col("empty_at_token_limit").sum().alias("empty_messages"),
    )
    heard = (
        spoken.filter(pl.col("kind").is_in(HEARD_BY_ALL))
        .join(rated, on="game_id", how="semi")
        .group_by("model")
        .agg(pl.len().alias("public_messages"), pl.col("words_recorded").mean().alias("words_per_message"))
    )
    return every, heard


#: our option's suffix: the betrayal counts over every rated game (docs/elimination.md)
ALL_RATED = "_all_rated"

COUNTS = (
    "private_chats",
    "betrayals",
    "betrayed",
    "buddy_chats",
    "buddy_betrayals",
    "buddy_betrayed",
    f"buddy_chats{ALL_RATED}",
    f"buddy_betrayals{ALL_RATED}",
    f"buddy_betrayed{ALL_RATED}",
    "messages",
    "public_messages",
    "cut_messages",
    "votes_cast",
    "invalid_votes",
    "empty_messages",
    "empty_votes",
)
COLUMNS = (
    "model",
    "games",
    "seats",
    "wins",
    "first_place_rate",
    "first_out",
    "earliest_out_rate",
    "final2",
    "final2_wins",
    "final2_win_rate",
    "buddy_chats",
    "buddy_betrayals",
    "buddy_betrayal_rate",
    "buddy_betrayed",
    "buddy_betrayed_rate",
    f"buddy_chats{ALL_RATED}",
    f"buddy_betrayals{ALL_RATED}",
    f"buddy_betrayal_rate{ALL_RATED}",
    f"buddy_betrayed{ALL_RATED}",
    f"buddy_betrayed_rate{ALL_RATED}",
    "private_chats",
    "betrayals",
    "betrayal_rate",
    "betrayed",
    "betrayed_rate",
    "public_messages",
    "words_per_message",
    "messages",
    "avg_words",
    "cut_messages",
    "votes_cast",
    "invalid_votes",
    "empty_at_token_limit",
)


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
    rated = rated_games(tables["final_ranks"])
    chats = betrayals(tables["pairs"], tables["votes"])
    every_words, heard_words = _words(tables["messages"], rated)
    votes = (
        tables["votes"]
        .filter(pl.col("voter_model").is_not_null())
        .group_by(pl.col("voter_model").alias("model"))
        .agg(
            pl.len().alias("votes_cast"),
            (~pl.col("valid")).sum().alias("invalid_votes"),
            pl.col("token_limit_replies").sum().alias("empty_votes"),
        )
    )
    table = placed
    for other in (
        *_buddy_betrayals(chats.join(consistent_games(rated, tables["games"]), on="game_id", how="semi")),
        *_buddy_betrayals(chats.join(rated, on="game_id", how="semi"), ALL_RATED),
        *_chat_betrayals(chats),
        every_words,
        heard_words,
        votes,
    ):
        table = table.join(other, on="model", how="left")
    table = table.with_columns([pl.col(c).fill_null(0).cast(pl.Int64) for c in COUNTS])
    table = table.with_columns((pl.col("empty_messages") + pl.col("empty_votes")).alias("empty_at_token_limit"))
    table = table.with_columns(
        _rate(pl.col("wins"), pl.col("seats")).alias("first_place_rate"),
        _rate(pl.col("first_out"), pl.col("seats")).alias("earliest_out_rate"),
        _rate(pl.col("final2_wins"), pl.col("final2")).alias("final2_win_rate"),
        _rate(pl.col("buddy_betrayals"), pl.col("buddy_chats")).alias("buddy_betrayal_rate"),
        _rate(pl.col("buddy_betrayed"), pl.col("buddy_chats")).alias("buddy_betrayed_rate"),
        _rate(pl.col(f"buddy_betrayals{ALL_RATED}"), pl.col(f"buddy_chats{ALL_RATED}")).alias(
            f"buddy_betrayal_rate{ALL_RATED}"
        ),
        _rate(pl.col(f"buddy_betrayed{ALL_RATED}"), pl.col(f"buddy_chats{ALL_RATED}")).alias(
            f"buddy_betrayed_rate{ALL_RATED}"
        ),
        _rate(pl.col("betrayals"), pl.col("private_chats")).alias("betrayal_rate"),
        _rate(pl.col("betrayed"), pl.col("private_chats")).alias("betrayed_rate"),
    )
    return (
        table.select(COLUMNS)
        .with_columns(
            [pl.col(c).cast(pl.Int64) for c in ("games", "seats", "wins", "first_out", "final2", "final2_wins")]
        )
        .sort("model")
    )


def rank_distribution(final_ranks: pl.DataFrame) -> pl.DataFrame:
    ranks = final_ranks.filter(pl.col("rank").is_not_null())
    counts = ranks.group_by("model", "rank").agg(pl.len().alias("count"))
    totals = ranks.group_by("model").agg(pl.len().alias("total"))
    return (
        counts.join(totals, on="model")
        .with_columns((pl.col("count") / pl.col("total")).alias("share"))
        .select("model", pl.col("rank").cast(pl.Int64), pl.col("count").cast(pl.Int64), "share")
        .sort("model", "rank")
    )


# model_stats columns copied into metrics.json: the original's metrics with the counts behind them,
# then ours (the keys the leaderboard and older runs know stay as they were)
STATS_IN_METRICS = (
    "wins",
    "first_place_rate",
    "first_out",
    "earliest_out_rate",
    "final2",
    "final2_wins",
    "final2_win_rate",
    "buddy_chats",
    "buddy_betrayals",
    "buddy_betrayal_rate",
    "buddy_betrayed",
    "buddy_betrayed_rate",
    f"buddy_chats{ALL_RATED}",
    f"buddy_betrayal_rate{ALL_RATED}",
    f"buddy_betrayed_rate{ALL_RATED}",
    "public_messages",
    "words_per_message",
    "betrayal_rate",
    "betrayed_rate",
    "avg_words",
    "cut_messages",
    "invalid_votes",
    "empty_at_token_limit",
)
#: leaderboard columns copied into metrics.json under the original's names (mu, sigma and rank
#: repeat the rating's trueskill_* keys)
BOARD_IN_METRICS = ("rank", "mu", "mu_rel", "sigma", "mu_lo", "mu_hi", "points_sum", "avg_points")


def metrics_json(leaderboard: pl.DataFrame, stats: pl.DataFrame) -> MetricsRecord:
    """The metrics record: per model of the leaderboard its rating and rated games (games with another
    model at the table), the leaderboard's columns and its social metrics."""
    stats_by_model = {row["model"]: row for row in stats.iter_rows(named=True)}
    models = {}
    for row in leaderboard.iter_rows(named=True):
        s = stats_by_model.get(row["model"], {})
        metrics = {key: row[key] for key in BOARD_IN_METRICS} | {key: s.get(key) for key in STATS_IN_METRICS}
        models[row["model"]] = ModelMetrics(rating=Rating.from_summary(row), games=row["rated_games"], metrics=metrics)
    return MetricsRecord(models=models)


def opponent_rate_metrics(
    events: Sequence[RatingEvent], leaderboard: pl.DataFrame, params: RatingParams
) -> dict[str, dict[str, Any]]:
    """Per model, the share of table-mates it finished ahead of, two ways (core's `opponent_rates`):

    - `opponent_win_rate`: naive, over all its games, so weighted by how often the schedule sat
      it with each opponent;
    - `opponent_win_rate_uniform`: the mean over the other models of its rate against each, a
      uniform mix of opponents, which is what a fixed, balanced schedule's naive rate estimates;
      an opponent never met enters at TrueSkill's predicted probability from the leaderboard's
      mu and sigma (`opponent_win_rate_imputed` counts them).

    Written only under the adaptive schedule (which chooses close opponents and so pulls naive rates
    towards 1/2); the fixed schedule's metrics stay as they were (docs/ratings.md)."""
    from pipeline.core.rating.adaptive import Standing, opponent_rates

    ratings = {
        row["model"]: Standing(float(row["mu"]), float(row["sigma"]))
        for row in leaderboard.iter_rows(named=True)
        if row["sigma"] is not None and row["sigma"] > 0
    }
    return opponent_rates(events, ratings, params).metrics(ratings)
