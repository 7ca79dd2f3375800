"""Per-model analyses of a SKATE game, all computed from the p(correct) table.

- answering skill: mean p(correct) on questions set by others;
- asking skill: 1 - mean p(correct) of the other setting models on the model's questions;
- self-preference: mean over the model's questions of its p(correct) minus the other setting
  models' mean, also restricted to the questions where its own p(correct) >= 0.5 (a setter that
  checks it can answer before asking);
- points of difference: the variance of p(correct) across answerers per question;
- how each model answered (`exact_mode`, `exact_share`): in an exact-mode game a model without
  log-probabilities is sampled, and both estimate the same p(correct);
- under the adaptive schedule, the share of pairwise comparisons won, naive and against a uniform
  mix of opponents (`opponent_rate_metrics`).

"Others" are the setting models (params `players`) only: an answer-only model or bot answers
every question but never enters another model's asking skill or self-preference, so adding one
leaves the existing models' metrics as they were.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import polars as pl

from pipeline.core.artifacts.metrics_record import MetricsRecord, ModelMetrics, Rating
from pipeline.core.rating.multipass import RatingParams

CONFIDENT = 0.5


def _series_mean(series: pl.Series) -> float:
    """A numeric column's mean (polars types it as any scalar; a numeric column gives a number)."""
    return cast(float, series.mean())


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _by_question(pcorrect: pl.DataFrame) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for row in pcorrect.iter_rows(named=True):
        entry = table.setdefault(row["question_id"], {"setter": row["setter"], "round": row["round"], "p": {}})
        entry["p"][row["answerer"]] = row["p_correct"]
    return table


def skills(pcorrect: pl.DataFrame, models: Sequence[str], setters: Sequence[str]) -> dict[str, dict[str, float | None]]:
    questions = _by_question(pcorrect)
    setting = set(setters)
    result: dict[str, dict[str, float | None]] = {}
    for model in models:
        answering = [q["p"][model] for q in questions.values() if q["setter"] != model and model in q["p"]]
        others_on_mine: list[float] = []
        preference: list[float] = []
        preference_confident: list[float] = []
        own: list[float] = []
        for q in questions.values():
            if q["setter"] != model:
                continue
            others = [p for name, p in q["p"].items() if name != model and name in setting]
            others_on_mine += others
            if model in q["p"]:
                own.append(q["p"][model])
            if model in q["p"] and others:
                gap = q["p"][model] - sum(others) / len(others)
                preference.append(gap)
                if q["p"][model] >= CONFIDENT:
                    preference_confident.append(gap)
        asking = _mean(others_on_mine)
        result[model] = {
            "answering_skill": _mean(answering),
            "asking_skill": None if asking is None else 1.0 - asking,
            "self_preference": _mean(preference),
            "self_preference_confident": _mean(preference_confident),
            "p_correct_own_questions": _mean(own),
        }
    return result


def variance_table(pcorrect: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """One row per answered question: population variance of p(correct) across answerers."""
    accepted = {r["question_id"]: r for r in questions.filter(pl.col("status") == "accepted").iter_rows(named=True)}
    rows = []
    for question_id, q in sorted(_by_question(pcorrect).items()):
        values = list(q["p"].values())
        mean = sum(values) / len(values)
        source = accepted.get(question_id, {})
        rows.append(
            {
                "question_id": question_id,
                "round": q["round"],
                "setter": q["setter"],
                "variance": sum((v - mean) ** 2 for v in values) / len(values),
                "answerers": len(values),
                "description": source.get("description") or "",
                "program": source.get("program") or "",
                "answer": source.get("answer") or "",
                "p_correct_by_answerer": json.dumps({k: round(v, 4) for k, v in sorted(q["p"].items())}),
            }
        )
    schema = {
        "question_id": pl.String,
        "round": pl.Int64,
        "setter": pl.String,
        "variance": pl.Float64,
        "answerers": pl.Int64,
        "description": pl.String,
        "program": pl.String,
        "answer": pl.String,
        "p_correct_by_answerer": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


#: the two panels of the paper's Figure 4, both seen from the setter's side
OWN_PANEL = "setter's own p(correct) on its questions"
OTHERS_PANEL = "other setters' p(correct) on its questions"


def cumulative_by_round(pcorrect: pl.DataFrame, rounds: int, setters: Sequence[str]) -> pl.DataFrame:
    """Per setter and round, cumulative over its questions so far: its own mean p(correct) (the
    paper's Figure 4, top) and the other setting models' mean p(correct) (Figure 4, bottom)."""
    rows = []
    for setter in sorted(setters):
        mine = pcorrect.filter(pl.col("setter") == setter)
        for panel, frame in (
            (OWN_PANEL, mine.filter(pl.col("answerer") == setter)),
            (OTHERS_PANEL, mine.filter(pl.col("answerer").is_in([s for s in setters if s != setter]))),
        ):
            for r in range(1, rounds + 1):
                upto = frame.filter(pl.col("round") <= r)["p_correct"].to_list()
                if upto:
                    rows.append((setter, panel, r, sum(upto) / len(upto), len(upto)))
    return pl.DataFrame(
        rows,
        schema={
            "setter": pl.String,
            "questions": pl.String,
            "round": pl.Int64,
            "cumulative_p_correct": pl.Float64,
            "n": pl.Int64,
        },
        orient="row",
    )


def sequential_ratings(history: pl.DataFrame) -> dict[tuple[str, str], tuple[float, float]]:
    """(mode, player) -> (mu, sigma) after one pass over the questions in game order: the paper's
    rating (the last step of the history)."""
    result: dict[tuple[str, str], tuple[float, float]] = {}
    for row in history.sort(["mode", "step", "player"]).iter_rows(named=True):
        result[(row["mode"], row["player"])] = (row["mu"], row["sigma"])
    return result


def _sequential_ranks(sequential: dict[tuple[str, str], tuple[float, float]], mode: str) -> dict[str, int]:
    players = sorted((p for m, p in sequential if m == mode), key=lambda p: (-sequential[(mode, p)][0], p))
    return {p: i for i, p in enumerate(players, start=1)}


def metrics_json(
    ratings: pl.DataFrame,
    pcorrect: pl.DataFrame,
    questions: pl.DataFrame,
    setter_rounds: pl.DataFrame,
    models: Sequence[str],
    primary: str = "relative",
    *,
    setters: Sequence[str] | None = None,
    history: pl.DataFrame | None = None,
    headline: str = "multipass",
) -> MetricsRecord:
    """The metrics record: per model its rating in the primary ranking mode and its rated games (the
    pairwise comparisons it took part in), and its own metrics, null where one does not apply.

    The rating is the primary mode's headline: the mean over shuffled passes (`multipass`, with
    bootstrap intervals) or, with headline `sequential`, the paper's single pass in game order (no
    intervals). trueskill_<mode>_mu / _sigma give every mode's multi-pass rating, and
    trueskill_sequential_mu / _sigma the single pass whatever the headline."""
    if setters is None:
        setters = sorted(set(pcorrect["setter"].to_list()))
    skill = skills(pcorrect, models, setters)
    sequential = sequential_ratings(history) if history is not None else {}
    sequential_rank = _sequential_ranks(sequential, primary)
    result: dict[str, ModelMetrics] = {}
    for model in models:
        entry: dict[str, float | int | None] = {}
        rating: Rating | None = None
        games = 0
        for row in ratings.filter(pl.col("player") == model).iter_rows(named=True):
            entry[f"trueskill_{row['mode']}_mu"] = row["mu"]
            entry[f"trueskill_{row['mode']}_sigma"] = row["sigma"]
            if row["mode"] == primary:
                rating, games = Rating.from_summary(row), row["events"]
        if (primary, model) in sequential:
            mu, sigma = sequential[(primary, model)]
            entry["trueskill_sequential_mu"], entry["trueskill_sequential_sigma"] = mu, sigma
            if headline == "sequential":
                rating = Rating(mu=mu, sigma=sigma, rank=sequential_rank[model], resamples=0)
        entry.update(skill[model])
        answered = pcorrect.filter(pl.col("answerer") == model)
        entry["questions_answered"] = answered.height
        entry["p_correct_mean"] = _series_mean(answered["p_correct"]) if answered.height else None
        entry["answer_calls_mean"] = _series_mean(answered["samples"]) if answered.height else None
        # how this model answered: 1 when every p(correct) came from log-probabilities; exact_share
        # is the share of its questions scored so (0: sampled, e.g. a reasoning model in an exact game)
        entry["exact_mode"] = int(answered.height > 0 and bool((answered["mode"] == "exact").all()))
        entry["exact_share"] = float(_series_mean(answered["mode"] == "exact")) if answered.height else None
        if "outside_mass" in answered.columns:  # how much of the answer distribution was not a letter
            outside = answered["outside_mass"].drop_nulls()
            entry["outside_mass_mean"] = _series_mean(outside) if outside.len() else None
            entry["unparsed_share"] = _series_mean(answered["unparsed_share"]) if answered.height else None
        mine = setter_rounds.filter(pl.col("setter") == model)
        if mine.height:
            entry["questions_entered"] = mine.filter(pl.col("outcome") == "question").height
            attempts = questions.filter(pl.col("setter") == model)
            entry["attempts"] = attempts.height
            entry["valid_rate"] = attempts.filter(pl.col("status") != "invalid").height / max(1, attempts.height)
        result[model] = ModelMetrics(rating=rating, games=games if rating is not None else 0, metrics=entry)
    return MetricsRecord(models=result)


def opponent_rate_metrics(
    pcorrect: pl.DataFrame,
    ratings: pl.DataFrame,
    models: Sequence[str],
    setters: Sequence[str],
    *,
    mode: str,
    sigma_stop: float,
    pass_threshold: float,
    params: RatingParams,
) -> dict[str, dict[str, float | int | None]]:
    """Per model, the share of its pairwise comparisons won (a draw 1/2) in `mode`, the events the
    rating builds (every two answerers of a question), two ways (core's `opponent_rates`):

    - `opponent_win_rate`: naive, over all its comparisons, so weighted by how often the schedule
      had it answer beside each opponent;
    - `opponent_win_rate_uniform`: the mean over the other models of its rate against each, a
      uniform mix of opponents, which is what the fixed game's naive rate estimates; an opponent it
      never shared a question with enters at TrueSkill's predicted probability from the ratings' mu
      and sigma of `mode` (`opponent_win_rate_imputed` counts them).

    Written only under the adaptive schedule (it chooses close opponents, which pulls naive rates
    towards 1/2); the fixed game's metrics stay as they were."""
    from pipeline.core.rating.adaptive import Standing, opponent_rates
    from pipeline.skate.ranking import question_games

    events = [e for q in question_games(pcorrect, mode, sigma_stop, pass_threshold, setters) for e in q.games]
    known = {
        row["player"]: Standing(float(row["mu"]), float(row["sigma"]))
        for row in ratings.filter(pl.col("mode") == mode).iter_rows(named=True)
        if row["mu"] is not None and row["sigma"] is not None and row["sigma"] > 0
    }
    return opponent_rates(events, known, params).metrics(models)
