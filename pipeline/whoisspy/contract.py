"""Who is Spy's game contract (pipeline.core.run.contract): a game is one table of six, its record
the game's JSON record, its rating event the spy against the civilians' team (the params' default
`rating.matchup`), a seat's score its points in the game (base score plus vote transfers)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.artifacts import write_record
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
from pipeline.whoisspy.config import WhoIsSpyParams, load_whoisspy
from pipeline.whoisspy.engine import GAME, planned_moves, play, player_seed
from pipeline.whoisspy.metrics import build_tables, game_events
from pipeline.whoisspy.records import WhoIsSpyGame
from pipeline.whoisspy.schedule import ROLES, GameSpec, build_schedule
from pipeline.whoisspy.workflow import rate_settings

if TYPE_CHECKING:
    from pipeline.core.run.estimates import PlanContext, SeatPlan


def draft(spec: GameSpec) -> Draft[GameSpec]:
    return Draft(spec.identity, spec.seats, spec, labels=spec.seat_names)


class WhoIsSpyContract(GameContract[WhoIsSpyParams, GameSpec, WhoIsSpyGame]):
    name = GAME
    #: an outside player takes the focal seat of the spy's game or of a civilian's
    seat_choices = ROLES

    def load_params(self, source: ParamsSource) -> WhoIsSpyParams:
        if isinstance(source, Mapping):
            return validate_params(WhoIsSpyParams, dict(source), "whoisspy params")
        return load_whoisspy(project_file("params/whoisspy.yaml") if source is None else source)

    def drafts(
        self, params: WhoIsSpyParams, roster: ModelsParams, source: ScheduleSource = PROJECT_SOURCE
    ) -> Iterable[Draft[GameSpec]]:
        games = build_schedule(params, roster, source.params_file(GAME), source.rounds_dir(GAME), source.preview)
        return [draft(spec) for spec in games]

    async def play(self, game: Game[GameSpec], players: Mapping[str, Player]) -> WhoIsSpyGame:
        return await play(game.spec, players)

    def player_seed(self, game: Game[GameSpec]) -> int:
        return player_seed(game.spec)

    def events(self, record: WhoIsSpyGame) -> list[tuple[str, RatingEvent]]:
        tables = build_tables([record])
        return game_events(tables["games"], tables["seats"], record.variant)

    def score(self, record: WhoIsSpyGame, seat: str) -> float:
        for player in record.players:
            if player.seat == seat:
                return float(player.score)
        raise KeyError(f"game {record.game_id} has no seat {seat!r}")

    # -- the generated verbs, rules and plan (pipeline.core.run.skeleton) --------------------------------
    legend = "* marks the spy"

    def write(self, game: Game[GameSpec], record: WhoIsSpyGame, gateway: Gateway, out: Path) -> None:
        gateway.write_calls(out / f"{game.id}.calls.parquet")
        write_record(out / f"{game.id}.json", record)  # last: its presence means done

    def planned_moves(self, game: Game[GameSpec]) -> int:
        return planned_moves(game.spec)

    def describe(self, game: Game[GameSpec]) -> Mapping[str, Any]:
        return game.spec.summary()

    def line(self, game: Game[GameSpec]) -> str:
        spec = game.spec
        seats = " ".join(
            f"{label}={name}{'*' if i == spec.spy_seat else ''}"
            for i, (label, name) in enumerate(zip(spec.seat_names, spec.seats))
        )
        return f"{game.id}  {spec.variant:<9} {spec.civilian_word}/{spec.spy_word:<12} {seats}"

    def outcome(self, record: WhoIsSpyGame) -> str:
        scores = ", ".join(f"{p.seat}={p.score:g}" for p in record.players)
        return f"{record.winner} win ({record.end_reason}, {record.rounds_played} round(s)); scores {scores}"

    def rate_settings(self, params: WhoIsSpyParams) -> Mapping[str, Any]:
        return rate_settings(params)

    def seat_plan(self, params: WhoIsSpyParams, game: Game[GameSpec], context: PlanContext) -> SeatPlan:
        from pipeline.whoisspy.estimators import seat_plan

        return seat_plan(params, game.spec, context)

    def default_opponents(self, params: WhoIsSpyParams, roster: ModelsParams) -> list[str]:
        """The scripted bots that fill the params' tables."""
        return [name for name in params.fill if roster.entry(name).is_bot]

    def seat_draft(
        self,
        params: WhoIsSpyParams,
        roster: ModelsParams,
        outside: str,
        opponents: Sequence[str],
        seed: int,
        seat: str,
    ) -> Draft[GameSpec]:
        """The schedule's game of `outside` in the role `seat` (spy or civilian), among `opponents`
        (cycled into the other seats, seats shuffled), with the rank variant's rules; `seed` is the
        schedule's seed (it draws the words and the seating)."""
        changes: dict[str, Any] = {
            "players": [outside],
            "fill": list(opponents),
            "games_per_role": 1,
            "variants": [params.rank_variant],
            "seed": seed,
            "schedule": params.schedule.model_copy(
                update={"adaptive": params.schedule.adaptive.model_copy(update={"enabled": False})}
            ),
        }
        games = build_schedule(params.model_copy(update=changes), roster, outside_ok=True)
        return draft(next(spec for spec in games if spec.focal_role == seat))


CONTRACT = WhoIsSpyContract()
