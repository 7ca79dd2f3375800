"""The stage's closing jobs.

rate: every job's output in, the game's tables and multi-pass pairwise TrueSkill (both modes) out.
report: tables in, metrics.json, the spec's plots and the points-of-difference list out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import polars as pl

from pipeline.core.artifacts import CallsSchema, read_table, write_table, write_text_atomic
from pipeline.core.models import empty_at_limit_counts
from pipeline.core.rating.joint import EVENTS_FILE, write_rating_events
from pipeline.skate.config import SkateParams
from pipeline.skate.metrics import cumulative_by_round, metrics_json, opponent_rate_metrics, skills, variance_table
from pipeline.skate.ranking import MODES, history, question_games, ratings
from pipeline.skate.records import read_generate
from pipeline.skate.schedule import Schedule, answer_paths, generate_path
from pipeline.skate.schemas import (
    PCorrectSchema,
    QuestionsSchema,
    RatingHistorySchema,
    SamplesSchema,
    SetterRoundsSchema,
    SkateRatingsSchema,
    VarianceSchema,
)


def _questions_tables(schedule: Schedule, out: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    attempts, setter_rounds = [], []
    for job in schedule.generate.values():
        record = read_generate(generate_path(out, job.job_id))
        for a in record.attempts:
            attempts.append(
                {
                    "round": record.round,
                    "setter": record.setter,
                    "attempt": a.attempt,
                    "status": a.status,
                    "failure_kind": a.failure_kind,
                    "failure": a.failure,
                    "question_id": a.question_id,
                    "description": a.description,
                    "program": a.program,
                    "answer": a.answer,
                    "distractors": json.dumps(a.distractors, ensure_ascii=False),
                    "n_distractors": len(a.distractors),
                    "max_similarity": a.max_similarity,
                    "similar_to": a.similar_to,
                    "reply": a.reply,
                    "generate_job": job.job_id,
                }
            )
        question = record.question
        setter_rounds.append(
            {
                "round": record.round,
                "setter": record.setter,
                "question_id": None if question is None else question.question_id,
                "attempts_used": len(record.attempts),
                "outcome": "no_question" if question is None else "question",
            }
        )
    q_schema = {
        "round": pl.Int64,
        "setter": pl.String,
        "attempt": pl.Int64,
        "status": pl.String,
        "failure_kind": pl.String,
        "failure": pl.String,
        "question_id": pl.String,
        "description": pl.String,
        "program": pl.String,
        "answer": pl.String,
        "distractors": pl.String,
        "n_distractors": pl.Int64,
        "max_similarity": pl.Float64,
        "similar_to": pl.String,
        "reply": pl.String,
        "generate_job": pl.String,
    }
    s_schema = {
        "round": pl.Int64,
        "setter": pl.String,
        "question_id": pl.String,
        "attempts_used": pl.Int64,
        "outcome": pl.String,
    }
    return (
        pl.DataFrame(attempts, schema=q_schema, orient="row"),
        pl.DataFrame(setter_rounds, schema=s_schema, orient="row"),
    )


def write_rate(params: SkateParams, schedule: Schedule, games_dir: str | Path, out: str | Path) -> dict[str, Any]:
    """Collect every job's output into the game's tables; rate both ranking modes."""
    out = Path(out)
    questions, setter_rounds = _questions_tables(schedule, games_dir)
    answers = list(schedule.answers.values())
    samples = pl.concat([read_table(answer_paths(games_dir, a.job_id)["samples"], SamplesSchema) for a in answers])
    tables = [read_table(answer_paths(games_dir, a.job_id)["pcorrect"], PCorrectSchema) for a in answers]
    for job, table in zip(answers, tables):
        # each answerer's estimator is the schedule's (an exact job may sample single questions
        # whose log-probabilities did not come back; a sampled job never holds exact rows)
        if job.mode == "sampled" and not table.filter(pl.col("mode") == "exact").is_empty():
            raise ValueError(
                f"answer job {job.job_id} ({job.answerer}) is scheduled sampled but its p(correct) "
                "table holds exact rows (a stale file?); delete it and rerun the job"
            )
    pcorrect = pl.concat(tables)
    calls = [read_table(answer_paths(games_dir, a.job_id)["calls"], CallsSchema) for a in answers]
    calls += [
        read_table(generate_path(games_dir, g.job_id).with_suffix(".calls.parquet"), CallsSchema)
        for g in schedule.generate.values()
    ]
    rating_params = params.ranking.rating_params()
    rating_frames, history_frames = [], []
    events = 0
    for mode in MODES:
        games = question_games(
            pcorrect, mode, params.answering.sigma_stop, params.ranking.pass_threshold, params.players
        )
        events += sum(len(g.games) for g in games)
        if mode == params.ranking.primary:  # the headline's events, for the combined leaderboard
            # a game is one question and pair of answerers (as SKATE's TrueSkill and its bootstrap count them)
            write_rating_events(
                out / EVENTS_FILE,
                [(f"{g.question_id}/{event.a}/{event.b}", event) for g in games for event in g.games],
            )
        rating_frames.append(
            ratings(
                games,
                rating_params,
                params.ranking.passes,
                params.seed,
                mode,
                resamples=params.ranking.bootstrap_resamples,
            )
        )
        history_frames.append(history(games, rating_params, mode))
    write_table(out / "questions.parquet", questions, QuestionsSchema, sort_by=["round", "setter", "attempt"])
    write_table(out / "setter_rounds.parquet", setter_rounds, SetterRoundsSchema, sort_by=["round", "setter"])
    write_table(
        out / "samples.parquet", samples, SamplesSchema, sort_by=["round", "question_id", "answerer", "sample_index"]
    )
    write_table(out / "pcorrect.parquet", pcorrect, PCorrectSchema, sort_by=["round", "question_id", "answerer"])
    write_table(
        out / "calls.parquet", pl.concat(calls), CallsSchema, sort_by=["job", "roster_name", "request_id", "attempt"]
    )
    write_table(out / "ratings.parquet", pl.concat(rating_frames), SkateRatingsSchema, sort_by=["mode", "player"])
    write_table(
        out / "rating_history.parquet",
        pl.concat(history_frames),
        RatingHistorySchema,
        sort_by=["mode", "step", "player"],
    )
    return {
        "questions": pcorrect["question_id"].n_unique(),
        "attempts": questions.height,
        "samples": samples.height,
        "events": events,
    }


def _points_of_difference(variance: pl.DataFrame, limit: int = 5) -> str:
    lines = [
        "# Points of difference",
        "",
        "Questions on which the models' p(correct) differ most (variance across answerers).",
        "",
    ]
    top = variance.sort(["variance", "question_id"], descending=[True, False]).head(limit)
    if top.height == 0:
        lines.append("No question was answered.")
    for row in top.iter_rows(named=True):
        scores = ", ".join(f"{k} {v:.2f}" for k, v in json.loads(row["p_correct_by_answerer"]).items())
        lines += [
            f"## {row['question_id']} (round {row['round']}, set by {row['setter']}), variance {row['variance']:.3f}",
            "",
            f"{row['description']}",
            "",
            "```python",
            row["program"],
            "```",
            "",
            f"Output: `{row['answer']}`",
            "",
            f"p(correct): {scores}",
            "",
        ]
    return "\n".join(lines) + "\n"


def write_report(params: SkateParams, out: str | Path) -> dict[str, Any]:
    out = Path(out)
    questions = read_table(out / "questions.parquet", QuestionsSchema)
    setter_rounds = read_table(out / "setter_rounds.parquet", SetterRoundsSchema)
    pcorrect = read_table(out / "pcorrect.parquet", PCorrectSchema)
    rating_table = read_table(out / "ratings.parquet", SkateRatingsSchema)
    rating_history = read_table(out / "rating_history.parquet", RatingHistorySchema)
    models = params.answerers
    variance = variance_table(pcorrect, questions)
    write_table(out / "variance.parquet", variance, VarianceSchema, sort_by=["question_id"])
    write_text_atomic(out / "points_of_difference.md", _points_of_difference(variance))
    skill_rows = [{"model": m, **values} for m, values in skills(pcorrect, models, params.players).items()]
    skill_frame = pl.DataFrame(
        skill_rows,
        schema={
            "model": pl.String,
            "answering_skill": pl.Float64,
            "asking_skill": pl.Float64,
            "self_preference": pl.Float64,
            "self_preference_confident": pl.Float64,
            "p_correct_own_questions": pl.Float64,
        },
        orient="row",
    )
    metrics = metrics_json(
        rating_table,
        pcorrect,
        questions,
        setter_rounds,
        models,
        params.ranking.primary,
        setters=params.players,
        history=rating_history,
        headline=params.ranking.headline,
    )
    # replies cut by the token limit before any visible text (a reasoning model out of allowance)
    starved = empty_at_limit_counts(read_table(out / "calls.parquet", CallsSchema))
    metrics = metrics.with_metrics({model: {"empty_at_token_limit": starved.get(model, 0)} for model in metrics.models})
    rounds = params.rounds
    if params.adaptive.enabled:  # the adaptive schedule's correction (docs/adaptive.md); a fixed game's as before
        rates = opponent_rate_metrics(
            pcorrect,
            rating_table,
            models,
            params.players,
            mode=params.ranking.primary,
            sigma_stop=params.answering.sigma_stop,
            pass_threshold=params.ranking.pass_threshold,
            params=params.ranking.rating_params(),
        )
        metrics = metrics.with_metrics(rates)
        rounds = int(cast(int, pcorrect["round"].max() or 0))  # the rounds played: `rounds` is no length here
    metrics.write(out / "metrics.json")
    from pipeline.skate.plots import write_plots  # altair: about 0.3 CPU-s, which a rate job does not need

    write_plots(out, rating_history, skill_frame, cumulative_by_round(pcorrect, rounds, params.players), variance)
    return metrics.to_json()
