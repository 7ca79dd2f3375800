"""From game records to tidy tables, per-model metrics, TrueSkill and the variants comparison.

Metrics per model (over the seats it played): win rate as spy, as civilian and overall; average
score, pooled and per role; ranking points (100 + sum of scores - seats: a model filling two
seats of a game pays for each); its seats; vote accuracy (civilian
votes naming the spy / civilian votes cast, abstentions not counted: under the paper's parse any
reply that is not exactly a candidate's name is one); foul rate (descriptions with a foul /
descriptions), pooled and per role;
average survival rounds (rounds a seat completed: eliminated in round k counts k-1, a survivor
counts the rounds played); replies empty at the token limit (descriptions and votes the token
limit cut before any visible text, over every variant's games: a reasoning model whose budget was
spent on hidden reasoning; the move still counts as no answer or an abstention).

Per role: in the attack and defense variants the spy always carries the injected line, so a
model's `_civilian` figures (win rate, average score, foul rate) are the model as a civilian facing
an injecting spy (the paper's table 3 setting) and its `_spy` figures the model as the injecting
spy; the pooled figures keep their names.

TrueSkill: each game of the ranked variant is a win of the spy's team or of the civilians' team.
By default (`rating.matchup: teams`, the spec) a game is one TeamMatch: the spy's model against
the team of the distinct civilian models (a model sitting on both sides is left out of the
civilians' team; a model filling two civilian seats is in the team once), so every model gets one
update per game. `matchup: pairwise` (the earlier behaviour, an option) splits a game into one
Pairwise event between the spy's model and each distinct civilian model: the spy then gets about
five updates a game. A game always has a winner, so no event is a draw and draw_probability 0 is
a valid setting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import polars as pl

from pipeline.core.artifacts import read_record, seed_from
from pipeline.core.artifacts.metrics_record import MetricsRecord, ModelMetrics, Rating
from pipeline.core.rating.multipass import Pairwise, RatingEvent, RatingParams, TeamMatch, rating_summary
from pipeline.whoisspy.config import VARIANTS, RatingSettings
from pipeline.whoisspy.records import SpeechEvent, VoteEvent, WhoIsSpyGame, as_game
from pipeline.whoisspy.scoring import COST_PER_GAME, START_POINTS

#: metrics compared across variants (the spec's list, plus spy win rate)
VARIANT_METRICS: tuple[str, ...] = (
    "vote_accuracy",
    "foul_rate",
    "avg_score",
    "win_rate",
    "win_rate_civilian",
    "win_rate_spy",
    "avg_score_civilian",
    "avg_score_spy",
    "foul_rate_civilian",
    "foul_rate_spy",
)
#: the role whose seats a metric counts (the rest count every seat)
_METRIC_ROLE: dict[str, str] = {
    "vote_accuracy": "civilian",
    "win_rate_civilian": "civilian",
    "avg_score_civilian": "civilian",
    "foul_rate_civilian": "civilian",
    "win_rate_spy": "spy",
    "avg_score_spy": "spy",
    "foul_rate_spy": "spy",
}
ALL_MODELS = "(all)"  # not a valid roster name, so it cannot collide with one


def load_records(paths: Iterable[str | Path]) -> list[WhoIsSpyGame]:
    """Every game record, typed (a malformed file stops with its name and the failing field)."""
    return [read_record(p, WhoIsSpyGame) for p in paths]


def _seat_rows(record: WhoIsSpyGame) -> list[dict[str, Any]]:
    roles = {p.seat: p.role for p in record.players}
    speeches: dict[str, int] = {}
    fouled: dict[str, int] = {}
    votes: dict[str, int] = {}
    abstentions: dict[str, int] = {}
    hits: dict[str, int] = {}
    empty: dict[str, int] = {}
    for e in record.events:
        if isinstance(e, (SpeechEvent, VoteEvent)) and e.empty_at_token_limit:
            who = e.seat if isinstance(e, SpeechEvent) else e.voter
            empty[who] = empty.get(who, 0) + 1
        if isinstance(e, SpeechEvent):
            speeches[e.seat] = speeches.get(e.seat, 0) + 1
            fouled[e.seat] = fouled.get(e.seat, 0) + bool(e.fouls)
        elif isinstance(e, VoteEvent):
            if e.target is None:
                abstentions[e.voter] = abstentions.get(e.voter, 0) + 1
            else:
                votes[e.voter] = votes.get(e.voter, 0) + 1
                if roles[e.voter] == "civilian" and roles[e.target] == "spy":
                    hits[e.voter] = hits.get(e.voter, 0) + 1
    rows = []
    for p in record.players:
        seat = p.seat
        won = (p.role == "spy") == (record.winner == "spy")
        survived = p.eliminated_round - 1 if p.eliminated_round else record.rounds_played
        rows.append(
            {
                "game_id": record.game_id,
                "variant": record.variant,
                "seat": seat,
                "model": p.model,
                "role": p.role,
                "word": p.word,
                "score": float(p.score),
                "base_score": float(p.base_score),
                "vote_transfer": float(p.vote_transfer),
                "won": won,
                "eliminated_round": p.eliminated_round,
                "eliminated_by": p.eliminated_by,
                "rounds_survived": survived,
                "speeches": speeches.get(seat, 0),
                "foul_speeches": fouled.get(seat, 0),
                "votes": votes.get(seat, 0),
                "abstentions": abstentions.get(seat, 0),
                "votes_for_spy": hits.get(seat, 0),
                "empty_at_token_limit": empty.get(seat, 0),
            }
        )
    return rows


def build_tables(records: Sequence[WhoIsSpyGame | Mapping[str, Any]]) -> dict[str, pl.DataFrame]:
    """games, seats, speeches and votes tables from game records (unsorted, unvalidated); a record
    given as its JSON object is read as a `WhoIsSpyGame` first."""
    games, seats, speeches, votes = [], [], [], []
    for r in map(as_game, records):
        by_seat = {p.seat: p for p in r.players}
        spy = next(p for p in r.players if p.role == "spy")
        games.append(
            {
                "game_id": r.game_id,
                "variant": r.variant,
                "focal": r.focal,
                "focal_role": r.focal_role,
                "replicate": r.replicate,
                "civilian_word": r.words.civilian,
                "spy_word": r.words.spy,
                "spy_seat": spy.seat,
                "spy_model": spy.model,
                "starter": r.starter,
                "winner": r.winner,
                "end_reason": r.end_reason,
                "rounds_played": r.rounds_played,
                "score_total": float(sum(p.score for p in r.players)),
                "vote_parse": r.rules.vote_parse,
                "reasoning_analysis": r.reasoning_analysis,
            }
        )
        seats.extend(_seat_rows(r))
        for e in r.events:
            if isinstance(e, SpeechEvent):
                speeches.append(
                    {
                        "game_id": r.game_id,
                        "variant": r.variant,
                        "round": e.round,
                        "seat": e.seat,
                        "model": by_seat[e.seat].model,
                        "role": by_seat[e.seat].role,
                        "text": e.text,
                        "shown": e.shown,
                        "truncated": e.truncated,
                        "latency_s": float(e.latency_s),
                        "fouled": bool(e.fouls),
                        "foul_kinds": ",".join(e.fouls),
                    }
                )
            elif isinstance(e, VoteEvent):
                target = e.target
                target_role = by_seat[target].role if target else None
                votes.append(
                    {
                        "game_id": r.game_id,
                        "variant": r.variant,
                        "round": e.round,
                        "voter": e.voter,
                        "model": by_seat[e.voter].model,
                        "role": by_seat[e.voter].role,
                        "target": target,
                        "target_role": target_role,
                        "abstained": target is None,
                        # how the reply was read (config.BALLOTS): named, abstain, or invalid (an abstention)
                        "ballot": e.ballot,
                        "correct": target_role == "spy",
                    }
                )
    schemas: dict[str, dict[str, pl.DataType | type[pl.DataType]]] = {
        "games": {"focal": pl.Utf8, "focal_role": pl.Utf8, "reasoning_analysis": pl.Utf8},
        "seats": {"eliminated_round": pl.Int64, "eliminated_by": pl.Utf8},
        "speeches": {},
        "votes": {"target": pl.Utf8, "target_role": pl.Utf8},
    }
    rows = {"games": games, "seats": seats, "speeches": speeches, "votes": votes}
    return {name: pl.DataFrame(rows[name], schema_overrides=schemas[name], infer_schema_length=None) for name in rows}


def _rate(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    return pl.when(denominator > 0).then(numerator / denominator).otherwise(None)


def model_metrics(seats: pl.DataFrame, by: Sequence[str] = ("model",)) -> pl.DataFrame:
    """Per-group metrics over seat rows (group by model, or model and variant)."""
    spy = pl.col("role") == "spy"
    civ = pl.col("role") == "civilian"
    frame = seats.group_by(list(by)).agg(
        seats=pl.len(),
        seats_spy=spy.sum(),
        seats_civilian=civ.sum(),
        score_sum=pl.col("score").sum(),
        avg_score=pl.col("score").mean(),
        avg_score_spy=pl.col("score").filter(spy).mean(),
        avg_score_civilian=pl.col("score").filter(civ).mean(),
        win_rate=pl.col("won").mean(),
        win_rate_spy=pl.col("won").filter(spy).mean(),
        win_rate_civilian=pl.col("won").filter(civ).mean(),
        civilian_votes=pl.col("votes").filter(civ).sum(),
        hits=pl.col("votes_for_spy").filter(civ).sum(),
        speeches=pl.col("speeches").sum(),
        foul_speeches=pl.col("foul_speeches").sum(),
        _speeches_spy=pl.col("speeches").filter(spy).sum(),
        _fouls_spy=pl.col("foul_speeches").filter(spy).sum(),
        _speeches_civilian=pl.col("speeches").filter(civ).sum(),
        _fouls_civilian=pl.col("foul_speeches").filter(civ).sum(),
        avg_survival_rounds=pl.col("rounds_survived").mean(),
    )
    return frame.with_columns(
        points=START_POINTS + pl.col("score_sum") - COST_PER_GAME * pl.col("seats"),
        vote_accuracy=_rate(pl.col("hits"), pl.col("civilian_votes")),
        foul_rate=_rate(pl.col("foul_speeches"), pl.col("speeches")),
        foul_rate_spy=_rate(pl.col("_fouls_spy"), pl.col("_speeches_spy")),
        foul_rate_civilian=_rate(pl.col("_fouls_civilian"), pl.col("_speeches_civilian")),
        win_rate=pl.col("win_rate").cast(pl.Float64),
        win_rate_spy=pl.col("win_rate_spy").cast(pl.Float64),
        win_rate_civilian=pl.col("win_rate_civilian").cast(pl.Float64),
        seats_spy=pl.col("seats_spy").cast(pl.Int64),
        seats_civilian=pl.col("seats_civilian").cast(pl.Int64),
        seats=pl.col("seats").cast(pl.Int64),
    ).drop("hits", "_speeches_spy", "_fouls_spy", "_speeches_civilian", "_fouls_civilian")


def rating_events(games: pl.DataFrame, seats: pl.DataFrame, variant: str, matchup: str = "teams") -> list[RatingEvent]:
    """In game-id order: per game the spy's model against the civilians' team ("teams"), or
    against each distinct civilian model in turn ("pairwise")."""
    return [event for _, event in game_events(games, seats, variant, matchup)]


def game_events(
    games: pl.DataFrame, seats: pl.DataFrame, variant: str, matchup: str = "teams"
) -> list[tuple[str, RatingEvent]]:
    """`rating_events`, each with its game id."""
    if matchup not in ("teams", "pairwise"):
        raise ValueError(f"matchup must be 'teams' or 'pairwise', got {matchup!r}")
    events: list[tuple[str, RatingEvent]] = []
    ranked = games.filter(pl.col("variant") == variant).sort("game_id")
    civilians = seats.filter(pl.col("role") == "civilian").group_by("game_id").agg(pl.col("model").unique().sort())
    models_by_game = dict(zip(civilians["game_id"].to_list(), civilians["model"].to_list()))
    for game in ranked.iter_rows(named=True):
        spy = game["spy_model"]
        outcome: Literal["a", "b"] = "a" if game["winner"] == "spy" else "b"
        team = [civilian for civilian in models_by_game.get(game["game_id"], []) if civilian != spy]
        if matchup == "teams":
            if team:
                events.append((game["game_id"], TeamMatch(a=(spy,), b=tuple(team), outcome=outcome)))
            continue
        for civilian in team:
            events.append((game["game_id"], Pairwise(a=spy, b=civilian, outcome=outcome)))
    return events


_RATINGS_COLUMNS: tuple[str, ...] = ("player", "mu", "sigma", "mu_sd", "events", "passes")
_INTERVAL_COLUMNS: tuple[str, ...] = ("player", "mu_lo", "mu_hi", "rank", "rank_lo", "rank_hi", "resamples", "settled")


def ratings(events: Sequence[RatingEvent], settings: RatingSettings, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Multi-pass TrueSkill (player, mu, sigma, mu_sd, events, passes) and its bootstrap
    intervals (player, mu_lo, mu_hi, rank, rank_lo, rank_hi, resamples, settled; rank by mu, 1 = best),
    from `rating_summary`: null mu intervals when resamples is 0, and the whole field as the rank
    interval of a player whose interval is not settled (too few games or resamples)."""
    rating_seed = seed_from("whoisspy/rating", seed)
    summary = rating_summary(
        events, settings.rating_params(), settings.passes, rating_seed, resamples=settings.bootstrap_resamples
    )
    table = summary.with_columns(passes=pl.lit(settings.passes, pl.Int64)).select(_RATINGS_COLUMNS)
    return table, summary.select(_INTERVAL_COLUMNS)


def leaderboard(seats: pl.DataFrame, variant: str, rating_table: pl.DataFrame, intervals: pl.DataFrame) -> pl.DataFrame:
    """Per model over `variant`'s games, ranked by points (ties: higher TrueSkill mu, then name).

    `rank` is the points rank; trueskill_rank (_lo, _hi) the rank by TrueSkill mu and its interval,
    trueskill_games / _resamples the evidence behind it and trueskill_settled whether it is enough."""
    frame = model_metrics(seats.filter(pl.col("variant") == variant))
    rated = rating_table.select(model="player", mu="mu", sigma="sigma", trueskill_games="events").join(
        intervals.select(
            model="player",
            mu_lo="mu_lo",
            mu_hi="mu_hi",
            trueskill_rank="rank",
            trueskill_rank_lo="rank_lo",
            trueskill_rank_hi="rank_hi",
            trueskill_resamples="resamples",
            trueskill_settled="settled",
        ),
        on="model",
        how="left",
    )
    frame = frame.join(rated, on="model", how="left").sort(
        ["points", "mu", "model"], descending=[True, True, False], nulls_last=True
    )
    return frame.with_columns(rank=pl.int_range(1, frame.height + 1, dtype=pl.Int64))


def variants_table(seats: pl.DataFrame, rank_variant: str = "baseline") -> pl.DataFrame:
    """Tidy: model (and "(all)"), variant, metric, value, the rank variant's value, the difference,
    and `seats`: the seats behind the value (a per-role metric counts that role's seats only)."""
    per_model = model_metrics(seats, by=("model", "variant"))
    overall = model_metrics(seats, by=("variant",)).with_columns(model=pl.lit(ALL_MODELS))
    wide = pl.concat([per_model, overall.select(per_model.columns)], how="vertical")
    index = ["model", "variant", "seats", "seats_spy", "seats_civilian"]
    long = wide.unpivot(index=index, on=list(VARIANT_METRICS), variable_name="metric")
    role = pl.col("metric").replace_strict(_METRIC_ROLE, default="")
    long = long.with_columns(
        pl.col("value").cast(pl.Float64),
        seats=pl.when(role == "spy")
        .then("seats_spy")
        .when(role == "civilian")
        .then("seats_civilian")
        .otherwise("seats"),
    ).drop("seats_spy", "seats_civilian")
    base = long.filter(pl.col("variant") == rank_variant).select("model", "metric", baseline="value")
    out = long.join(base, on=["model", "metric"], how="left").with_columns(delta=pl.col("value") - pl.col("baseline"))
    order = {v: i for i, v in enumerate(VARIANTS)}
    return (
        out.with_columns(pl.col("variant").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
        .sort(["model", "_order", "metric"])
        .drop("_order")
        .select("model", "variant", "metric", "value", "baseline", "delta", "seats")
    )


#: the leaderboard's columns a model's metrics.json row carries besides its rating (the record's)
LEADERBOARD_METRICS: tuple[str, ...] = (
    "rank",
    "points",
    "seats",
    "avg_score",
    "win_rate",
    "win_rate_spy",
    "win_rate_civilian",
    "avg_score_spy",
    "avg_score_civilian",
    "vote_accuracy",
    "foul_rate",
    "foul_rate_spy",
    "foul_rate_civilian",
    "avg_survival_rounds",
)


def empty_replies(seats: pl.DataFrame) -> dict[str, int]:
    """Per model: its replies empty at the token limit, over every game and variant."""
    counts = seats.group_by("model").agg(pl.col("empty_at_token_limit").sum())
    return {r["model"]: int(r["empty_at_token_limit"]) for r in counts.iter_rows(named=True)}


def _board_rating(row: dict[str, Any]) -> Rating | None:
    if row["mu"] is None:
        return None
    return Rating(
        mu=row["mu"],
        sigma=row["sigma"],
        mu_lo=row["mu_lo"],
        mu_hi=row["mu_hi"],
        rank=row["trueskill_rank"],
        rank_lo=row["trueskill_rank_lo"],
        rank_hi=row["trueskill_rank_hi"],
        resamples=row["trueskill_resamples"],
    )


def metrics_json(
    board: pl.DataFrame, variants: pl.DataFrame, rank_variant: str, seats: pl.DataFrame | None = None
) -> MetricsRecord:
    """The metrics record: per model its rating and rated games, the leaderboard's metrics, `<variant>_<metric>`
    for the other variants, and with `seats` its `empty_at_token_limit` (replies the token limit emptied,
    every variant). A model seated only in other variants has no rating."""
    empty = empty_replies(seats) if seats is not None else None
    own: dict[str, dict[str, Any]] = {}
    for row in board.iter_rows(named=True):
        own[row["model"]] = {key: row[key] for key in LEADERBOARD_METRICS}
        if empty is not None:
            own[row["model"]]["empty_at_token_limit"] = empty.get(row["model"], 0)
    others = variants.filter((pl.col("variant") != rank_variant) & (pl.col("model") != ALL_MODELS))
    for row in others.iter_rows(named=True):
        own.setdefault(row["model"], {})[f"{row['variant']}_{row['metric']}"] = row["value"]
    rows = {row["model"]: row for row in board.iter_rows(named=True)}
    models = {}
    for model, metrics in sorted(own.items()):
        rating = _board_rating(rows[model]) if model in rows else None
        games = rows[model]["trueskill_games"] if rating is not None else 0
        models[model] = ModelMetrics(rating=rating, games=games, metrics=metrics)
    return MetricsRecord(models=models)


def opponent_rate_metrics(
    events: Sequence[RatingEvent], board: pl.DataFrame, params: RatingParams
) -> dict[str, dict[str, Any]]:
    """Per model, the share of its opponents (the models of the other side: a spy's civilians, a
    civilian's spy) whose side lost, two ways (core's `opponent_rates`):

    - `opponent_win_rate`: naive, over all its games, so weighted by how often the schedule sat it
      with each opponent (and by five civilians a game as the spy, one spy as a civilian);
    - `opponent_win_rate_uniform`: the mean over the other models of its rate against each, a
      uniform mix of opponents, which is what a fixed, balanced schedule's naive rate estimates;
      an opponent never met enters at TrueSkill's predicted probability from the leaderboard's mu
      and sigma (`opponent_win_rate_imputed` counts them).

    Written only under the adaptive schedule (which chooses close opponents and so pulls naive rates
    towards 1/2); the fixed schedule's metrics stay as they were."""
    from pipeline.core.rating.adaptive import Standing, opponent_rates

    ratings = {
        row["model"]: Standing(float(row["mu"]), float(row["sigma"]))
        for row in board.iter_rows(named=True)
        if row["mu"] is not None and row["sigma"] is not None and row["sigma"] > 0
    }
    return opponent_rates(events, ratings, params).metrics(board["model"].to_list())
