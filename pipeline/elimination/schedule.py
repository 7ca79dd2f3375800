"""Which games to play: lineups, rotated over the seats, each game named by a content id.

- Explicit lineups (`schedule.lineups`) are played as written.
- Generated lineups: each player of `schedule.players` from the `seats`-th on anchors
  `lineups_per_player` lineups, filled with the players listed before it that have played least
  so far (ties broken by a hash). So the lineups of the first k players never depend on who comes
  after: adding a model at the end of `players` adds games and changes none.
- Every lineup is played in `rotations` seatings (lineup shifted by multiples of seats/rotations);
  with rotations == seats every player of the lineup sits in every seat exactly once.
- `repeats` replays every seating with a new seed.
A game id is the content id of what decides the game: the game version, the roster entry in each
seat, the replicate number and the rules' numbers. The game's reply budgets (`reply_tokens`) are
part of it only where the params set one (the original sets none), and a seat's entry only with
what decides its requests here: sampling fields it sets, and its per-move budgets for this game
(`elimination.<kind>` or `<kind>`, not another benchmark's). Only this module decides games, and
it imports nothing heavy, so the Snakefile can call it at parse time.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import canonical_json, content_id, seed_from
from pipeline.core.models import ModelsParams, RosterEntry, load_models
from pipeline.elimination.config import GAME_VERSION, EliminationParams, load_elimination_params

BENCHMARK = "elimination"  # the prefix of a roster entry's per-move budgets for this game


@dataclass(frozen=True)
class ScheduledGame:
    game_id: str
    seats: tuple[str, ...]  # roster name per seat, P1 first
    replicate: int
    lineup: int  # index of the lineup it comes from
    rotation: int
    content: str  # canonical JSON of what decides the game (its id's input)


def entry_spec(entry: RosterEntry) -> dict[str, Any]:
    """The parts of a roster entry that change how it plays here (never keys or connection details):
    its sampling fields that are set, with only the per-move budgets that apply to this game."""
    spec: dict[str, Any] = {"name": entry.name}
    if entry.is_bot:
        spec.update(bot=entry.bot, bot_options=dict(entry.bot_options))
    else:
        spec.update(model=entry.model, sampling=entry.sampling.identity(BENCHMARK))
    return spec


def game_content(
    seats: Sequence[str], replicate: int, params: EliminationParams, models: ModelsParams
) -> dict[str, Any]:
    return {
        "game": GAME_VERSION,
        "seats": [entry_spec(models.entry(name)) for name in seats],
        "replicate": replicate,
        "words": params.words.model_dump(),
        # only where the params cap a move (the original caps none): a model's own budgets are in its seat
        **({"reply_tokens": params.reply_tokens.model_dump()} if params.reply_tokens.is_set() else {}),
        "history_rounds": params.history_rounds,
        "votes": params.votes,
        "variant": params.variant,
        "memory_players": sorted(params.memory_players) if params.variant == "memory" else [],
    }


def generated_lineups(players: Sequence[str], seats: int, per_player: int) -> list[list[str]]:
    counts: Counter[str] = Counter()
    lineups: list[list[str]] = []
    for index, anchor in enumerate(players):
        if index < seats - 1:
            continue
        pool = list(players[:index])
        for k in range(per_player):
            pool.sort(key=lambda q: (counts[q], seed_from("lineup", anchor, k, q)))
            members = [*pool[: seats - 1], anchor]
            members.sort(key=lambda q: seed_from("seat", anchor, k, q))
            counts.update(members)
            lineups.append(members)
    return lineups


def rotation_offsets(seats: int, rotations: int) -> list[int]:
    return [(r * seats) // rotations for r in range(rotations)]


def build_schedule(
    params: EliminationParams,
    models: ModelsParams,
    source: str = "params/elimination.yaml",
    models_source: str = "params/models.yaml",
) -> list[ScheduledGame]:
    params.check_roster(models, source, models_source)
    sched = params.schedule
    lineups = [list(lineup) for lineup in sched.lineups]
    if sched.lineups_per_player:
        lineups += generated_lineups(sched.players, params.seats, sched.lineups_per_player)
    games: list[ScheduledGame] = []
    seen: set[str] = set()
    for index, lineup in enumerate(lineups):
        for rotation, offset in enumerate(rotation_offsets(params.seats, sched.rotations)):
            seating = tuple(lineup[offset:] + lineup[:offset])
            for replicate in range(sched.repeats):
                content = game_content(seating, replicate, params, models)
                gid = content_id(content)
                if gid in seen:  # a symmetric lineup can rotate onto itself: same game, played once
                    continue
                seen.add(gid)
                games.append(ScheduledGame(gid, seating, replicate, index, rotation, canonical_json(content)))
    return games


def schedule_from_files(
    params_path: str | Path = "params/elimination.yaml", models_path: str | Path = "params/models.yaml"
) -> list[ScheduledGame]:
    return build_schedule(
        load_elimination_params(params_path), load_models(models_path), str(params_path), str(models_path)
    )


def uses_local_model(game: ScheduledGame) -> bool:
    """Whether a seat is played by the embedded model (its jobs then want both cores)."""
    return any(str(seat.get("model", "")).startswith("local/") for seat in json.loads(game.content)["seats"])


def schedule_rows(games: Sequence[ScheduledGame]) -> list[dict[str, Any]]:
    """One row per (game, seat): the schedule table."""
    return [
        {
            "game_id": g.game_id,
            "seat": f"P{i + 1}",
            "player": name,
            "replicate": g.replicate,
            "lineup": g.lineup,
            "rotation": g.rotation,
        }
        for g in games
        for i, name in enumerate(g.seats)
    ]


def describe(games: Sequence[ScheduledGame]) -> str:
    return json.dumps([{"game_id": g.game_id, "seats": list(g.seats)} for g in games], indent=1)
