"""Xent games as dataset rows: one row per map (the unit the rating ranks), every player's moves on
it round by round, and each player's map score, rank and round totals from the rescored tables."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts.dataset import (
    DatasetGame,
    DatasetMove,
    DatasetResult,
    DatasetSeat,
    details,
    rated_games,
)
from pipeline.core.artifacts.schemas import EVENTS_FILE

Rows = dict[tuple[str, str], list[dict[str, Any]]]


def dataset_rows(folder: Path) -> list[DatasetGame]:
    """Every map of maps.parquet (written by the rate step), with its map file's XGL program."""
    from pipeline.core.artifacts import read_table
    from pipeline.xent.schemas import MapsSchema, MovesSchema, RoundsSchema, ScoresSchema

    if not (folder / "maps.parquet").exists():
        return []
    maps = read_table(folder / "maps.parquet", MapsSchema)
    moves = _by_map(read_table(folder / "moves.parquet", MovesSchema))
    rounds = _by_map(read_table(folder / "rounds.parquet", RoundsSchema))
    scores = _by_map(read_table(folder / "scores.parquet", ScoresSchema))
    ranks = _ranks(folder / EVENTS_FILE)
    jobs = _jobs(folder / "play")
    rated = rated_games(folder)
    games = []
    for row in maps.iter_rows(named=True):
        key = (row["game"], row["map_id"])
        game_id = f"{row['game']}/{row['map_id']}"  # as the rating events name it
        program = folder / "maps" / row["game"] / f"{row['map_id']}.xgl"
        players = sorted({s["model"] for s in scores.get(key, [])} | {m["model"] for m in moves.get(key, [])})
        roles = {m["model"]: m["player_role"] for m in moves.get(key, [])}
        games.append(
            DatasetGame(
                game_id=game_id,
                variant=row["game"],
                params={
                    "game": row["game"],
                    "map_id": row["map_id"],
                    "program": program.read_text(encoding="utf-8") if program.exists() else None,
                    "flagged": row["flagged"],  # no player improved after round 1
                },
                seats=tuple(DatasetSeat(player, player, roles.get(player)) for player in players),
                moves=tuple(_move(m) for m in sorted(moves.get(key, []), key=_move_order)),
                results=tuple(_result(s, ranks.get(game_id, {}), rounds.get(key, [])) for s in scores.get(key, [])),
                winner=row["best_model"],
                rated=game_id in rated,
                jobs=tuple(sorted(job for player in players for job in jobs.get((*key, player), []))),
            )
        )
    return games


def _by_map(frame: pl.DataFrame) -> Rows:
    grouped: Rows = defaultdict(list)
    for row in frame.iter_rows(named=True):
        grouped[(row["game"], row["map_id"])].append(row)
    return grouped


def _move_order(move: dict[str, Any]) -> tuple[int, str, int]:
    return move["round"], move["model"], move["elicit_index"]


def _move(m: dict[str, Any]) -> DatasetMove:
    return DatasetMove(
        "move",
        m["model"],
        m["round"],
        m["reply"],
        m["move"],  # the register's value the program read (the <move> tag's text, or the whole reply)
        details(
            register=m["register"],
            elicit_index=m["elicit_index"],
            attempts=m["attempts"],
            tagged=m["tagged"],
        ),
    )


def _result(score: dict[str, Any], ranks: dict[str, int], rounds: list[dict[str, Any]]) -> DatasetResult:
    player = score["model"]
    mine = sorted((r for r in rounds if r["model"] == player), key=lambda r: r["round"])
    return DatasetResult(
        seat=player,
        score=score["map_score"],  # the best round's bits
        rank=ranks.get(player),
        won=None,
        details=details(
            normalized_score=score["normalized_score"],
            voided=score["voided"],
            rounds=[{"round": r["round"], "total_bits": r["total_bits"], "error": r["error"]} for r in mine],
        ),
    )


def _ranks(events: Path) -> dict[str, dict[str, int]]:
    """game -> player -> the rank the rating gave it on that map."""
    if not events.exists():
        return {}
    found: dict[str, dict[str, int]] = defaultdict(dict)
    for row in pl.read_parquet(events, columns=["game", "player", "rank"]).iter_rows(named=True):
        found[row["game"]][row["player"]] = row["rank"]
    return found


def _jobs(play: Path) -> dict[tuple[str, str, str], list[str]]:
    """(game, map_id, player) -> the calls tables' job of each play record that played it."""
    found: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for path in sorted(play.glob("*/*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        for played in record.get("maps") or []:
            found[(record["game"], played["map_id"], record["player"])].append(f"xent/{record['game']}/{path.stem}")
    return found
