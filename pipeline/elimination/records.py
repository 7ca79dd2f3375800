"""The original benchmark's log format: one JSON object per line, one file per game.

Each builder returns a record with the original's keys in the original's order. Whatever we add
goes into one extra key, `extra`, so tools written for the original read our logs unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import atomic_open

# conversation subrounds
PUBLIC_SUBROUND = 1
TIEBREAK_SUBROUND = 600
PLEA_SUBROUND = 900
PRIVATE_SUBROUNDS = (2, 3, 4)

PLAYER_ID = re.compile(r"^Player(\d+)_Game([^_]+)_(.*)$", re.S)
NO_REASON = "(no reason)"

Record = dict[str, Any]


def player_id(seat_number: int, game_id: str | int, model: str) -> str:
    return f"Player{seat_number}_Game{game_id}_{model}"


def parse_player_id(pid: str) -> tuple[int, str, str] | None:
    """(seat number, game id, model) of `Player<seat>_Game<id>_<model>`, or None."""
    match = PLAYER_ID.match(pid)
    if not match:
        return None
    return int(match.group(1)), match.group(2), match.group(3)


def now_stamp() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def _with_extra(record: Record, extra: Mapping[str, Any] | None) -> Record:
    if extra:
        record["extra"] = dict(extra)
    return record


def conversation(game_id: str, round_no: int, subround: int, pid: str, message: str,
                 extra: Mapping[str, Any] | None = None) -> Record:
    return _with_extra({"game_id": game_id, "type": "conversation", "round": round_no, "subround": subround,
                        "player_id": pid, "message": message, "timestamp": now_stamp()}, extra)


def private(game_id: str, round_no: int, subround: int, speaker: str, target: str, message: str,
            extra: Mapping[str, Any] | None = None) -> Record:
    return _with_extra({"game_id": game_id, "type": "private", "round": round_no, "subround": subround,
                        "speaker_id": speaker, "target_id": target, "message": message,
                        "timestamp": now_stamp()}, extra)


def preference_proposal(game_id: str, round_no: int, proposer: str, target: str, rank: int) -> Record:
    return {"game_id": game_id, "type": "preference_proposal", "round": round_no, "proposer": proposer,
            "target": target, "rank_of_target": rank}


def preference_outcome(game_id: str, round_no: int, target: str, *, accepted: str | None = None,
                       rejected: str | None = None, replaced: str | None = None) -> Record:
    record: Record = {"game_id": game_id, "type": "preference_outcome", "round": round_no, "target": target}
    if rejected is not None:
        record["rejected"] = rejected
    if replaced is not None:
        record["replaced"] = replaced
    if accepted is not None:
        record["accepted"] = accepted
    return record


def preference_result(game_id: str, round_no: int, pairs: Iterable[tuple[str, str]],
                      extra: Mapping[str, Any] | None = None) -> Record:
    return _with_extra({"game_id": game_id, "type": "preference_result", "round": round_no,
                        "matched_pairs": [list(p) for p in pairs]}, extra)


REASON_TYPES = {"vote": "private_vote_reason", "revote": "private_revote_reason", "jury": "private_jury_reason"}


def vote_reason(game_id: str, round_no: int, phase: str, voter: str, target: str | None, reason: str,
                extra: Mapping[str, Any] | None = None) -> Record:
    return _with_extra({"game_id": game_id, "type": REASON_TYPES[phase], "round": round_no, "voter_id": voter,
                        "target_id": target, "reason": reason}, extra)


def vote(game_id: str, round_no: int, voter: str, target: str | None,
         extra: Mapping[str, Any] | None = None) -> Record:
    return _with_extra({"game_id": game_id, "type": "vote", "round": round_no, "voter_id": voter,
                        "target_id": target, "public_vote": True, "timestamp": now_stamp()}, extra)


def elimination(game_id: int | str, round_no: int, eliminated: str, *, tie_break: bool,
                random_pick: bool, extra: Mapping[str, Any] | None = None) -> Record:
    """As the original's later logs: no `cumu_check` (a cumulative decision is `tie_break` true)."""
    return _with_extra({"game_id": game_id, "type": "elimination", "round": round_no,
                        "eliminated_player": eliminated, "tie_break": tie_break,
                        "random_pick": random_pick, "timestamp": now_stamp()}, extra)


def partial_points(rank: int, n_seats: int) -> float:
    """(n - r) / (n - 1): 1 for the winner, 0 for the first out."""
    return (n_seats - rank) / (n_seats - 1)


def final_results(game_id: str, ranks: Mapping[str, int], extra: Mapping[str, Any] | None = None) -> Record:
    """`ranks`: player id -> final rank. Written like the original's latest logs (seat labels in
    `winners`, player ids in `winners_full`), listed from the first out to the winner."""
    n = len(ranks)
    ordered = sorted(ranks.items(), key=lambda item: -item[1])
    winners_full = [pid for pid, rank in ordered if rank == 1]
    winners = [f"P{parse_player_id(pid)[0]}" if parse_player_id(pid) else pid for pid in winners_full]
    final = {pid: rank for pid, rank in ordered}
    points = {pid: partial_points(rank, n) for pid, rank in ordered}
    return _with_extra({"game_id": game_id, "type": "final_results", "winners": winners,
                        "winners_full": winners_full, "final_ranks": final, "final_ranks_full": dict(final),
                        "partial_points": points, "partial_points_full": dict(points)}, extra)


def memory_note(game_id: int | str, round_no: int, pid: str, note: str,
                extra: Mapping[str, Any] | None = None) -> Record:
    """The memory variant's private note of one seat after a round."""
    return _with_extra({"game_id": game_id, "type": "memory_note", "round": round_no, "player_id": pid,
                        "note": note, "timestamp": now_stamp()}, extra)


_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$")


def log_file_name(game_id: int | str, log: Iterable[Record] = ()) -> str:
    """`game_<id>_<YYYYMMDD_HHMMSS>.jsonl` as the original names its logs, the time being the
    first record's timestamp (the game's start); `game_<id>.jsonl` when no record has one.
    Tables never depend on it: the reader names a log by its game id (`log_name`)."""
    for record in log:
        match = _STAMP.match(str(record.get("timestamp", "")))
        if match:
            y, mo, d, h, mi, se = match.groups()
            return f"game_{game_id}_{y}{mo}{d}_{h}{mi}{se}.jsonl"
    return f"game_{game_id}.jsonl"


_TIME_SUFFIX = re.compile(r"_\d{8}_\d{6}(?=\.jsonl$)")


def log_name(file_name: str) -> str:
    """A log's name without the original's start time (`game_<id>.jsonl`): what the tables hold,
    so that a rerun of the same game gives byte-identical tables."""
    return _TIME_SUFFIX.sub("", file_name)


def write_log(path: str | Path, records: Iterable[Record]) -> Path:
    """One JSON object per line, written atomically (a killed game leaves no partial log)."""
    target = Path(path)
    with atomic_open(target, "w") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return target
