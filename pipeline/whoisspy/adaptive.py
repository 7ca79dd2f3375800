"""Who is Spy's adaptive schedule, as the round ledger (pipeline.core.run.rounds) asks for it.

- `setup`: `schedule.adaptive` of params/whoisspy.yaml, the pool `players`, the seats
  (`rules.seats`), the rating's TrueSkill settings, and tables scored one against the rest (the
  plan's simulation: a spy against the civilians);
- `lone`: a game's spy. Declaring it makes the ledger choose each table and its spy together
  (pipeline.core.rating.one_against_rest: the seats by balance then open rank, the spy among the
  members owed the most spy games by open rank), each table with its spy first;
- `games`: a round's tables become games of `rank_variant` as the rules schedule them
  (`schedule.seated_games`: that spy, and the words and the seating drawn from the ledger's seed);
- `event`: a finished game is a team game, the spy's model against the team of the distinct
  civilian models, won by the side the record names (`rating.matchup: teams`, the spec; the ledger
  keeps one event per game whatever the matchup);
- a game is finished once its record exists (written after its calls table); that table's cost is
  what `max_cost_usd` counts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.core.run.rounds import AdaptiveSetup, AdaptiveSpec, RoundGame, RoundRequest

if TYPE_CHECKING:  # the rating core (and trueskill) loads only when a ledger is read, not at every parse
    from pipeline.core.rating.events import RatingEvent

GAMES = "games"  # the games folder under results/whoisspy/


def setup(params_path: Path, models_path: Path) -> AdaptiveSetup:
    from pipeline.whoisspy.config import load_whoisspy

    params = load_whoisspy(params_path)
    return AdaptiveSetup(
        settings=params.schedule.adaptive,
        pool=tuple(params.players),
        seats=params.rules.seats,
        rating=params.rating.rating_params(),
        shape="one_against_rest",
        # the rule that chooses the tables and the spy: in the digest, so rounds chosen before it
        # (by pair weights, the spy by the owed rule alone) are told apart
        decides={"tables": "one_against_rest"},
    )


def games(request: RoundRequest) -> list[RoundGame]:
    from pipeline.core.models import load_models
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import seated_games

    return seated_games(
        request.tables,
        request.earlier,
        load_whoisspy(request.params),
        load_models(request.models),
        request.setup.settings.seed,
        request.index,
        spies=[table[0] for table in request.tables],  # the ledger's choice: the spy first (`spy`)
    )


def spy(game: RoundGame) -> str:
    """The model a round's game seats as the spy (`AdaptiveSpec.lone`)."""
    return game.seats[int(game.fields["spy_seat"])]


def team_event(record: dict[str, object]) -> RatingEvent | None:
    """The spy's model against the distinct civilian models (a model on both sides plays for the
    spy only, as the rating has it), from a game record's JSON; None without a civilian team."""
    from pipeline.core.rating.events import TeamMatch

    players = record["players"]
    assert isinstance(players, list)
    spy = next(str(p["model"]) for p in players if p["role"] == "spy")
    civilians = sorted({str(p["model"]) for p in players if p["role"] == "civilian"} - {spy})
    if not civilians:
        return None
    return TeamMatch((spy,), tuple(civilians), "a" if record["winner"] == "spy" else "b")


def event(results: Path, game: RoundGame) -> RatingEvent | None:
    """The game's team event (`team_event`) from its record; None before the record exists."""
    path = results / GAMES / f"{game.id}.json"
    return team_event(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None


SPEC = AdaptiveSpec(
    setup=setup,
    games=games,
    event=event,
    play_target="whoisspy_rounds",
    play_rule="whoisspy_play",
    finished=(f"{GAMES}/{{game_id}}.json",),
    calls=f"{GAMES}/{{game_id}}.calls.parquet",
    lone=spy,
)
