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
what decides its games here (`RosterEntry.game_identity`: its per-move budgets for this game,
never another benchmark's, nor its transport settings). Only this module decides games, and it
imports nothing heavy, so the Snakefile can call it at parse time.

With `schedule.adaptive.enabled`, the schedule is the games of the adaptive rounds instead
(`results/elimination/rounds/round-NNN.json`, written by the run's round ledger,
pipeline.core.run.rounds): each table is seated in a seeded shuffled order (`table_seating`), and
its replicate is the number of times that exact seating was chosen before, so its id is a content
id of the same form and a game already played is never played again (`adaptive_games`). The fixed
lineups are then not played.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import ParamsError, canonical_json, content_id, seed_from
from pipeline.core.models import ModelsParams, load_models
from pipeline.core.run.rounds import RoundGame, read_rounds
from pipeline.elimination.config import GAME_VERSION, EliminationParams, load_elimination_params

BENCHMARK = "elimination"  # the prefix of a roster entry's per-move budgets for this game
ROUNDS_DIR = "results/elimination/rounds"  # the adaptive rounds' ledger, relative to the working directory


@dataclass(frozen=True)
class ScheduledGame:
    game_id: str
    seats: tuple[str, ...]  # roster name per seat, P1 first
    replicate: int
    lineup: int  # index of the lineup it comes from (adaptive: the round)
    rotation: int  # (adaptive: the table of the round)
    content: str  # canonical JSON of what decides the game (its id's input)


def game_content(
    seats: Sequence[str], replicate: int, params: EliminationParams, models: ModelsParams
) -> dict[str, Any]:
    return {
        "game": GAME_VERSION,
        "seats": [models.entry(name).game_identity(BENCHMARK) for name in seats],
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


def table_seating(table: Sequence[str], seed: int, round_index: int) -> tuple[str, ...]:
    """An adaptive round's table in seat order: a shuffle seeded by the settings' seed, the round and
    the table's members (content, not the order the schedule listed them in)."""
    seating = sorted(table)
    random.Random(seed_from("elimination-adaptive-seating", seed, round_index, seating)).shuffle(seating)
    return tuple(seating)


def seated_games(
    tables: Sequence[Sequence[str]],
    earlier: Iterable[RoundGame],
    params: EliminationParams,
    models: ModelsParams,
    seed: int,
    round_index: int,
) -> list[RoundGame]:
    """One game per table of an adaptive round: seated by `table_seating`, its replicate the number
    of earlier games (of the rounds before, and of this round's tables before it) with the same
    seating, its id the content id of `game_content`, as a fixed schedule's game."""
    seen = Counter(tuple(game.seats) for game in earlier)
    games = []
    for table in tables:
        seating = table_seating(table, seed, round_index)
        replicate = seen[seating]
        seen[seating] += 1
        gid = content_id(game_content(seating, replicate, params, models))
        games.append(RoundGame(gid, seating, {"replicate": replicate}))
    return games


def adaptive_games(
    params: EliminationParams,
    models: ModelsParams,
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
) -> list[ScheduledGame]:
    """The games of the adaptive rounds written so far (and `preview`: a round the run plan prices
    before it is written), each rebuilt from its seats and replicate under the current params. A
    game whose id no longer matches (a roster entry or a rule's number changed since it was chosen)
    stops with the fix: the rounds belong to the games they chose."""
    records = read_rounds(rounds)
    chosen = [(record.index, t, game) for record in records for t, game in enumerate(record.games)]
    chosen += [(len(records) + 1, t, game) for t, game in enumerate(preview)]
    games: list[ScheduledGame] = []
    seen: set[str] = set()
    for index, table, game in chosen:
        replicate = int(game.fields.get("replicate", 0))
        content = game_content(game.seats, replicate, params, models)
        gid = content_id(content)
        if gid != game.id:
            raise ParamsError(
                f"{rounds}/round-{index:03d}.json: game {game.id} ({', '.join(game.seats)}) is now {gid}: a roster "
                "entry of its players or a rule's number changed since the round was chosen, so its games are "
                f"other games; restore the params it was chosen under, or move {rounds} away to start the rounds anew"
            )
        if gid in seen:
            continue
        seen.add(gid)
        games.append(ScheduledGame(gid, game.seats, replicate, index, table, canonical_json(content)))
    return games


def build_schedule(
    params: EliminationParams,
    models: ModelsParams,
    source: str = "params/elimination.yaml",
    models_source: str = "params/models.yaml",
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
    *,
    outside_ok: bool = False,
) -> list[ScheduledGame]:
    """Every game to play: the fixed lineups, or (`schedule.adaptive.enabled`) the games of the
    adaptive rounds in `rounds` (relative to the working directory). `outside_ok`: the params may seat
    an entry played from outside the pipeline (a game drawn for it: pipeline.core.run.contract.seat_game)."""
    params.check_roster(models, source, models_source, outside_ok=outside_ok)
    if params.schedule.adaptive.enabled:
        return adaptive_games(params, models, rounds, preview)
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
    params_path: str | Path = "params/elimination.yaml",
    models_path: str | Path = "params/models.yaml",
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
) -> list[ScheduledGame]:
    """The schedule of these params: the fixed lineups, or the adaptive rounds' games (`build_schedule`)."""
    return build_schedule(
        load_elimination_params(params_path),
        load_models(models_path),
        str(params_path),
        str(models_path),
        rounds,
        preview,
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
