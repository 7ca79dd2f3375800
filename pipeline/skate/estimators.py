"""SKATE's requests per job for the run plan (`python -m pipeline plan`), from its schedule and
its own job code.

Every job gets a bound (the most it can send, every reply at its cap) and an expectation:

- generate: a setter makes 1 to `attempts` calls (one per try): the bound is `attempts`, each later
  try's prompt holding the earlier tries' replies. Expected: its mean tries per round in earlier
  runs, else `attempts`. The first try's prompt is known once the job's inputs exist, so its cache
  hit is counted exactly; later tries depend on why the last one failed, so they are counted as paid.
- answer: per question, `exact_option_sets` calls in exact mode, and up to `max_samples` more when
  a reply comes back without log-probabilities (the question is then sampled: a provider that gives
  none), expected only as often as the answerer fell back in earlier runs; in adaptive mode at most
  `max_samples`, expected the answerer's mean samples per question in earlier runs, else the stopping
  rule's mean for an answerer of unknown accuracy (`expected_samples`). A round holds at most one
  question per player. The mode
  is the schedule's per answerer: an exact-mode game samples a model that gives no
  log-probabilities (a reasoning model, say), and the note says why. Reply tokens are the
  entry's budgets (pipeline.core.models.reply_budgets), a reasoning allowance included. Once the
  round's questions exist, the job's own code runs through the probe gateway, so every
  request's cache hit is counted with its real key; before that a round has one question per
  player that entered one in earlier rounds (its entry rate), else one per player (the most).
- a strategy game (`skate_strategy_game`: the whole game again under another context strategy, in
  one job) is its own schedule's generate and answer jobs, priced as above from its own folder.
- an adaptive table is priced part by part (pipeline/skate/adaptive.py: no rule plays a whole
  table, so the adaptive plan names `skate_answer` with a `part` wildcard), each part a generate or
  an answer job priced as above; the schedule is then the adaptive rounds', with the round the plan
  previews before it is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
from pathlib import Path
from typing import Any, cast

import polars as pl

from pipeline.core.models import ProbeGateway, most_reply_tokens, planned_reply_tokens, prompt_tokens
from pipeline.core.run import NO_MODEL, CallEstimate, PlanContext, PlannedJob, summed

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
    params, schedule = _loaded(context)
    return [_generate(params, schedule, schedule.find_generate(job.wildcards["gen_id"]), OUT, context)]


def _generate(params: Any, schedule: Any, gen: Any, out_dir: str, context: PlanContext) -> CallEstimate:
    """One setter's generate job of `schedule`, whose records live under `out_dir`."""
    from pipeline.skate.engine import run_generate
    from pipeline.skate.prompts import render_context, render_failures, setter_messages
    from pipeline.skate.schedule import generate_inputs

    entry = context.models.entry(gen.setter)
    if entry.is_bot:
        return CallEstimate(gen.setter, "skate/generate", 0, 0, 0, 0)
    measured = _mean(_history(context)["tries"], "setter", gen.setter, "tries")
    note = "" if measured is not None else f"{gen.setter}: up to {params.attempts} tries per round"
    # the setter's visible budget as its entry decides it, plus a reasoning model's allowance
    expected_reply = planned_reply_tokens(entry, "set", params.generation.max_tokens, "skate")
    cap = most_reply_tokens(entry, "set", params.generation.max_tokens, "skate")
    out = context.path(out_dir)
    first_cached, prompt = (
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
    if all(Path(context.root, f).exists() for f in generate_inputs(schedule, gen, out_dir)):
        probe = ProbeGateway(context.models, root=str(context.root), answer_from_cache=False)
        with contextlib.redirect_stderr(io.StringIO()):  # its notes on placeholder tries are noise here
            asyncio.run(run_generate(params, context.models, schedule, gen, out, probe, _NoSandbox()))  # type: ignore[arg-type]
        first = probe.requests[0]
        first_cached, prompt = int(first.cached), first.prompt_tokens
    # later tries carry the earlier ones' failures: counted at the first's prompt plus a whole reply each
    most = params.attempts
    expected = float(max(1, round(measured)) if measured is not None else params.attempts)
    paid, expected_paid = most - first_cached, max(0.0, expected - first_cached)
    return CallEstimate(
        gen.setter,
        "skate/generate",
        most,
        first_cached,
        paid * (prompt + cap * (most - 1)),
        paid * cap,
        note,
        expected_calls=expected,
        expected_prompt_tokens=expected_paid * prompt,
        expected_reply_tokens=expected_paid * expected_reply,
    )


def estimate_answer(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    params, schedule = _loaded(context)
    return [_answer(params, schedule.find_answer(job.wildcards["answer_id"]), OUT, context)]


def _answer(params: Any, answer: Any, out_dir: str, context: PlanContext) -> CallEstimate:
    """One answerer's answer job, whose round and records live under `out_dir`.

    Bound: every question at `max_samples` (sampled), or at `exact_option_sets` calls and then, as a
    provider that returns no log-probabilities makes it, sampled to `max_samples` (exact); a round
    holding one question per player. Expected: the answerer's earlier questions (its mean samples,
    and in exact mode how often it fell back to sampling), else the stopping rule's mean samples for
    an answerer of unknown accuracy (`expected_samples`), or the exact option sets (a provider is
    assumed to return the log-probabilities it is asked for); the setters' earlier entry rates, else
    one question per player."""
    from pipeline.skate.engine import run_answer
    from pipeline.skate.prompts import answer_messages
    from pipeline.skate.schedule import round_path

    entry = context.models.entry(answer.answerer)
    if entry.is_bot:
        return CallEstimate(answer.answerer, "skate/answer", 0, 0, 0, 0)
    settings = params.answering
    exact = answer.mode == "exact"
    earlier = _history(context)["samples"].filter(pl.col("answerer") == answer.answerer)
    sampled_before = _mean(earlier.filter(pl.col("mode") == "sampled"), "answerer", answer.answerer, "samples")
    per_sampled = (
        max(settings.min_samples, sampled_before)
        if sampled_before is not None
        else context.once(f"skate-samples/{settings.model_dump_json()}", lambda: expected_samples(settings))
    )
    notes = []
    if exact:
        # a question whose exact reply comes back without log-probabilities is sampled instead (its
        # first exact call spent); earlier questions of this answerer say how often that happens
        fell = earlier.filter(pl.col("mode") == "sampled").height / earlier.height if earlier.height else 0.0
        per_question = (1 - fell) * settings.exact_option_sets + fell * (1 + per_sampled)
        letter, sampled_letter = (
            planned_reply_tokens(entry, "answer", visible, "skate") for visible in (1, settings.max_tokens)
        )
        reply_per_question = (1 - fell) * settings.exact_option_sets * letter + fell * (
            letter + per_sampled * sampled_letter
        )
        fallback = settings.max_samples
        notes.append(
            f"{answer.answerer}: exact, {settings.exact_option_sets} calls per question"
            + ("" if fell else " expected")
            + f", up to {settings.exact_option_sets + fallback} if its replies lack log-probabilities"
        )
    else:
        per_question, fallback = per_sampled, 0
        reply_per_question = per_sampled * planned_reply_tokens(entry, "answer", settings.max_tokens, "skate")
        if sampled_before is None:
            notes.append(
                f"{answer.answerer}: adaptive, {settings.min_samples} to {settings.max_samples} samples per "
                f"question, about {per_sampled:.0f} expected"
            )
    if answer.why_sampled:  # an exact-mode game samples this answerer (the schedule's choice)
        notes.insert(0, f"{answer.answerer} answers sampled: {answer.why_sampled}")
    visible = 1 if exact else settings.max_tokens
    cap = most_reply_tokens(entry, "answer", visible, "skate")
    sampled_cap = most_reply_tokens(entry, "answer", settings.max_tokens, "skate")
    expected_reply = reply_per_question / per_question  # per call, a reasoning allowance included
    round_file = context.path(f"{out_dir}/rounds").joinpath(round_path("", answer.round_id).name)
    if round_file.exists():
        # every question at its most: the requests of the bound, each cache hit found under its real key
        # (a question whose cached exact reply has no log-probabilities is sampled here too, as in the run)
        fixed = settings.model_copy(update={"min_samples": settings.max_samples})
        probe = ProbeGateway(context.models, root=str(context.root))
        asyncio.run(
            run_answer(
                params.model_copy(update={"answering": fixed}), context.models, answer, context.path(out_dir), probe
            )
        )
        asked: dict[str, list[Any]] = {}  # the requests of each question (its program: the prompt up to the options)
        for r in probe.requests:
            asked.setdefault(str(r.messages[-1]["content"]).rsplit("```", 1)[0], []).append(r)
        paid = [r for r in probe.requests if not r.cached]
        cached = len(probe.requests) - len(paid)
        mean_prompt = sum(r.prompt_tokens for r in probe.requests) / max(1, len(probe.requests))
        # exact: a question the probe answered exactly may still be sampled in the run, unless the cache
        # answers it (the probe samples a question whose cached exact reply has no log-probabilities)
        extra = fallback * sum(
            all(dict(r.params).get("logprobs") for r in rs) and not all(r.cached for r in rs) for rs in asked.values()
        )
        most = len(probe.requests) + extra
        # a question with answers in the cache replays them, and the stopping rule stops where it did
        expected = sum(float(sum(r.cached for r in rs)) or per_question for rs in asked.values())
        return CallEstimate(
            answer.answerer,
            "skate/answer",
            most,
            cached,
            round((len(paid) + extra) * mean_prompt),
            sum(r.max_tokens for r in paid) + extra * sampled_cap,
            "; ".join(notes),
            batchable=True,
            expected_calls=expected,
            expected_prompt_tokens=(expected - cached) * mean_prompt,
            expected_reply_tokens=(expected - cached) * expected_reply,
        )
    # a round's questions: each setter's share of rounds it entered a question in earlier runs, else 1
    tries = _history(context)["tries"].with_columns(pl.col("entered").cast(pl.Float64))
    shares = [_mean(tries, "setter", setter, "entered") for setter in params.players]
    questions = sum(1.0 if share is None else share for share in shares)
    calls = questions * per_question
    most_questions = len(params.players)
    per_most = settings.exact_option_sets if exact else settings.max_samples
    most = most_questions * (per_most + fallback)
    program = "x = 1\n" * (TYPICAL_PROGRAM_CHARS // 6)
    prompt = prompt_tokens(answer_messages(program, ("1", "2", "3", "4"), settings.few_shot))
    # exact: one token of visible reply; sampled: a letter (answering.max_tokens); plus any reasoning allowance
    notes.append(
        "questions not set yet: " + ("one per player assumed" if None in shares else "setters' earlier entry rates")
    )
    return CallEstimate(
        answer.answerer,
        "skate/answer",
        most,
        0,
        most * prompt,
        most_questions * (per_most * cap + fallback * sampled_cap),
        "; ".join(notes),
        batchable=True,
        expected_calls=calls,
        expected_prompt_tokens=calls * prompt,
        expected_reply_tokens=calls * expected_reply,
    )


def expected_samples(settings: Any, grid: int = 40) -> float:
    """The mean samples `answering`'s stopping rule draws on one question when the answerer's accuracy
    is unknown (uniform over 0 to 1; a grid of `grid` accuracies), computed exactly from the rule
    itself (pipeline.skate.mcq.should_stop): 66 under the paper's standard error rule at 10 to 100
    samples, about 35 under the predictive rule."""
    from pipeline.skate.mcq import should_stop

    cap = settings.max_samples
    stops = [[should_stop(k, n, settings) for k in range(n + 1)] for n in range(cap + 1)]
    total = 0.0
    for i in range(grid):
        p = (i + 0.5) / grid
        going, mean = [1.0], 0.0  # going[k]: P(k right so far and still sampling)
        for n in range(1, cap + 1):
            now = [0.0] * (n + 1)
            for k, weight in enumerate(going):
                now[k] += weight * (1 - p)
                now[k + 1] += weight * p
            mean += n * sum(w for k, w in enumerate(now) if n == cap or stops[n][k])
            going = [0.0 if stops[n][k] else w for k, w in enumerate(now)]
        total += mean
    return total / grid


def estimate_strategy_game(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    """A whole game under another context strategy, played in one job (pipeline.skate.play): every
    round's generate and answer jobs of that game's own schedule, priced as the main game's, from
    its own folder (its finished rounds' requests are found in the response cache)."""
    from pipeline.skate.schedule import build_schedule

    strategy = job.wildcards["strategy"]
    params, main = _loaded(context)
    game = params.model_copy(update={"strategy": strategy}).fixed()
    schedule = context.once(f"skate-strategy/{strategy}", lambda: build_schedule(game, context.models))
    out_dir = f"{OUT}/strategies/{strategy}"
    # the main game's own jobs (its strategy, played fixed) send the same requests: the response cache
    # answers them once the main game ran, so none is expected; the bound still counts them (the two
    # jobs may run at once)
    main_jobs = {j.job_id for j in [*main.generate.values(), *main.answers.values()]}
    found = [(gen.job_id, _generate(game, schedule, gen, out_dir, context)) for gen in schedule.generate.values()]
    found += [(a.job_id, _answer(game, a, out_dir, context)) for a in schedule.answers.values()]
    estimates = [
        dataclasses.replace(e, expected_calls=0.0, expected_prompt_tokens=0.0, expected_reply_tokens=0.0)
        if job_id in main_jobs
        else e
        for job_id, e in found
    ]
    return summed(estimates) or [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0)]


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


ESTIMATORS = {
    "skate_generate": estimate_generate,
    "skate_answer": estimate_answer_or_part,
    "skate_round": no_calls,
    "skate_rate": no_calls,
    "skate_report": no_calls,
    "skate_analyses": no_calls,
    "skate_strategies": no_calls,
    "skate_strategy_game": estimate_strategy_game,
}
