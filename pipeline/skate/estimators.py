"""SKATE's requests per job for the run plan (`python -m pipeline plan`), from its schedule and
its own job code.

- generate: a setter makes 1 to `attempts` calls (one per try). Expected: its mean tries per
  round in earlier runs, else `attempts` (the most). The first try's prompt is known once the
  job's inputs exist, so its cache hit is counted exactly; later tries depend on why the last
  one failed, so they are counted as paid.
- answer: per question, `exact_option_sets` calls in exact mode; in adaptive mode the
  answerer's mean samples per question in earlier runs, else `max_samples` (the most). The mode
  is the schedule's per answerer: an exact-mode game samples a model that gives no
  log-probabilities (a reasoning model, say), and the note says why. Reply tokens are the
  entry's budgets (pipeline.core.models.reply_budgets), a reasoning allowance included. Once the
  round's questions exist, the job's own code runs through the probe gateway, so every
  request's cache hit is counted with its real key; before that a round has one question per
  player that entered one in earlier rounds (its entry rate), else one per player (the most).
- an adaptive table is priced part by part (pipeline/skate/adaptive.py: no rule plays a whole
  table, so the adaptive plan names `skate_answer` with a `part` wildcard), each part a generate or
  an answer job priced as above; the schedule is then the adaptive rounds', with the round the plan
  previews before it is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from pathlib import Path
from typing import Any, cast

import polars as pl

from pipeline.core.models import ProbeGateway, planned_reply_tokens, prompt_tokens
from pipeline.core.run import NO_MODEL, CallEstimate, PlanContext, PlannedJob

PARAMS = "skate.yaml"  # in the run's params directory (PlanContext.params_file)
OUT = "results/skate"
# a typical question's program length (characters) for prompts not yet written
TYPICAL_PROGRAM_CHARS = 400


class _NoSandbox:
    """The plan never runs a program: its placeholder replies hold none."""

    isolation = "none (plan)"

    def run_many(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the run plan must not run programs")


def _loaded(context: PlanContext) -> tuple[Any, Any]:
    if "skate" not in context.loaded:
        from pipeline.skate.config import load_skate
        from pipeline.skate.schedule import ROUNDS_DIR, game_schedule

        params = load_skate(context.params_file(PARAMS))
        # the fixed game, or the adaptive rounds written so far and the round the plan prices before it is
        schedule = game_schedule(
            params,
            context.models,
            source=context.params_source(PARAMS),
            rounds=context.path(ROUNDS_DIR),
            preview=context.preview.get("skate", ()),
        )
        context.loaded["skate"] = (params, schedule)
    return context.loaded["skate"]


def _history(context: PlanContext) -> dict[str, pl.DataFrame]:
    """Earlier runs' generate records and p(correct) tables (for tries and samples per model)."""
    if "skate-history" not in context.loaded:
        from pipeline.skate.records import read_generate

        out = context.path(OUT)
        tries = [
            {"setter": r.setter, "tries": len(r.attempts), "entered": r.question is not None}
            for r in (
                read_generate(p) for p in sorted(out.glob("generate/*.json")) if not p.name.endswith(".calls.json")
            )
        ]
        frames = [
            pl.read_parquet(p, columns=["answerer", "mode", "samples"])
            for p in sorted(out.glob("answers/*.pcorrect.parquet"))
        ]
        context.loaded["skate-history"] = {
            "tries": pl.DataFrame(tries, schema={"setter": pl.Utf8, "tries": pl.Int64, "entered": pl.Boolean}),
            "samples": pl.concat(frames)
            if frames
            else pl.DataFrame(schema={"answerer": pl.Utf8, "mode": pl.Utf8, "samples": pl.Int64}),
        }
    return context.loaded["skate-history"]


def _mean(frame: pl.DataFrame, column: str, value: str, of: str) -> float | None:
    rows = frame.filter(pl.col(column) == value)
    return float(cast(float, rows[of].mean())) if rows.height else None


def estimate_generate(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.skate.engine import run_generate
    from pipeline.skate.prompts import render_context, render_failures, setter_messages
    from pipeline.skate.schedule import generate_inputs

    params, schedule = _loaded(context)
    gen = schedule.find_generate(job.wildcards["gen_id"])
    entry = context.models.entry(gen.setter)
    if entry.is_bot:
        return [CallEstimate(gen.setter, "skate/generate", 0, 0, 0, 0)]
    measured = _mean(_history(context)["tries"], "setter", gen.setter, "tries")
    calls = max(1, round(measured)) if measured is not None else params.attempts
    note = "" if measured is not None else f"{gen.setter}: up to {params.attempts} tries per round"
    # the setter's visible budget as its entry decides it, plus a reasoning model's allowance
    cap = planned_reply_tokens(entry, "set", params.generation.max_tokens, "skate")
    out = context.path(OUT)
    cached, prompt = (
        0,
        prompt_tokens(
            setter_messages(
                round_number=gen.round,
                rounds=gen.of_rounds,
                context=render_context([], gen.setter, params.strategy),
                failures=render_failures([], params.attempts),
            )
        ),
    )
    if all(Path(context.root, f).exists() for f in generate_inputs(schedule, gen, OUT)):
        probe = ProbeGateway(context.models, root=str(context.root), answer_from_cache=False)
        with contextlib.redirect_stderr(io.StringIO()):  # its notes on placeholder tries are noise here
            asyncio.run(run_generate(params, context.models, schedule, gen, out, probe, _NoSandbox()))  # type: ignore[arg-type]
        first = probe.requests[0]
        cached, prompt = int(first.cached), first.prompt_tokens
    paid = calls - cached
    return [CallEstimate(gen.setter, "skate/generate", calls, cached, paid * prompt, paid * cap, note)]


def estimate_answer(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.skate.engine import run_answer
    from pipeline.skate.prompts import answer_messages
    from pipeline.skate.schedule import round_path

    params, schedule = _loaded(context)
    answer = schedule.find_answer(job.wildcards["answer_id"])
    entry = context.models.entry(answer.answerer)
    if entry.is_bot:
        return [CallEstimate(answer.answerer, "skate/answer", 0, 0, 0, 0)]
    settings = params.answering
    note = ""
    if answer.mode == "exact":
        per_question = settings.exact_option_sets
    else:
        measured = _mean(
            _history(context)["samples"].filter(pl.col("mode") == "sampled"), "answerer", answer.answerer, "samples"
        )
        per_question = max(settings.min_samples, round(measured)) if measured is not None else settings.max_samples
        note = (
            ""
            if measured is not None
            else f"{answer.answerer}: adaptive, at most {settings.max_samples} samples per question"
        )
    if answer.why_sampled:  # an exact-mode game samples this answerer (the schedule's choice)
        note = "; ".join(filter(None, [f"{answer.answerer} answers sampled: {answer.why_sampled}", note]))
    if context.path(f"{OUT}/rounds").joinpath(round_path("", answer.round_id).name).exists():
        fixed = settings.model_copy(update={"min_samples": per_question, "max_samples": per_question})
        probe = ProbeGateway(context.models, root=str(context.root))
        asyncio.run(
            run_answer(params.model_copy(update={"answering": fixed}), context.models, answer, context.path(OUT), probe)
        )
        paid = [r for r in probe.requests if not r.cached]
        return [
            CallEstimate(
                answer.answerer,
                "skate/answer",
                len(probe.requests),
                len(probe.requests) - len(paid),
                sum(r.prompt_tokens for r in paid),
                sum(r.max_tokens for r in paid),
                note,
                batchable=True,
            )
        ]
    # a round's questions: each setter's share of rounds it entered a question in earlier runs, else 1
    tries = _history(context)["tries"].with_columns(pl.col("entered").cast(pl.Float64))
    shares = [_mean(tries, "setter", setter, "entered") for setter in params.players]
    questions = sum(1.0 if share is None else share for share in shares)
    calls = round(questions * per_question)
    program = "x = 1\n" * (TYPICAL_PROGRAM_CHARS // 6)
    prompt = prompt_tokens(answer_messages(program, ("1", "2", "3", "4"), settings.few_shot))
    # exact: one token of visible reply; sampled: a letter (answering.max_tokens); plus any reasoning allowance
    cap = planned_reply_tokens(entry, "answer", 1 if answer.mode == "exact" else settings.max_tokens, "skate")
    return [
        CallEstimate(
            answer.answerer,
            "skate/answer",
            calls,
            0,
            calls * prompt,
            calls * cap,
            "; ".join(
                filter(
                    None,
                    [
                        note,
                        "questions not set yet: "
                        + ("one per player assumed" if None in shares else "setters' earlier entry rates"),
                    ],
                )
            ),
            batchable=True,
        )
    ]


def estimate_answer_or_part(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    """An answer job; or one part of an adaptive table (wildcard `part`: `generate/<id>` or
    `answers/<id>`), priced as that job."""
    part = job.wildcards.get("part")
    if part is None:
        return estimate_answer(job, context)
    kind, _, job_id = part.partition("/")
    if kind == "generate":
        return estimate_generate(PlannedJob("skate_generate", job.reason, {"gen_id": job_id}), context)
    return estimate_answer(PlannedJob("skate_answer", job.reason, {"answer_id": job_id}), context)


def no_calls(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    return [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0)]


def not_estimated(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    """A whole strategy game in one job: its calls are the main game's again under another
    context strategy (mostly new prompts); shown as unknown, never a made-up count."""
    return [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0, f"{job.rule}: calls not estimated yet")]


ESTIMATORS = {
    "skate_generate": estimate_generate,
    "skate_answer": estimate_answer_or_part,
    "skate_round": no_calls,
    "skate_rate": no_calls,
    "skate_report": no_calls,
    "skate_analyses": no_calls,
    "skate_strategies": no_calls,
    "skate_strategy_game": not_estimated,
}
