"""Elimination games as dataset rows, from the rate step's tables (every scheduled game): each
round's public statements, partner rankings, private talk, votes with their private reasons,
tie-break statements, pleas and jury votes, in the order the game plays them; every seat's final
rank and partial points."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts import seat_order
from pipeline.core.artifacts.dataset import (
    DatasetGame,
    DatasetMove,
    DatasetResult,
    DatasetSeat,
    details,
    rated_games,
)

#: the rate step's tables (tables/<name>.parquet) a game's row is read from
TABLES = ("games", "seats", "messages", "votes", "eliminations", "final_ranks", "memory_notes")
#: where each kind of move falls within a round (the engine's order; ties keep the log's order)
ROUND_ORDER = {
    "public": 0,
    "preference": 1,
    "private": 2,
    "vote": 3,
    "tiebreak": 4,
    "revote": 5,
    "plea": 6,
    "jury": 7,
    "memory": 8,
}


def dataset_rows(folder: Path) -> list[DatasetGame]:
    from pipeline.core.artifacts import read_table
    from pipeline.elimination.schemas import TABLE_SCHEMAS

    tables = folder / "tables"
    if not (tables / "games.parquet").exists():
        return []
    read = {name: read_table(tables / f"{name}.parquet", TABLE_SCHEMAS[name]) for name in TABLES}
    by_game = {name: _grouped(frame) for name, frame in read.items()}
    logs = _logs(folder / "games")
    rated = rated_games(folder)
    games = []
    for game in read["games"].iter_rows(named=True):
        game_id = game["game_id"]
        rows = {name: grouped.get(game_id, []) for name, grouped in by_game.items()}
        log = logs.get(game["file"])
        games.append(_game(game, rows, log, rated))
    return games


def _grouped(frame: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in frame.iter_rows(named=True):
        grouped[row["game_id"]].append(row)
    return grouped


def _logs(games: Path) -> dict[str, Path]:
    """Each played log by the name the tables give it (game_<id>.jsonl), in its job's folder."""
    from pipeline.elimination.records import log_name

    return {log_name(path.name): path for path in sorted(games.glob("*/game_*.jsonl"))}


def _game(
    game: dict[str, Any], rows: dict[str, list[dict[str, Any]]], log: Path | None, rated: set[str]
) -> DatasetGame:
    out = {e["seat"]: e for e in rows["eliminations"]}
    ranks = {r["seat"]: r for r in rows["final_ranks"]}
    seats = sorted(rows["seats"], key=lambda s: seat_order(s["seat"]))
    return DatasetGame(
        game_id=game["game_id"],
        variant=game["variant"],
        params={
            "seats": game["seats"],
            "rounds": game["rounds"],
            "rank_source": game["rank_source"],
            "has_final_results": game["has_final_results"],
            "matches_final_results": game["matches_final_results"],
            "log": game["file"],
        },
        seats=tuple(DatasetSeat(s["seat"], s["model"]) for s in seats),
        moves=tuple(_moves(rows, log)),
        results=tuple(_result(s["seat"], ranks.get(s["seat"]), out.get(s["seat"])) for s in seats),
        winner=game["winner_seat"],
        rated=game["game_id"] in rated,
        jobs=(f"elimination/{log.parent.name}",) if log is not None else (),
    )


def _result(seat: str, rank: dict[str, Any] | None, out: dict[str, Any] | None) -> DatasetResult:
    place = rank["rank"] if rank else None
    return DatasetResult(
        seat=seat,
        score=rank["points"] if rank else None,
        rank=place,
        won=None if place is None else place == 1,
        details=details(
            recorded_rank=rank["recorded_rank"] if rank else None,
            derived_rank=rank["derived_rank"] if rank else None,
            eliminated_round=out["round"] if out else None,
            eliminated_order=out["order"] if out else None,
            eliminated_by_jury=out["jury"] if out else None,
        ),
    )


def _moves(rows: dict[str, list[dict[str, Any]]], log: Path | None) -> list[DatasetMove]:
    moves: list[tuple[tuple[int, int, int], DatasetMove]] = []
    for m in rows["messages"]:
        move = DatasetMove(
            m["kind"],
            m["seat"],
            m["round"],
            m["text"],
            m["target_seat"],  # the partner a private message goes to
            details(words=m["words"], cut=m["cut"], empty_at_token_limit=m["empty_at_token_limit"] or None),
        )
        moves.append(((m["round"], ROUND_ORDER[m["kind"]], m["subround"]), move))
    for v in rows["votes"]:
        move = DatasetMove(
            v["phase"],
            v["voter_seat"],
            v["round"],
            v["reason"],  # the private reason given with the vote
            v["target_seat"],  # None: an invalid vote
            details(
                valid=v["valid"], target_marker=v["target_marker"], token_limit_replies=v["token_limit_replies"] or None
            ),
        )
        moves.append(((v["round"], ROUND_ORDER[v["phase"]], 0), move))
    for n in rows["memory_notes"]:
        moves.append(((n["round"], ROUND_ORDER["memory"], 0), DatasetMove("memory", n["seat"], n["round"], n["note"])))
    for number, seat, ranking in _rankings(log):
        move = DatasetMove("preference", seat, number, None, " ".join(ranking))  # partners, most wanted first
        moves.append(((number, ROUND_ORDER["preference"], 0), move))
    return [move for _, move in sorted(moves, key=lambda keyed: keyed[0])]


def _rankings(log: Path | None) -> list[tuple[int, str, list[str]]]:
    """(round, seat, ranking) of every seat's partner ranking: our logs keep them in the round's
    preference_result (`extra.rankings`); the original's logs do not."""
    if log is None:
        return []
    found = []
    for line in log.read_text(encoding="utf-8").split("\n"):  # not splitlines(): messages hold U+2028
        if '"preference_result"' not in line:
            continue
        record = json.loads(line)
        rankings = (record.get("extra") or {}).get("rankings") or {}
        found += [(record["round"], seat, list(ranking)) for seat, ranking in sorted(rankings.items())]
    return found
