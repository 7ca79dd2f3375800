"""A round's question set: the entered question of every setter, in player order."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import write_record
from pipeline.skate.config import SkateParams
from pipeline.skate.mcq import Question
from pipeline.skate.records import SkateRound, as_round, read_generate
from pipeline.skate.schedule import RoundJob, generate_path, round_path


def run_round(params: SkateParams, job: RoundJob, out: str | Path) -> dict[str, Any]:
    """The round's question set: the entered question of every setter, in player order (the
    `SkateRound` record's JSON object)."""
    questions, absent = [], []
    for generate_id in job.generate:
        record = read_generate(generate_path(out, generate_id))
        if record.question is None:
            absent.append(record.setter)
        else:
            question = record.question.to_json()
            question.pop("embedding", None)
            questions.append(question)
    return {"job_id": job.job_id, "round": job.round, "questions": questions, "no_question": absent}


def round_questions(record: SkateRound | Mapping[str, Any]) -> list[Question]:
    return [
        Question(q.question_id, q.round, q.setter, q.description, q.program, q.answer, tuple(q.distractors))
        for q in as_round(record).questions
    ]


def write_round(out: str | Path, record: SkateRound | Mapping[str, Any]) -> None:
    """Write the round's record (typed, or its JSON object, which is checked first)."""
    typed = as_round(record)
    write_record(round_path(out, typed.job_id), typed)
