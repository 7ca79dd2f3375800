"""The three kinds of game jobs: a setter's round (generate), a round's question set, and one
answerer's p(correct) on a round's questions.

A setter's attempt loop runs the sandbox and the uniqueness check inside the generate job,
because the next attempt's prompt must say why the last one failed.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

import pipeline.skate.bots  # noqa: F401  (registers the skate bots)
from pipeline.core.artifacts import content_id, read_table, seed_from, write_record, write_table
from pipeline.core.artifacts.progress import expect_moves
from pipeline.core.models import Gateway, ModelsParams, MoveRequest, Player, gather_moves, make_players
from pipeline.core.sandbox import Sandbox
from pipeline.skate import uniqueness
from pipeline.skate.config import SkateParams
from pipeline.skate.mcq import answer_question, summary_row
from pipeline.skate.parsing import parse_question
from pipeline.skate.prompts import ContextItem, FailedAttempt, render_context, render_failures, setter_messages
from pipeline.skate.records import SkateGenerate, as_generate, read_generate, read_round
from pipeline.skate.rounds import round_questions
from pipeline.skate.schedule import (
    AnswerJob,
    GenerateJob,
    Schedule,
    answer_paths,
    generate_path,
    round_path,
)
from pipeline.skate.schemas import PCorrectSchema, SamplesSchema
from pipeline.skate.verify import verify_question


def game_seed(params: SkateParams) -> int:
    """The players' seed: constant over the game, so a request's reply depends only on its key
    and content (and a rerun or a changed neighbour job hits the response cache)."""
    return seed_from("skate", params.seed)


# -- generate ---------------------------------------------------------------------------------
def context_items(
    params: SkateParams, schedule: Schedule, job: GenerateJob, history: list[dict[str, Any]], out: str | Path
) -> list[ContextItem]:
    """The earlier questions this setter may see, numbered in game order, then shuffled."""
    if params.strategy == "no_info":
        return []
    questions: list[dict[str, Any]] = list(history)
    if params.strategy == "full_context":
        questions = [q.to_json() for rid in job.rounds for q in read_round(round_path(out, rid)).questions]
    answers = {a.job_id: a for a in schedule.answers.values()}
    p_by_question: dict[str, dict[str, float]] = {}
    for answer_id in job.answers:
        table = read_table(answer_paths(out, answers[answer_id].job_id)["pcorrect"], PCorrectSchema)
        for row in table.iter_rows(named=True):
            p_by_question.setdefault(row["question_id"], {})[row["answerer"]] = row["p_correct"]
    order = {s: i for i, s in enumerate(params.players)}
    questions.sort(key=lambda q: (q["round"], order.get(q["setter"], len(order)), q["question_id"]))
    items = [
        ContextItem(
            number=n,
            round=q["round"],
            setter=q["setter"],
            description=q["description"],
            program=q["program"],
            p_correct=p_by_question.get(q["question_id"], {}),
        )
        for n, q in enumerate(questions, start=1)
    ]
    limit = params.generation.max_context_items
    if limit is not None and limit < len(items):
        items = items[len(items) - limit :]
    random.Random(seed_from("skate-context", job.job_id)).shuffle(items)
    return items


def _embed_history(history: list[dict[str, Any]]) -> None:
    missing = [q for q in history if q.get("embedding") is None]
    if missing:
        vectors = uniqueness.embed([uniqueness.question_text(q["description"], q["program"]) for q in missing])
        for question, vector in zip(missing, vectors):
            question["embedding"] = vector.tolist()


async def run_generate(
    params: SkateParams,
    models: ModelsParams,
    schedule: Schedule,
    job: GenerateJob,
    out: str | Path,
    gateway: Gateway,
    sandbox: Sandbox,
) -> dict[str, Any]:
    """Up to `attempts` tries of one setter in one round; the first valid, unique one is entered."""
    player = make_players(models, gateway, game_seed(params), names=[job.setter], game="skate")[job.setter]
    return await generate(player, params, schedule, job, out, sandbox)


async def generate(
    player: Player, params: SkateParams, schedule: Schedule, job: GenerateJob, out: str | Path, sandbox: Sandbox
) -> dict[str, Any]:
    """`run_generate` with the setter's player (seeded by `game_seed`): its record's JSON object."""
    history: list[dict[str, Any]] = (
        [q.to_json() for q in read_generate(generate_path(out, job.previous)).history] if job.previous else []
    )
    context = render_context(context_items(params, schedule, job, history, out), job.setter, params.strategy)
    expect_moves(params.attempts)  # the job's progress line: at most one move per try
    attempts: list[dict[str, Any]] = []
    failures: list[FailedAttempt] = []
    accepted: dict[str, Any] | None = None
    for attempt in range(1, params.attempts + 1):
        messages = setter_messages(
            round_number=job.round,
            rounds=job.of_rounds,
            context=context,
            failures=render_failures(failures, params.attempts - attempt + 1),
        )
        reply = await player.act(
            MoveRequest(
                messages=messages,
                key=f"set/round{job.round}/attempt{attempt}",
                kind="set",
                max_tokens=params.generation.max_tokens,
                state={
                    "round": job.round,
                    "attempt": attempt,
                    "history": [q["description"] for q in history],
                    "failures": [f.reason for f in failures],
                },
            )
        )
        parsed = parse_question(reply.text)
        verdict = verify_question(
            parsed,
            sandbox,
            max_program_chars=params.generation.max_program_chars,
            max_output_chars=params.generation.max_output_chars,
        )
        record: dict[str, Any] = {
            "attempt": attempt,
            "reply": reply.text,
            "description": parsed.description,
            "program": parsed.program,
            "answer": verdict.answer if verdict.valid else (verdict.answer or None),
            "distractors": list(verdict.distractors),
            "failure_kind": verdict.failure_kind,
            "failure": verdict.failure,
            "max_similarity": None,
            "similar_to": None,
            "question_id": None,
            "status": "invalid",
            "runs": [
                {"exit_code": r.exit_code, "limit": r.limit, "elapsed_s": r.elapsed_s, "stderr_tail": r.stderr[-500:]}
                for r in verdict.runs
            ],
        }
        if verdict.valid:
            assert parsed.program is not None
            question_id = content_id({"generate": job.job_id, "attempt": attempt, "program": parsed.program})
            candidate: dict[str, Any] = {
                "question_id": question_id,
                "round": job.round,
                "setter": job.setter,
                "description": parsed.description,
                "program": parsed.program,
                "answer": verdict.answer,
                "distractors": list(verdict.distractors),
                "embedding": None,
            }
            similarity = uniqueness.Similarity(None, None)
            if history:
                _embed_history(history)
                _embed_history([candidate])
                similarity = uniqueness.most_similar(
                    candidate["embedding"], [(q["question_id"], q["embedding"]) for q in history]
                )
            record.update(max_similarity=similarity.max_similarity, similar_to=similarity.similar_to)
            if similarity.max_similarity is not None and similarity.max_similarity >= params.similarity_threshold:
                earlier = next(q for q in history if q["question_id"] == similarity.similar_to)
                record.update(
                    status="not_unique",
                    failure_kind="too_similar",
                    failure=f"too similar (cosine {similarity.max_similarity:.2f}, limit "
                    f"{params.similarity_threshold:.2f}) to your question of round {earlier['round']}: "
                    f"{earlier['description'] or earlier['program'][:80]}",
                )
            else:
                record.update(status="accepted", question_id=question_id)
                accepted = candidate
        attempts.append(record)
        if accepted is not None:
            break
        failures.append(FailedAttempt(attempt, record["failure"] or "invalid", parsed.program))
        print(f"round {job.round} {job.setter} attempt {attempt}: {record['failure_kind']}", file=sys.stderr)
    return {
        "job_id": job.job_id,
        "round": job.round,
        "setter": job.setter,
        "strategy": params.strategy,
        "attempts": attempts,
        "question": accepted,
        "history": [*history, accepted] if accepted is not None else history,
        "isolation": sandbox.isolation,
    }


# -- answer -----------------------------------------------------------------------------------
def moves_per_question(params: SkateParams, mode: str) -> int:
    """An answerer's most moves on one question: its option sets in exact mode, the sample cap when
    sampled (the stopping rule usually ends sooner). For the job's progress line."""
    return params.answering.exact_option_sets if mode == "exact" else params.answering.max_samples


async def run_answer(
    params: SkateParams, models: ModelsParams, job: AnswerJob, out: str | Path, gateway: Gateway
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One answerer's samples and p(correct) on every question of one round, in the job's mode
    (the schedule's choice for this answerer); a question whose exact answer came back without
    log-probabilities is sampled instead, and its rows say so."""
    player = make_players(models, gateway, game_seed(params), names=[job.answerer], game="skate")[job.answerer]
    return await answer(player, params, job, out)


async def answer(
    player: Player, params: SkateParams, job: AnswerJob, out: str | Path
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`run_answer` with the answerer's player (seeded by `game_seed`): its samples and p(correct) tables."""
    questions = round_questions(read_round(round_path(out, job.round_id)))
    expect_moves(len(questions) * moves_per_question(params, job.mode))  # the job's progress line
    results = await gather_moves(
        *(answer_question(player, q, job.mode, params.answering, params.seed) for q in questions)
    )
    samples = [row for rows, _ in results for row in rows]
    summaries = [summary_row(q, job.answerer, s["mode"], s, job.answer_only) for q, (_, s) in zip(questions, results)]
    fallen = sum(s["mode"] != job.mode for _, s in results)
    if fallen:
        print(
            f"skate: {job.answerer} returned no log-probabilities on {fallen} of {len(results)} question(s) "
            f"of round {job.round} (refused or not returned: a refusal is in the calls table's dropped_params); "
            "those were answered by sampling",
            file=sys.stderr,
        )
    samples_frame = (
        pl.DataFrame(samples, schema=_SAMPLE_DTYPES, orient="row") if samples else pl.DataFrame(schema=_SAMPLE_DTYPES)
    )
    summary_frame = (
        pl.DataFrame(summaries, schema=_PCORRECT_DTYPES, orient="row")
        if summaries
        else pl.DataFrame(schema=_PCORRECT_DTYPES)
    )
    return samples_frame, summary_frame


_SAMPLE_DTYPES = {
    "question_id": pl.String,
    "round": pl.Int64,
    "setter": pl.String,
    "answerer": pl.String,
    "mode": pl.String,
    "sample_index": pl.Int64,
    "options": pl.String,
    "correct_letter": pl.String,
    "reply": pl.String,
    "parsed": pl.String,
    "p_correct": pl.Float64,
    "letter_mass": pl.Float64,
}
_PCORRECT_DTYPES = {
    "question_id": pl.String,
    "round": pl.Int64,
    "setter": pl.String,
    "answerer": pl.String,
    "mode": pl.String,
    "p_correct": pl.Float64,
    "std_error": pl.Float64,
    "samples": pl.Int64,
    "answer_only": pl.Boolean,
    "outside_mass": pl.Float64,
    "unparsed_share": pl.Float64,
}


def write_answer(
    out: str | Path, job: AnswerJob, samples: pl.DataFrame, summary: pl.DataFrame, gateway: Gateway
) -> None:
    paths = answer_paths(out, job.job_id)
    gateway.write_calls(paths["calls"])
    write_table(paths["samples"], samples, SamplesSchema, sort_by=["question_id", "answerer", "sample_index"])
    write_table(paths["pcorrect"], summary, PCorrectSchema, sort_by=["question_id", "answerer"])


def write_generate(out: str | Path, record: SkateGenerate | Mapping[str, Any], gateway: Gateway) -> None:
    """Write the job's calls table, then its record (typed, or its JSON object, which is checked first)."""
    typed = as_generate(record)
    path = generate_path(out, typed.job_id)
    gateway.write_calls(path.with_suffix(".calls.parquet"))
    write_record(path, typed)
