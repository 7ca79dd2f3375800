"""SKATE's per-job records: what a `generate` job writes to `generate/<job_id>.json` (one setter's
tries in one round, the question it entered and its history) and what a `round` job writes to
`rounds/<job_id>.json` (the round's question set, which the answer jobs read). The answer jobs
write pandera-checked tables (`schemas.py`), and `rate` reads the generate records back.

One frozen model per file (`SkateGenerate`, `SkateRound`), written and read through
`pipeline.core.artifacts.write_record` / `read_record`: the bytes are those the engine's dicts
gave (`tests/core/artifacts/test_records.py` reads every committed record and writes it back byte for byte).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import GameRecord, read_record

Number = int | float  # kept as written: an int stays an int, a float a float


class RunRecord(GameRecord):
    """One sandbox run of a candidate program."""

    exit_code: int | None
    limit: str | None  # the limit it hit (None: none)
    elapsed_s: Number
    stderr_tail: str


class AttemptRecord(GameRecord):
    """One try of the setter: its reply, the parsed question and the verdict."""

    attempt: int
    reply: str
    description: str
    program: str | None
    answer: str | None
    distractors: list[str]
    failure_kind: str | None
    failure: str | None
    max_similarity: Number | None
    similar_to: str | None
    question_id: str | None  # set when accepted
    status: str  # accepted, invalid, not_unique
    runs: list[RunRecord]


class QuestionRecord(GameRecord):
    """An entered question, as in a round's question set."""

    question_id: str
    round: int
    setter: str
    description: str
    program: str
    answer: str
    distractors: list[str]


class HistoryQuestion(QuestionRecord):
    """An entered question in a setter's history, with its sentence embedding (None until computed)."""

    embedding: list[float] | None


class SkateGenerate(GameRecord):
    """`generate/<job_id>.json`: one setter's tries in one round."""

    job_id: str
    round: int
    setter: str
    strategy: str
    attempts: list[AttemptRecord]
    question: HistoryQuestion | None  # None: no try was accepted
    history: list[HistoryQuestion]  # the setter's entered questions so far, this round's included
    isolation: str  # the sandbox's isolation


class SkateRound(GameRecord):
    """`rounds/<job_id>.json`: the round's question set, the setters in player order."""

    job_id: str
    round: int
    questions: list[QuestionRecord]
    no_question: list[str]  # setters that entered no question


def as_generate(record: SkateGenerate | Mapping[str, Any]) -> SkateGenerate:
    return record if isinstance(record, SkateGenerate) else SkateGenerate.model_validate(record)


def as_round(record: SkateRound | Mapping[str, Any]) -> SkateRound:
    return record if isinstance(record, SkateRound) else SkateRound.model_validate(record)


def read_generate(path: str | Path) -> SkateGenerate:
    return read_record(path, SkateGenerate)


def read_round(path: str | Path) -> SkateRound:
    return read_record(path, SkateRound)
