"""SKATE games as dataset rows: one row per setter's round (setter_rounds.parquet). Its moves are the
setter's tries (each reply with the parsed program and the verdict), then every answerer's sampled
answers to the question it entered; each answerer's result is its p(correct)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts.dataset import (
    DatasetGame,
    DatasetMove,
    DatasetResult,
    DatasetSeat,
    details,
    rated_games,
)

SETTER = "setter"


def answerer_seat(answerer: str) -> str:
    return f"answerer:{answerer}"  # the setter answers its own question too, in a seat of its own


def dataset_rows(folder: Path) -> list[DatasetGame]:
    from pipeline.core.artifacts import read_table
    from pipeline.skate.schemas import PCorrectSchema, QuestionsSchema, SamplesSchema, SetterRoundsSchema

    if not (folder / "setter_rounds.parquet").exists():
        return []
    setter_rounds = read_table(folder / "setter_rounds.parquet", SetterRoundsSchema)
    tries = _grouped(read_table(folder / "questions.parquet", QuestionsSchema), ("round", "setter"))
    samples = _grouped(read_table(folder / "samples.parquet", SamplesSchema), ("question_id",))
    pcorrect = _grouped(read_table(folder / "pcorrect.parquet", PCorrectSchema), ("question_id",))
    answer_jobs = _answer_jobs(folder / "answers")
    rated = {game.split("/", 1)[0] for game in rated_games(folder)}  # question/answerer/answerer
    games = []
    for played in setter_rounds.iter_rows(named=True):
        mine = sorted(tries.get((played["round"], played["setter"]), []), key=lambda t: t["attempt"])
        question = played["question_id"]
        answers = sorted(samples.get((question,), []), key=lambda s: (s["answerer"], s["sample_index"]))
        scores = sorted(pcorrect.get((question,), []), key=lambda p: p["answerer"])
        generate_job = mine[0]["generate_job"] if mine else None
        entered = next((t for t in mine if t["status"] == "accepted"), None)
        answerers = sorted({s["answerer"] for s in answers} | {p["answerer"] for p in scores})
        games.append(
            DatasetGame(
                game_id=generate_job or f"{played['round']}/{played['setter']}",
                params={
                    "round": played["round"],
                    "setter": played["setter"],
                    "question_id": question,
                    "description": entered["description"] if entered else None,
                    "program": entered["program"] if entered else None,
                    "answer": entered["answer"] if entered else None,
                    "distractors": json.loads(entered["distractors"]) if entered else None,
                },
                seats=(
                    DatasetSeat(SETTER, played["setter"], SETTER),
                    *(DatasetSeat(answerer_seat(a), a, "answerer") for a in answerers),
                ),
                moves=(*(_try(t) for t in mine), *(_answer(s) for s in answers)),
                results=(
                    DatasetResult(SETTER, details=details(attempts_used=played["attempts_used"])),
                    *(_score(p) for p in scores),
                ),
                end_reason=played["outcome"],
                rated=question in rated,
                jobs=tuple(
                    sorted(
                        ([f"skate/generate/{generate_job}"] if generate_job else [])
                        + [f"skate/answer/{job}" for job in answer_jobs.get(question or "", [])]
                    )
                ),
            )
        )
    return games


def _grouped(frame: pl.DataFrame, keys: tuple[str, ...]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    grouped: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in frame.iter_rows(named=True):
        grouped[tuple(row[k] for k in keys)].append(row)
    return grouped


def _answer_jobs(answers: Path) -> dict[str, list[str]]:
    """question_id -> the answer jobs (answers/<job>.samples.parquet) that answered it."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(answers.glob("*.samples.parquet")):
        job = path.name.removesuffix(".samples.parquet")
        for question in pl.read_parquet(path, columns=["question_id"])["question_id"].unique().sort():
            found[question].append(job)
    return found


def _try(t: dict[str, Any]) -> DatasetMove:
    return DatasetMove(
        "question",
        SETTER,
        t["round"],
        t["reply"],
        t["program"],  # the program read from the reply (None: none found)
        details(
            attempt=t["attempt"],
            status=t["status"],  # accepted, invalid, not_unique
            failure_kind=t["failure_kind"],
            failure=t["failure"],
            description=t["description"] or None,
            answer=t["answer"],
            distractors=json.loads(t["distractors"]) or None,
            max_similarity=t["max_similarity"],
            similar_to=t["similar_to"],
        ),
    )


def _answer(s: dict[str, Any]) -> DatasetMove:
    return DatasetMove(
        "answer",
        answerer_seat(s["answerer"]),
        s["round"],
        s["reply"],
        s["parsed"],  # the option letter read from the reply
        details(
            mode=s["mode"],
            sample_index=s["sample_index"],
            options=s["options"],
            correct_letter=s["correct_letter"],
            p_correct=s["p_correct"],
            letter_mass=s["letter_mass"],
        ),
    )


def _score(p: dict[str, Any]) -> DatasetResult:
    return DatasetResult(
        answerer_seat(p["answerer"]),
        score=p["p_correct"],
        details=details(
            mode=p["mode"],
            std_error=p["std_error"],
            samples=p["samples"],
            answer_only=p["answer_only"],
            outside_mass=p["outside_mass"],
            unparsed_share=p["unparsed_share"],
        ),
    )
