"""The whole game in one process, in schedule order, without Snakemake.

The pipeline runs each job as its own Snakemake job (cached, resumable, parallel); this runs the
same job functions one after another, for quick experiments, tests and benchmarks. Outputs land
in the same places, so a later `snakemake skate_all` finds them done.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.progress import reporting_moves
from pipeline.core.models import Gateway, ModelsParams
from pipeline.core.sandbox import Sandbox
from pipeline.skate.config import SkateParams
from pipeline.skate.engine import moves_per_question, run_answer, run_generate, write_answer, write_generate
from pipeline.skate.report import write_rate, write_report
from pipeline.skate.rounds import run_round, write_round
from pipeline.skate.schedule import Schedule, build_schedule


def play_game(
    params: SkateParams,
    models: ModelsParams,
    out: str | Path,
    *,
    report: bool = True,
    sandbox: Sandbox | None = None,
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Play every round, rate, and (when `report`) write metrics and plots; returns the metrics
    (or the rate summary without a report). It is the fixed game whatever `adaptive` says: the
    adaptive rounds need the workflow's round ledger."""
    params = params.fixed()
    schedule = build_schedule(params, models)
    box = sandbox or Sandbox(params.sandbox.limits(), allow_unisolated=params.sandbox.allow_unisolated)
    with reporting_moves(planned=planned_moves(params, schedule)):  # moves and time left on stderr
        _play_rounds(params, models, schedule, out, box, cache_dir)
    summary = write_rate(params, schedule, out, out)
    return write_report(params, out) if report else summary


def planned_moves(params: SkateParams, schedule: Schedule) -> int:
    """The most moves of the whole game, for its progress line: every setter's every try, and every
    answerer on one question per setter in every round at its most moves per question."""
    tries = len(schedule.generate) * params.attempts
    return tries + sum(len(params.players) * moves_per_question(params, job.mode) for job in schedule.answers.values())


def _play_rounds(
    params: SkateParams,
    models: ModelsParams,
    schedule: Schedule,
    out: str | Path,
    box: Sandbox,
    cache_dir: str | Path | None,
) -> None:
    for r in range(1, params.rounds + 1):
        for setter in params.players:
            job = schedule.generate[(r, setter)]
            gateway = Gateway(models, job=f"skate/generate/{job.job_id}", cache_dir=cache_dir)
            record = asyncio.run(run_generate(params, models, schedule, job, out, gateway, box))
            write_generate(out, record, gateway)
        write_round(out, run_round(params, schedule.rounds[r], out))
        for answerer in params.answerers:
            answer_job = schedule.answers[(r, answerer)]
            gateway = Gateway(models, job=f"skate/answer/{answer_job.job_id}", cache_dir=cache_dir)
            samples, pcorrect = asyncio.run(run_answer(params, models, answer_job, out, gateway))
            write_answer(out, answer_job, samples, pcorrect, gateway)
