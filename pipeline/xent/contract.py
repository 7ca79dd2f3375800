"""Xent's game contract (pipeline.core.run.contract): a game is one XGL game's maps played by the
schedule's players, each in a play job of its own (the schedule's job: its id, its seed), beside the
params' opponent; its record every job's play record; its rating events each map's players ranked by
map score (`report.map_events`, as the rate verb ranks them); a seat's score its map score (its best
round's bits; the mean over the maps when there are several). The maps are built from the game with
the judge's stories (as the build stage writes them) or read from an imported map set."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import polars as pl

from pipeline.core.artifacts import seed_from
from pipeline.core.artifacts.params import validate_params
from pipeline.core.models import ModelsParams, Player, gather_moves
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
from pipeline.xent.config import XentParams, apply_map_set, load_xent
from pipeline.xent.games import Game as XglGame
from pipeline.xent.maps import MapSpec, build_map_text
from pipeline.xent.play import PlaySettings, play_record
from pipeline.xent.records import XentPlay
from pipeline.xent.report import map_events, round_table, score_table
from pipeline.xent.schedule import BENCHMARK, PlayJob, build_schedule
from pipeline.xent.xgl import Program, load_program, parse_program

GAME_FORM = 1  # the form of a game's identity: its game, maps and play jobs
OPPONENT = "opponent"  # the label of the opponent's seat


@dataclass(frozen=True)
class XentGame:
    """One XGL game's maps and the play jobs that play them (the schedule's)."""

    game: XglGame
    maps: tuple[MapSpec, ...]
    jobs: tuple[PlayJob, ...]  # one per player, in the params' order
    params: XentParams = field(compare=False)


@dataclass(frozen=True)
class XentGameRecord:
    """Every play job's record of one game."""

    game_id: str
    plays: tuple[XentPlay, ...]

    def to_json(self) -> dict[str, Any]:
        return {"game_id": self.game_id, "plays": [play.to_json() for play in self.plays]}


@lru_cache(maxsize=4)
def judge_for(name: str, scoring: str, clip: bool, dtype: str) -> Any:
    """A judge, loaded once per process (a game played after another reuses its model)."""
    from pipeline.xent.judges import load_any_judge

    return load_any_judge(name, scoring, clip, dtype)


def params_judge(params: XentParams) -> Any:
    return judge_for(params.judge, params.judge_scoring, params.judge_clip_logprobs, params.judge_dtype)


def map_program(game: XglGame, spec: MapSpec, judge: Any) -> Program:
    """The map's program: an imported map's file, else the game with the judge's stories (as built)."""
    if spec.imported:
        return load_program(spec.imported)
    assert isinstance(spec.seed, int)
    return parse_program(build_map_text(game, spec.seed, judge), source=f"map {spec.map_id} of {game.name}")


def reseeded(player: Player, job_id: str) -> Player:
    """The player as its play job seeds it (each job of the game draws from its own seed)."""
    own = copy.copy(player)
    own.job_seed = seed_from(BENCHMARK, job_id)
    return own


def scores(record: XentGameRecord) -> pl.DataFrame:
    """Per (game, map, model): the map score and whether it is voided (`report.score_table`)."""
    rewards, rounds = [], []
    for play in record.plays:
        own = set(play.self_roles)
        for played in play.maps:
            for rnd in played.rounds:
                keys = {"game": play.game, "map_id": played.map_id, "model": play.player, "round": rnd.round}
                rounds.append({**keys, "error": rnd.error})
                rewards += [{**keys, "total_bits": float(r.total_bits)} for r in rnd.rewards if r.role in own]
    keys_schema = {"game": pl.String, "map_id": pl.String, "model": pl.String, "round": pl.Int64}
    return score_table(
        round_table(
            pl.DataFrame(rewards, schema={**keys_schema, "total_bits": pl.Float64}),
            pl.DataFrame(rounds, schema={**keys_schema, "error": pl.String}),
        )
    )


class XentContract(GameContract[XentParams, XentGame, XentGameRecord]):
    name = BENCHMARK
    #: an outside player plays a game's own roles (the params' opponent plays its opponent roles)
    seat_choices = ("player",)
    outside_params = {"judge": "word"}  # the model-free judge: an episode loads no model

    def load_params(self, source: ParamsSource) -> XentParams:
        if isinstance(source, Mapping):
            return apply_map_set(validate_params(XentParams, dict(source), "xent params"))
        return load_xent(project_file("params/xent.yaml") if source is None else source)

    def drafts(
        self, params: XentParams, roster: ModelsParams, source: ScheduleSource = PROJECT_SOURCE
    ) -> Iterable[Draft[XentGame]]:
        """The fixed schedule's games (`source` unused: the adaptive rounds are played by the
        benchmark's own rules, which schedule their jobs themselves)."""
        schedule = build_schedule(params, roster)
        grouped: dict[tuple[str, tuple[str, ...]], list[PlayJob]] = {}
        for job in schedule.jobs:
            grouped.setdefault((job.game, tuple(m.map_id for m in job.maps)), []).append(job)
        return [self._draft(schedule.games[name], jobs, params) for (name, _), jobs in grouped.items()]

    def _draft(self, game: XglGame, jobs: Sequence[PlayJob], params: XentParams) -> Draft[XentGame]:
        identity = {
            "xent_game": GAME_FORM,
            "game": game.name,
            "maps": [m.map_id for m in jobs[0].maps],
            "plays": sorted(job.job_id for job in jobs),
        }
        opponent = jobs[0].opponent
        seats = tuple(job.player for job in jobs) + ((opponent,) if opponent else ())
        labels = tuple(job.player for job in jobs) + ((OPPONENT,) if opponent else ())
        spec = XentGame(game, jobs[0].maps, tuple(jobs), params)
        return Draft(identity, seats, spec, labels, jobs=tuple(job.job_id for job in jobs))

    def player_seed(self, game: Game[XentGame]) -> int:
        return seed_from(BENCHMARK, game.id)  # each job reseeds its players from its own id (`reseeded`)

    async def play(self, game: Game[XentGame], players: Mapping[str, Player]) -> XentGameRecord:
        spec = game.spec
        params = spec.params
        judge = params_judge(params)
        maps = [(m.map_id, map_program(spec.game, m, judge)) for m in spec.maps]
        settings = PlaySettings.of(params)
        seeds = {m.map_id: m.seed for m in spec.maps}

        async def play_job(job: PlayJob) -> XentPlay:
            player = reseeded(players[job.player], job.job_id)
            opponent = reseeded(players[job.opponent], job.job_id) if job.opponent else None
            return await play_record(spec.game, job.job_id, maps, player, opponent, judge, job.rounds, settings, seeds)

        return XentGameRecord(game.id, tuple(await gather_moves(*(play_job(job) for job in spec.jobs))))

    def events(self, record: XentGameRecord) -> list[tuple[str, RatingEvent]]:
        return list(map_events(scores(record)))

    def score(self, record: XentGameRecord, seat: str) -> float:
        mine = scores(record).filter(pl.col("model") == seat)
        if mine.is_empty():
            raise KeyError(f"xent game {record.game_id}: no play of {seat!r}")
        return float(mine["map_score"].fill_null(0.0).mean())  # type: ignore[arg-type]

    def default_opponents(self, params: XentParams, roster: ModelsParams) -> list[str]:
        """The params' scripted players and their opponent."""
        names = [*params.players, *([params.opponent] if params.opponent else [])]
        return [name for name in dict.fromkeys(names) if roster.entry(name).is_bot]

    def seat_draft(
        self,
        params: XentParams,
        roster: ModelsParams,
        outside: str,
        opponents: Sequence[str],
        seed: int,
        seat: str,
    ) -> Draft[XentGame]:
        """One map of one game: the game `seed` picks from the params' `games` (in turn), its map seed
        the params' seed plus the times the games went round; `outside` plays it beside `opponents`
        (the params' opponent, if among them, plays the opponent roles; the others play the map too,
        so the map ranks its players)."""
        del seat  # one choice: the game's own roles
        if not params.games:
            raise ValueError("xent: the params list no games (an imported map set is not played by an outside seat)")
        ref = params.games[seed % len(params.games)]
        opponent = params.opponent if params.opponent in opponents else None
        others = [o for o in opponents if o != opponent] or list(opponents)
        drawn = params.model_copy(
            update={
                "players": [outside, *others],
                "opponent": opponent or others[0],
                "games": [ref],
                "map_set": None,
                "maps_per_game": 1,
                "seed": params.seed + seed // len(params.games),
                "schedule": params.schedule.model_copy(
                    update={"adaptive": params.schedule.adaptive.model_copy(update={"enabled": False})}
                ),
            }
        )
        schedule = build_schedule(drawn, roster, outside_ok=True)
        return self._draft(schedule.games[next(iter(schedule.games))], schedule.jobs, drawn)


CONTRACT = XentContract()
