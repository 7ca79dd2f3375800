"""The game as a static graph of jobs, each named by a content id of everything that decides it.

generate(round, setter) -> round(round) -> answer(round, answerer) -> rate/report.

A job's id hashes its settings, its roster entry (what of it decides its SKATE games:
`RosterEntry.game_identity`) and the ids of the jobs it reads, so changing
anything upstream renames (and reruns) exactly the jobs downstream of it, while adding an
answer-only player adds jobs and renames none. (Changing the number of rounds renames every
setter's job: its prompt says "round n of N", as in the paper.) Which earlier jobs a generate job reads
depends on the augmentation strategy: every setter reads its own previous round (its earlier
questions, for the uniqueness check); historical_performance also reads its own answers of
earlier rounds; full_personal_context and full_context read every player's answers (and the
latter every earlier round's questions). With no_info and historical_tasks a setter's rounds do
not wait for anyone's answers, so rounds pipeline.

With `adaptive.enabled` the schedule is the adaptive rounds' instead (`adaptive_schedule`): the round
ledger (pipeline.core.run.rounds, `results/skate/rounds/round-NNN.json` beside the round jobs) chooses
each round's tables of answerers from the results so far (pipeline/skate/adaptive.py). Round r is
then set by the players of the time it was chosen and answered only by its tables' answerers; a
setter reads the answers of earlier rounds that were played (its own, or every player's, as its
strategy allows), and its prompt names no number of rounds. The jobs' ids are content ids of the
same form, so a rerun plays nothing twice and a round chosen again is found played.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import ParamsError, content_id
from pipeline.core.models import ModelsParams
from pipeline.core.run.rounds import RoundGame, read_rounds
from pipeline.skate.config import SkateParams
from pipeline.skate.mcq import answer_mode
from pipeline.skate.prompts import PROMPT_VERSION
from pipeline.skate.uniqueness import EMBEDDING_MODEL

# bump when a code change alters what a job produces: every job id changes, so every job reruns
# (Snakemake sees only ids, inputs and params, not the package code)
SKATE_VERSION = "skate-3"
BENCHMARK = "skate"  # the prefix of a roster entry's per-move budgets for this game
ROUNDS_DIR = "results/skate/rounds"  # the round jobs and the adaptive rounds' ledger, relative to the working directory


@dataclass(frozen=True)
class GenerateJob:
    job_id: str
    round: int
    setter: str
    previous: str | None  # this setter's generate job of the round before
    answers: tuple[str, ...]  # answer jobs whose p(correct) may enter the prompt
    rounds: tuple[str, ...]  # round jobs whose questions may enter the prompt (full_context)
    of_rounds: int | None  # N of the prompt's "round n of N"; None: an adaptive game, whose length is open


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


def generation_settings(params: SkateParams, *, adaptive: bool = False) -> dict[str, Any]:
    """What decides a setter's questions beyond its roster entry and its inputs."""
    return {
        "version": SKATE_VERSION,
        "prompts": PROMPT_VERSION,
        "attempts": params.attempts,
        "rounds": None if adaptive else params.rounds,  # the setter's prompt says "round n of N" (adaptive: "round n")
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


@dataclass(frozen=True)
class RoundPlan:
    """Who sets a round's questions and who answers them."""

    setters: tuple[str, ...]
    answerers: tuple[str, ...]


def build_schedule(
    params: SkateParams, models: ModelsParams, source: str = "params/skate.yaml", *, outside_ok: bool = False
) -> Schedule:
    """The fixed game: in each of `rounds` rounds every player sets and every answerer answers.
    `outside_ok`: the params may seat an entry played from outside the pipeline (a game drawn for it:
    pipeline.core.run.contract.seat_game)."""
    params.check_roster(models, source, outside_ok=outside_ok)
    plan = [RoundPlan(tuple(params.players), tuple(params.answerers))] * params.rounds
    return schedule_rounds(params, models, plan, adaptive=False)


def schedule_rounds(
    params: SkateParams, models: ModelsParams, plan: Sequence[RoundPlan], *, adaptive: bool
) -> Schedule:
    """The jobs of the rounds of `plan`, in order. A setter reads its own generate job of its latest
    earlier round, and the answer jobs of the earlier rounds its strategy shows (of the round's setters)
    that the plan has: in the fixed game every one of them."""
    names = dict.fromkeys(name for step in plan for name in (*step.setters, *step.answerers))
    entries = {name: models.entry(name).game_identity(BENCHMARK) for name in names}
    game = generation_settings(params, adaptive=adaptive)
    of_rounds = None if adaptive else params.rounds
    answering = answering_settings(params)
    # per answerer: exact where the model gives log-probabilities, sampled otherwise, decided here
    # so that the run and its plan agree (a refusal at run time samples single questions instead)
    answerers = dict.fromkeys(name for step in plan for name in step.answerers)
    modes = {name: answer_mode(params.answering.mode, models.entry(name)) for name in answerers}
    generate: dict[tuple[int, str], GenerateJob] = {}
    rounds: dict[int, RoundJob] = {}
    answers: dict[tuple[int, str], AnswerJob] = {}
    for r, step in enumerate(plan, start=1):
        for setter in step.setters:
            earlier = [q for q in range(1, r) if (q, setter) in generate]
            previous = generate[(earlier[-1], setter)].job_id if earlier else None
            readers = {
                "no_info": [],
                "historical_tasks": [],
                "historical_performance": [setter],
            }.get(params.strategy, step.setters)
            answer_ids = tuple(answers[(q, a)].job_id for q in range(1, r) for a in readers if (q, a) in answers)
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
            generate[(r, setter)] = GenerateJob(job_id, r, setter, previous, answer_ids, round_ids, of_rounds)
        generated = tuple(generate[(r, s)].job_id for s in step.setters)
        rounds[r] = RoundJob(content_id({"job": "skate-round", "round": r, "generate": generated}), r, generated)
        for answerer in step.answerers:
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


# -- the adaptive rounds ----------------------------------------------------------------------
def round_plans(games: Sequence[RoundGame]) -> list[RoundPlan]:
    """Per round of the adaptive game (the `round` of its tables, from 1 without a gap): the setters
    recorded with it and its answerers, the tables' seats in table order."""
    setters: dict[int, tuple[str, ...]] = {}
    answerers: dict[int, dict[str, None]] = {}
    for game in games:
        r = int(game.fields["round"])
        setters.setdefault(r, tuple(game.fields["setters"]))
        answerers.setdefault(r, {}).update(dict.fromkeys(game.seats))
    if sorted(setters) != list(range(1, len(setters) + 1)):
        raise ValueError(f"the adaptive rounds' games name rounds {sorted(setters)}: not 1, 2, ... without a gap")
    return [RoundPlan(setters[r], tuple(answerers[r])) for r in sorted(setters)]


def table_id(schedule: Schedule, r: int, seats: Sequence[str]) -> str:
    """A table's content id: its round job and its answerers' answer jobs (seat order aside)."""
    answers = sorted(schedule.answers[(r, name)].job_id for name in seats)
    return content_id({"job": "skate-table", "round": schedule.rounds[r].job_id, "answers": answers})


def table_game(schedule: Schedule, r: int, seats: Sequence[str], params: SkateParams) -> RoundGame:
    """A table of round `r` as its round file keeps it: the round and its setters, the round's
    generate jobs and the seats' answer jobs (the jobs that play it, `adaptive.parts`), and how its
    answers are compared (the ranking's primary mode, as the params said when it was chosen)."""
    job = schedule.rounds[r]
    fields: dict[str, Any] = {
        "round": r,
        "setters": [setter for (q, setter) in schedule.generate if q == r],  # in the order they set
        "generate_jobs": list(job.generate),
        "answer_jobs": [schedule.answers[(r, name)].job_id for name in seats],
        "compare": {
            "mode": params.ranking.primary,
            "sigma_stop": params.answering.sigma_stop,
            "pass_threshold": params.ranking.pass_threshold,
        },
    }
    return RoundGame(table_id(schedule, r, seats), tuple(seats), fields)


def _rounds_schedule(params: SkateParams, models: ModelsParams, games: Sequence[RoundGame], where: str) -> Schedule:
    try:
        return schedule_rounds(params, models, round_plans(games), adaptive=True)
    except KeyError as exc:  # a recorded setter or answerer the roster no longer has
        raise ParamsError(
            f"{where}: the adaptive rounds name a model the roster no longer lists ({exc.args[0]}); the rounds "
            "played belong to the game: keep its entry in params/models.yaml, or move the rounds' ledger "
            "(round-NNN.json) away to start the rounds anew"
        ) from None
    except ValueError as exc:  # rounds with a gap: not a ledger the rounds wrote
        raise ParamsError(
            f"{where}: {exc}; restore the ledger from DVC, or move its round-NNN.json files away to start anew"
        ) from None


def seated_games(
    tables: Sequence[Sequence[str]], earlier: Sequence[RoundGame], params: SkateParams, models: ModelsParams
) -> list[RoundGame]:
    """One game per table of the next adaptive round: a new round of the game, set by the current
    players and answered by the tables' answerers, after the rounds of `earlier`."""
    r = 1 + max((int(g.fields["round"]) for g in earlier), default=0)
    chosen = [RoundGame("", tuple(t), {"round": r, "setters": list(params.players)}) for t in tables]
    schedule = _rounds_schedule(params, models, [*earlier, *chosen], "the adaptive rounds")
    return [table_game(schedule, r, game.seats, params) for game in chosen]


def adaptive_schedule(
    params: SkateParams,
    models: ModelsParams,
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
) -> Schedule:
    """The jobs of the adaptive rounds written so far (and `preview`: a round the run plan prices
    before it is written), rebuilt under the current params. A table whose jobs no longer match (a
    roster entry, a setting of the game changed since it was chosen) stops with the fix: the rounds
    belong to the jobs they chose."""
    records = read_rounds(rounds)
    chosen = [(record.index, game) for record in records for game in record.games]
    chosen += [(len(records) + 1, game) for game in preview]
    schedule = _rounds_schedule(params, models, [game for _, game in chosen], str(rounds))
    for index, game in chosen:
        r = int(game.fields["round"])
        now = table_game(schedule, r, game.seats, params)
        if (now.id, now.fields["answer_jobs"]) != (game.id, list(game.fields["answer_jobs"])):
            raise ParamsError(
                f"{rounds}/round-{index:03d}.json: table {game.id} ({', '.join(game.seats)}) of round {r} is now "
                f"{now.id}: a roster entry of its models or a setting of the game (attempts, strategy, "
                "generation, answering, seed, ...) changed since the round was chosen, so its jobs are other jobs; "
                f"restore the params it was chosen under, or move the round-NNN.json files of {rounds} away to "
                "start the rounds anew"
            )
    return schedule


def game_schedule(
    params: SkateParams,
    models: ModelsParams,
    source: str = "params/skate.yaml",
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
) -> Schedule:
    """The schedule these params play: the fixed game, or with `adaptive.enabled` the adaptive
    rounds in `rounds` (relative to the working directory)."""
    if not params.adaptive.enabled:
        return build_schedule(params, models, source)
    params.check_roster(models, source)
    return adaptive_schedule(params, models, rounds, preview)


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
