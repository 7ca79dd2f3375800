"""Pairwise TrueSkill from p(correct): one game per question and pair of answerers.

- relative: the higher p(correct) wins; a difference below sigma_stop is a draw;
- absolute: each answerer passes when p(correct) >= pass_threshold; equal results draw.

Final ratings average several passes over shuffled event orders, with bootstrap intervals for mu and
the rank (pipeline.core.rating.multipass.rating_summary);
the history replays the events once in game order to show how ratings settle as questions
accumulate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import polars as pl

from pipeline.core.rating.multipass import Pairwise, RatingParams, apply_event, rating_summary

MODES: tuple[str, ...] = ("relative", "absolute")


@dataclass(frozen=True)
class QuestionGames:
    question_id: str
    round: int
    games: tuple[Pairwise, ...]


def outcome(mode: str, p_a: float, p_b: float, sigma_stop: float, pass_threshold: float) -> Literal["a", "b", "draw"]:
    if mode == "relative":
        if abs(p_a - p_b) < sigma_stop:
            return "draw"
        return "a" if p_a > p_b else "b"
    pass_a, pass_b = p_a >= pass_threshold, p_b >= pass_threshold
    if pass_a == pass_b:
        return "draw"
    return "a" if pass_a else "b"


def question_games(
    pcorrect: pl.DataFrame, mode: str, sigma_stop: float, pass_threshold: float, setter_order: Sequence[str]
) -> list[QuestionGames]:
    """Games per question in game order (round, then setter order), pairs in name order."""
    order = {s: i for i, s in enumerate(setter_order)}
    questions = (
        pcorrect.select("question_id", "round", "setter")
        .unique()
        .with_columns(pl.col("setter").replace_strict(order, default=len(order)).alias("_order"))
        .sort(["round", "_order", "question_id"])
    )
    by_question = {qid: dict(zip(g["answerer"], g["p_correct"])) for (qid,), g in pcorrect.group_by("question_id")}
    result = []
    for row in questions.iter_rows(named=True):
        scores = by_question[row["question_id"]]
        games = tuple(
            Pairwise(a, b, outcome(mode, scores[a], scores[b], sigma_stop, pass_threshold))
            for a, b in combinations(sorted(scores), 2)
        )
        result.append(QuestionGames(row["question_id"], row["round"], games))
    return result


#: Bootstrap resamples over games behind the rating intervals (mu_lo..mu_hi, rank_lo..rank_hi).
BOOTSTRAP_RESAMPLES = 100


def ratings(
    games: Sequence[QuestionGames],
    params: RatingParams,
    passes: int,
    seed: int,
    mode: str,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> pl.DataFrame:
    """mode, player, mu, sigma, mu_sd, mu_lo, mu_hi, rank, rank_lo, rank_hi, events, passes
    (`rating_summary`; each resample is rated with the same number of passes)."""
    events = [g for q in games for g in q.games]
    frame = rating_summary(events, params, passes, seed, resamples=resamples)
    return frame.with_columns(pl.lit(mode).alias("mode"), pl.lit(passes, pl.Int64).alias("passes")).select(
        "mode", *frame.columns, "passes"
    )


def history(games: Sequence[QuestionGames], params: RatingParams, mode: str) -> pl.DataFrame:
    """Ratings of every player seen so far after each question, replayed once in game order."""
    env = params.env()
    current: dict = {}
    rows = []
    for step, question in enumerate(games, start=1):
        for game in question.games:
            apply_event(env, current, game)
        for player, rating in sorted(current.items()):
            rows.append((mode, step, question.round, question.question_id, player, rating.mu, rating.sigma))
    return pl.DataFrame(
        rows,
        schema={
            "mode": pl.String,
            "step": pl.Int64,
            "round": pl.Int64,
            "question_id": pl.String,
            "player": pl.String,
            "mu": pl.Float64,
            "sigma": pl.Float64,
        },
        orient="row",
    )
