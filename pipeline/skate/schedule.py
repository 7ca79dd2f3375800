"""The game as a static graph of jobs, each named by a content id of everything that decides it.

generate(round, setter) -> round(round) -> answer(round, answerer) -> rate/report.

A job's id hashes its settings, its roster entry and the ids of the jobs it reads, so changing
anything upstream renames (and reruns) exactly the jobs downstream of it, while adding an
answer-only player adds jobs and renames none. (Changing the number of rounds renames every
setter's job: its prompt says "round n of N", as in the paper.) Which earlier jobs a generate job reads
depends on the augmentation strategy: every setter reads its own previous round (its earlier
questions, for the uniqueness check); historical_performance also reads its own answers of
earlier rounds; full_personal_context and full_context read every player's answers (and the
latter every earlier round's questions). With no_info and historical_tasks a setter's rounds do
not wait for anyone's answers, so rounds pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import ParamsError, content_id
from pipeline.core.models import ModelsParams
from pipeline.skate.config import SkateParams
from pipeline.skate.mcq import answer_mode
from pipeline.skate.prompts import PROMPT_VERSION
from pipeline.skate.uniqueness import EMBEDDING_MODEL

# bump when a code change alters what a job produces: every job id changes, so every job reruns
# (Snakemake sees only ids, inputs and params, not the package code)
SKATE_VERSION = "skate-3"


@dataclass(frozen=True)
class GenerateJob:
    job_id: str
    round: int
    setter: str
    previous: str | None  # this setter's generate job of the round before
    answers: tuple[str, ...]  # answer jobs whose p(correct) may enter the prompt
    rounds: tuple[str, ...]  # round jobs whose questions may enter the prompt (full_context)


@dataclass(frozen=True)
class RoundJob:
    job_id: str
    round: int
    generate: tuple[str, ...]  # in the order of params.players


@dataclass(frozen=True)
class AnswerJob:
    job_id: str
    round: int
    round_id: str
    answerer: str
    mode: str  # the estimator this answerer uses: answering.mode where it can (mcq.answer_mode)
    answer_only: bool
    why_sampled: str | None = None  # why an exact-mode game samples this answerer (not in the id)


@dataclass(frozen=True)
class Schedule:
    generate: dict[tuple[int, str], GenerateJob]
    rounds: dict[int, RoundJob]
    answers: dict[tuple[int, str], AnswerJob]

    def find_generate(self, job_id: str) -> GenerateJob:
        return _find(self.generate.values(), job_id, "generate")

    def find_round(self, job_id: str) -> RoundJob:
        return _find(self.rounds.values(), job_id, "round")

    def find_answer(self, job_id: str) -> AnswerJob:
        return _find(self.answers.values(), job_id, "answer")


def _find(jobs: Any, job_id: str, kind: str) -> Any:
    for job in jobs:
        if job.job_id == job_id:
            return job
    raise ParamsError(
        f"no skate {kind} job {job_id!r} in the schedule of the current params (params/skate.yaml "
        "or params/models.yaml changed since it was planned?); run `snakemake skate_all` again"
    )


def generation_settings(params: SkateParams) -> dict[str, Any]:
    """What decides a setter's questions beyond its roster entry and its inputs."""
    return {
        "version": SKATE_VERSION,
        "prompts": PROMPT_VERSION,
        "attempts": params.attempts,
        "rounds": params.rounds,  # the setter's prompt says "round n of N"
        "strategy": params.strategy,
        "similarity_threshold": params.similarity_threshold,
        "embedding": EMBEDDING_MODEL,
        "seed": params.seed,
        "generation": params.generation.model_dump(mode="json"),
        "sandbox": params.sandbox.limits().__dict__,
    }


def answering_settings(params: SkateParams) -> dict[str, Any]:
    answering = params.answering.identity()
    answering.pop("mode")
    return {"version": SKATE_VERSION, "prompts": PROMPT_VERSION, "seed": params.seed, "answering": answering}


def build_schedule(params: SkateParams, models: ModelsParams, source: str = "params/skate.yaml") -> Schedule:
    params.check_roster(models, source)
    entries = {name: models.entry(name).model_dump(mode="json") for name in params.answerers}
    game = generation_settings(params)
    answering = answering_settings(params)
    # per answerer: exact where the model gives log-probabilities, sampled otherwise, decided here
    # so that the run and its plan agree (a refusal at run time samples single questions instead)
    modes = {name: answer_mode(params.answering.mode, models.entry(name)) for name in params.answerers}
    generate: dict[tuple[int, str], GenerateJob] = {}
    rounds: dict[int, RoundJob] = {}
    answers: dict[tuple[int, str], AnswerJob] = {}
    for r in range(1, params.rounds + 1):
        for setter in params.players:
            previous = generate[(r - 1, setter)].job_id if r > 1 else None
            readers = {
                "no_info": [],
                "historical_tasks": [],
                "historical_performance": [setter],
            }.get(params.strategy, params.players)
            answer_ids = tuple(answers[(q, a)].job_id for q in range(1, r) for a in readers)
            round_ids = tuple(rounds[q].job_id for q in range(1, r)) if params.strategy == "full_context" else ()
            job_id = content_id(
                {
                    "job": "skate-generate",
                    "round": r,
                    "setter": entries[setter],
                    "game": game,
                    "previous": previous,
                    "answers": answer_ids,
                    "rounds": round_ids,
                }
            )
            generate[(r, setter)] = GenerateJob(job_id, r, setter, previous, answer_ids, round_ids)
        generated = tuple(generate[(r, s)].job_id for s in params.players)
        rounds[r] = RoundJob(content_id({"job": "skate-round", "round": r, "generate": generated}), r, generated)
        for answerer in params.answerers:
            mode, why = modes[answerer]
            job_id = content_id(
                {
                    "job": "skate-answer",
                    "round": rounds[r].job_id,
                    "answerer": entries[answerer],
                    "mode": mode,
                    "answering": answering,
                }
            )
            answers[(r, answerer)] = AnswerJob(
                job_id, r, rounds[r].job_id, answerer, mode, answerer in params.answer_only, why
            )
    return Schedule(generate, rounds, answers)


# -- where each job writes --------------------------------------------------------------------
def generate_path(out: str | Path, job_id: str) -> Path:
    return Path(out) / "generate" / f"{job_id}.json"


def round_path(out: str | Path, job_id: str) -> Path:
    return Path(out) / "rounds" / f"{job_id}.json"


def answer_paths(out: str | Path, job_id: str) -> dict[str, Path]:
    base = Path(out) / "answers"
    return {
        "samples": base / f"{job_id}.samples.parquet",
        "pcorrect": base / f"{job_id}.pcorrect.parquet",
        "calls": base / f"{job_id}.calls.parquet",
    }


def generate_inputs(schedule: Schedule, job: GenerateJob, out: str | Path) -> list[str]:
    files = [str(generate_path(out, job.previous))] if job.previous else []
    answers = {a.job_id: a for a in schedule.answers.values()}
    files += [str(answer_paths(out, answers[i].job_id)["pcorrect"]) for i in job.answers]
    files += [str(round_path(out, i)) for i in job.rounds]
    return files
