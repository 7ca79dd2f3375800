"""The Elimination Game's contract (pipeline.core.run.contract): a game is one table of eight, its
record the game's log (`EliminationLog`, the original's format), its rating event the final ranks
as a free-for-all (each model at its best seat, as the rate verb reads the logs), a seat's score its
partial points ((n - rank) / (n - 1): 1 for the winner, 0 for the first out)."""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.artifacts import canonical_json, seed_from
from pipeline.core.artifacts.params import validate_params
from pipeline.core.models import Gateway, ModelsParams, Player
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
from pipeline.elimination.config import EliminationParams, load_elimination_params
from pipeline.elimination.engine import GAME, GameSpec, game_spec, planned_moves, play, player_seed
from pipeline.elimination.ratings import game_events
from pipeline.elimination.reader import ParsedGame, frames, read_game
from pipeline.elimination.records import EliminationLog, as_log, log_file_name, write_log
from pipeline.elimination.schedule import ScheduledGame, build_schedule

if TYPE_CHECKING:
    from pipeline.core.run.estimates import PlanContext, SeatPlan

#: the most seats a table has (params `seats`: 3 to 26); an outside seat asks for one of them
MAX_SEATS = 26


def labels(seats: int) -> tuple[str, ...]:
    return tuple(f"P{i + 1}" for i in range(seats))


def draft(params: EliminationParams, scheduled: ScheduledGame) -> Draft[GameSpec]:
    return Draft(
        json.loads(scheduled.content), scheduled.seats, game_spec(params, scheduled), labels(len(scheduled.seats))
    )


def parsed(record: EliminationLog) -> ParsedGame:
    """The log as the rate verb reads it (pipeline.elimination.reader): through a log file."""
    lines = [r.to_json() for r in record.records]
    with tempfile.TemporaryDirectory(prefix="elimination-log-") as folder:
        path = write_log(Path(folder) / log_file_name(int(lines[0]["game_id"]), lines), record)
        return read_game(path)


class EliminationContract(GameContract[EliminationParams, GameSpec, EliminationLog]):
    name = GAME
    seat_choices = labels(MAX_SEATS)

    def load_params(self, source: ParamsSource) -> EliminationParams:
        if isinstance(source, Mapping):
            return validate_params(EliminationParams, dict(source), "elimination params")
        return load_elimination_params(project_file("params/elimination.yaml") if source is None else source)

    def drafts(
        self, params: EliminationParams, roster: ModelsParams, source: ScheduleSource = PROJECT_SOURCE
    ) -> Iterable[Draft[GameSpec]]:
        games = build_schedule(
            params,
            roster,
            source.params_file(GAME),
            source.models_file(),
            source.rounds_dir(GAME),
            source.preview,
        )
        return [draft(params, scheduled) for scheduled in games]

    async def play(self, game: Game[GameSpec], players: Mapping[str, Player]) -> EliminationLog:
        return as_log(await play(game.spec, players))

    def player_seed(self, game: Game[GameSpec]) -> int:
        return player_seed(game.spec)

    def events(self, record: EliminationLog) -> list[tuple[str, RatingEvent]]:
        return list(game_events(frames([parsed(record)])["final_ranks"]))

    def score(self, record: EliminationLog, seat: str) -> float:
        for row in parsed(record).rows["final_ranks"]:
            if row["seat"] == seat:
                return float(row["points"] or 0.0)
        raise KeyError(f"the game's log has no seat {seat!r}")

    def to_json(self, record: EliminationLog) -> Any:
        return [r.to_json() for r in record.records]

    # -- the generated verbs, rules and plan (pipeline.core.run.skeleton) --------------------------------
    #: a game's folder holds its log (the original's file name) and, written after it, its calls table
    log_pattern = "game_*.jsonl"
    played = "{game_id}"

    def write(self, game: Game[GameSpec], record: EliminationLog, gateway: Gateway, out: Path) -> None:
        folder, spec = out / game.id, game.spec
        for stale in [*folder.glob(f"game_{spec.log_game_id}_*.jsonl"), *folder.glob(f"game_{spec.game_id}*.jsonl")]:
            stale.unlink(missing_ok=True)  # an earlier run of the same game: only one log per game id
        write_log(folder / log_file_name(spec.log_game_id, [r.to_json() for r in record.records]), record)
        gateway.write_calls(folder / "calls.parquet")  # after the log: its presence means done

    def planned_moves(self, game: Game[GameSpec]) -> int:
        return planned_moves(game.spec)

    def outcome(self, record: EliminationLog) -> str:
        return f"{len(record.records)} log records"

    def rule_content(self, game: Game[GameSpec]) -> str | None:
        """The game's content is a rule param, so a change reruns the game."""
        return canonical_json(game.identity)

    def rate_settings(self, params: EliminationParams) -> Mapping[str, Any]:
        return {"rating": params.rating.model_dump(mode="json")}

    def seat_plan(self, params: EliminationParams, game: Game[GameSpec], context: PlanContext) -> SeatPlan:
        from pipeline.elimination.estimators import seat_plan

        return seat_plan(params, context)

    def default_opponents(self, params: EliminationParams, roster: ModelsParams) -> list[str]:
        """The scripted bots the params' lineups seat."""
        seated = dict.fromkeys(name for lineup in params.schedule.lineups for name in lineup)
        seated.update(dict.fromkeys(params.schedule.players))
        return [name for name in seated if roster.entry(name).is_bot]

    def seat_draft(
        self,
        params: EliminationParams,
        roster: ModelsParams,
        outside: str,
        opponents: Sequence[str],
        seed: int,
        seat: str,
    ) -> Draft[GameSpec]:
        """One lineup: `outside` in `seat` (P1, P2, ...), the other seats filled from `opponents`
        cycled in an order `seed` shuffles (a name may fill several seats), played in that one
        seating under the params' rules."""
        seats = labels(params.seats)
        if seat not in seats:
            raise ValueError(f"elimination: seat must be one of P1..P{params.seats}, not {seat!r}")
        order = list(opponents)
        rng = random.Random(seed_from("elimination-outside-seat", seed))
        rng.shuffle(order)
        start = rng.randrange(len(order))
        others = [order[(start + k) % len(order)] for k in range(params.seats - 1)]
        rng.shuffle(others)
        index = seats.index(seat)
        lineup = [*others[:index], outside, *others[index:]]
        schedule = params.schedule.model_copy(
            update={
                "lineups": [lineup],
                "players": [],
                "lineups_per_player": 0,
                "rotations": 1,
                "repeats": 1,
                "max_seats_per_player": params.seats,
                "adaptive": params.schedule.adaptive.model_copy(update={"enabled": False}),
            }
        )
        drawn = params.model_copy(update={"schedule": schedule})
        return draft(drawn, build_schedule(drawn, roster, outside_ok=True)[0])


CONTRACT = EliminationContract()
