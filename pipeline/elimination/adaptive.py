"""The Elimination Game's adaptive schedule, as the round ledger (pipeline.core.run.rounds) asks for it.

- `setup`: `schedule.adaptive` of params/elimination.yaml, the pool `schedule.players`, the seats
  and the rating's TrueSkill settings;
- `games`: a round's tables become games as the rules schedule them (`schedule.seated_games`);
- `event`: a finished game's final ranks (its log's `final_results` record, as the game engine
  wrote it) become a free-for-all event between the models at the table (a model in several seats
  counts once, with its best rank, as the rating does);
- a game is finished once its calls table exists (written after its log); that table's cost is
  what `max_cost_usd` counts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.core.run.rounds import AdaptiveSetup, AdaptiveSpec, RoundGame, RoundRequest

if TYPE_CHECKING:  # the rating core (and trueskill) loads only when a ledger is read, not at every parse
    from pipeline.core.rating.events import RatingEvent

GAMES = "games"  # the games folder under results/elimination/


def setup(params_path: Path, models_path: Path) -> AdaptiveSetup:
    from pipeline.elimination.config import load_elimination_params

    params = load_elimination_params(params_path)
    return AdaptiveSetup(
        settings=params.schedule.adaptive,
        pool=tuple(params.schedule.players),
        seats=params.seats,
        rating=params.rating.rating_params(),
    )


def games(request: RoundRequest) -> list[RoundGame]:
    from pipeline.core.models import load_models
    from pipeline.elimination.config import load_elimination_params
    from pipeline.elimination.schedule import seated_games

    params = load_elimination_params(request.params)
    return seated_games(
        request.tables,
        request.earlier,
        params,
        load_models(request.models),
        request.setup.settings.seed,
        request.index,
    )


def final_ranks(log: Path) -> dict[str, int] | None:
    """Model -> rank (1 = winner, renumbered 1..m over the distinct models) from a log's
    `final_results` record; None when the log has none (the game did not finish)."""
    final = None
    for line in log.read_text(encoding="utf-8").splitlines():
        if '"final_results"' in line:
            record = json.loads(line)
            if record.get("type") == "final_results":
                final = record
    if final is None:
        return None
    seats = (final.get("extra") or {}).get("seats") or {}
    best: dict[str, int] = {}
    for pid, rank in final["final_ranks"].items():
        # player ids are `Player<seat>_Game<id>_<model>`: the seat number names the seat's model
        seat = f"P{pid.split('_', 1)[0].removeprefix('Player')}"
        model = seats.get(seat) or pid.split("_", 2)[2]
        best[model] = min(int(rank), best.get(model, int(rank)))
    order = sorted(best, key=lambda m: (best[m], m))
    return {model: place for place, model in enumerate(order, start=1)}


def event(results: Path, game: RoundGame) -> RatingEvent | None:
    """The game's final ranks as a free-for-all; None before its log has them."""
    from pipeline.core.rating.events import FreeForAll

    logs = sorted((results / GAMES / game.id).glob("game_*.jsonl"))
    ranks = final_ranks(logs[-1]) if logs else None
    return FreeForAll(ranks) if ranks is not None and len(ranks) >= 2 else None


SPEC = AdaptiveSpec(
    setup=setup,
    games=games,
    event=event,
    play_target="elimination_rounds",
    play_rule="elimination_play",
    finished=(f"{GAMES}/{{game_id}}/calls.parquet",),
    calls=f"{GAMES}/{{game_id}}/calls.parquet",
)
