"""A round's question set: the entered question of every setter, in player order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import write_json_atomic
from pipeline.skate.config import SkateParams
from pipeline.skate.mcq import Question
from pipeline.skate.schedule import RoundJob, generate_path, round_path


def read_json(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def run_round(params: SkateParams, job: RoundJob, out: str | Path) -> dict[str, Any]:
    """The round's question set: the entered question of every setter, in player order."""
    questions, absent = [], []
    for generate_id in job.generate:
        record = read_json(generate_path(out, generate_id))
        if record["question"] is None:
            absent.append(record["setter"])
        else:
            question = dict(record["question"])
            question.pop("embedding", None)
            questions.append(question)
    return {"job_id": job.job_id, "round": job.round, "questions": questions, "no_question": absent}


def round_questions(record: dict[str, Any]) -> list[Question]:
    return [
        Question(q["question_id"], q["round"], q["setter"], q["description"], q["program"], q["answer"],
                 tuple(q["distractors"]))
        for q in record["questions"]
    ]


def write_round(out: str | Path, record: dict[str, Any]) -> None:
    write_json_atomic(round_path(out, record["job_id"]), record)
