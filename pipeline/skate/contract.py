"""SKATE's game contract (pipeline.core.run.contract): a game is one round of the fixed game: its
setters' generate jobs (each up to `attempts` tries at a question the sandbox verifies), the round's
question set, and its answerers' answer jobs (each answerer's p(correct) on every question), the
schedule's very jobs. Its id is the content id of the round job and the answer jobs, the form of an
adaptive table's id (`schedule.table_id`). Its rating events are the round's questions' pairwise games
in the params' primary ranking mode (as the rate verb writes them); a seat's score is its mean
p(correct) over the round's questions.

A round after the first reads the earlier rounds' jobs (a setter's history, the answers its strategy
shows) from the game's folder (`SkateRoundGame.folder`): play the rounds in order into one folder.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts.params import validate_params
from pipeline.core.models import ModelsParams, Player
from pipeline.core.rating.events import RatingEvent
from pipeline.core.run.contract import (
    PROJECT_SOURCE,
    Draft,
    Game,
    GameContract,
    ParamsSource,
    ScheduleSource,
    project_file,
)
from pipeline.core.sandbox import Sandbox
from pipeline.skate.config import SkateParams, load_skate
from pipeline.skate.engine import answer, game_seed, generate, write_answer, write_generate
from pipeline.skate.ranking import question_games
from pipeline.skate.records import SkateGenerate, SkateRound, as_generate, as_round
from pipeline.skate.rounds import run_round, write_round
from pipeline.skate.schedule import BENCHMARK, AnswerJob, GenerateJob, RoundJob, Schedule, build_schedule


@dataclass(frozen=True)
class SkateRoundGame:
    """One round of the fixed game and the jobs that play it (the schedule's)."""

    round: int
    generate: tuple[GenerateJob, ...]  # in the order of params.players
    round_job: RoundJob
    answers: tuple[AnswerJob, ...]  # in the order of params.answerers
    params: SkateParams = field(compare=False)
    schedule: Schedule = field(compare=False)
    folder: str | None = field(default=None, compare=False)  # where the jobs' files go (None: a temporary one)


@dataclass(frozen=True)
class SkateRoundRecord:
    """One round as played: the setters' records, the question set and every answerer's p(correct)."""

    game_id: str
    generate: tuple[SkateGenerate, ...]
    round: SkateRound
    pcorrect: pl.DataFrame  # PCorrectSchema's rows: one per question and answerer
    compare: Mapping[str, Any]  # how answers are compared: mode, sigma_stop, pass_threshold, setters

    def to_json(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "generate": [g.to_json() for g in self.generate],
            "round": self.round.to_json(),
            "pcorrect": self.pcorrect.sort(["question_id", "answerer"]).to_dicts(),
            "compare": dict(self.compare),
        }


def round_draft(params: SkateParams, schedule: Schedule, r: int, folder: str | None = None) -> Draft[SkateRoundGame]:
    job = schedule.rounds[r]
    generate = tuple(schedule.generate[(r, setter)] for setter in params.players)
    answers = tuple(schedule.answers[(r, name)] for name in params.answerers)
    identity = {"job": "skate-table", "round": job.job_id, "answers": sorted(a.job_id for a in answers)}
    seats = tuple(dict.fromkeys([*params.players, *params.answerers]))
    spec = SkateRoundGame(r, generate, job, answers, params, schedule, folder)
    jobs = (*(g.job_id for g in generate), job.job_id, *(a.job_id for a in answers))
    return Draft(identity, seats, spec, jobs=jobs)


class SkateContract(GameContract[SkateParams, SkateRoundGame, SkateRoundRecord]):
    name = BENCHMARK
    #: player: sets a question and answers the round's; answerer: answers only (`answer_only`)
    seat_choices = ("player", "answerer")
    #: one round, a few samples a question: an episode is a question set and a few answers
    outside_params = {"rounds": 1, "answering": {"min_samples": 2, "max_samples": 4}}

    def load_params(self, source: ParamsSource) -> SkateParams:
        if isinstance(source, Mapping):
            return validate_params(SkateParams, dict(source), "skate params")
        return load_skate(project_file("params/skate.yaml") if source is None else source)

    def drafts(
        self, params: SkateParams, roster: ModelsParams, source: ScheduleSource = PROJECT_SOURCE
    ) -> Iterable[Draft[SkateRoundGame]]:
        """The fixed schedule's games (`source` unused: the adaptive rounds are played by the
        benchmark's own rules, which schedule their jobs themselves)."""
        fixed = params.fixed()
        schedule = build_schedule(fixed, roster)
        return [round_draft(fixed, schedule, r) for r in sorted(schedule.rounds)]

    def player_seed(self, game: Game[SkateRoundGame]) -> int:
        return game_seed(game.spec.params)

    async def play(self, game: Game[SkateRoundGame], players: Mapping[str, Player]) -> SkateRoundRecord:
        if game.spec.folder is not None:
            return await self._play_in(game, players, Path(game.spec.folder))
        if game.spec.round > 1:
            raise ValueError(
                f"skate game {game.id} is round {game.spec.round}: it reads the earlier rounds' jobs, so give it "
                "the folder they were played into (SkateRoundGame.folder)"
            )
        with tempfile.TemporaryDirectory(prefix="skate-round-") as folder:
            return await self._play_in(game, players, Path(folder))

    async def _play_in(self, game: Game[SkateRoundGame], players: Mapping[str, Player], out: Path) -> SkateRoundRecord:
        spec = game.spec
        params = spec.params
        gateway = next(iter(players.values())).gateway
        box = Sandbox(params.sandbox.limits(), allow_unisolated=params.sandbox.allow_unisolated)
        generated = []
        for job in spec.generate:
            record = await generate(players[job.setter], params, spec.schedule, job, out, box)
            write_generate(out, record, gateway)
            generated.append(as_generate(record))
        question_set = run_round(params, spec.round_job, out)
        write_round(out, question_set)
        tables = []
        for answer_job in spec.answers:
            samples, pcorrect = await answer(players[answer_job.answerer], params, answer_job, out)
            write_answer(out, answer_job, samples, pcorrect, gateway)
            tables.append(pcorrect)
        compare = {
            "mode": params.ranking.primary,
            "sigma_stop": params.answering.sigma_stop,
            "pass_threshold": params.ranking.pass_threshold,
            "setters": list(params.players),
        }
        return SkateRoundRecord(game.id, tuple(generated), as_round(question_set), pl.concat(tables), compare)

    def events(self, record: SkateRoundRecord) -> list[tuple[str, RatingEvent]]:
        rule = record.compare
        games = question_games(
            record.pcorrect, rule["mode"], float(rule["sigma_stop"]), float(rule["pass_threshold"]), rule["setters"]
        )
        return [(f"{g.question_id}/{event.a}/{event.b}", event) for g in games for event in g.games]

    def score(self, record: SkateRoundRecord, seat: str) -> float:
        mine = record.pcorrect.filter(pl.col("answerer") == seat)
        return float(mine["p_correct"].mean()) if mine.height else 0.0  # type: ignore[arg-type]

    def default_opponents(self, params: SkateParams, roster: ModelsParams) -> list[str]:
        """The params' scripted setters and answerers."""
        return [name for name in params.answerers if roster.entry(name).is_bot]

    def seat_draft(
        self,
        params: SkateParams,
        roster: ModelsParams,
        outside: str,
        opponents: Sequence[str],
        seed: int,
        seat: str,
    ) -> Draft[SkateRoundGame]:
        """Round 1 of a one-round game under the params' rules, its seed the params' plus `seed`:
        `outside` sets and answers (seat `player`) or answers only (`answerer`); the opponents that
        the params list as players set and answer, the others answer only."""
        setters = [name for name in opponents if name in params.players]
        others = [name for name in opponents if name not in setters]
        drawn = params.model_copy(
            update={
                "players": [outside, *setters] if seat == "player" else setters,
                "answer_only": others if seat == "player" else [outside, *others],
                "rounds": 1,
                "seed": params.seed + seed,
                "adaptive": params.adaptive.model_copy(update={"enabled": False}),
                "analyses": params.analyses.model_copy(update={"stability_order": None}),
            }
        )
        if not drawn.players:
            raise ValueError("skate: no setter among the opponents: seat the outside player as `player`")
        return round_draft(drawn, build_schedule(drawn, roster, outside_ok=True), 1)


CONTRACT = SkateContract()
