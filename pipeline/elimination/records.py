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
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Tag, TypeAdapter, ValidationError

from pipeline.core.artifacts import GameRecord, RecordError, atomic_open
from pipeline.core.artifacts.records import describe_errors

# conversation subrounds
PUBLIC_SUBROUND = 1
TIEBREAK_SUBROUND = 600
PLEA_SUBROUND = 900
PRIVATE_SUBROUNDS = (2, 3, 4)

PLAYER_ID = re.compile(r"^Player(\d+)_Game([^_]+)_(.*)$", re.S)
NO_REASON = "(no reason)"

Record = dict[str, Any]
GameId = int | str  # the original writes an integer; kept as written
Number = int | float  # kept as written: an int stays an int, a float a float


def player_id(seat_number: int, game_id: GameId, model: str) -> str:
    return f"Player{seat_number}_Game{game_id}_{model}"


def parse_player_id(pid: str) -> tuple[int, str, str] | None:
    """(seat number, game id, model) of `Player<seat>_Game<id>_<model>`, or None."""
    match = PLAYER_ID.match(pid)
    if not match:
        return None
    return int(match.group(1)), match.group(2), match.group(3)


def _seat_label(pid: str) -> str:
    """`P<seat>` of a player id; anything else as it is."""
    parsed = parse_player_id(pid)
    return f"P{parsed[0]}" if parsed else pid


def now_stamp() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def _with_extra(record: Record, extra: Mapping[str, Any] | None) -> Record:
    if extra:
        record["extra"] = dict(extra)
    return record


def conversation(
    game_id: GameId, round_no: int, subround: int, pid: str, message: str, extra: Mapping[str, Any] | None = None
) -> Record:
    return _with_extra(
        {
            "game_id": game_id,
            "type": "conversation",
            "round": round_no,
            "subround": subround,
            "player_id": pid,
            "message": message,
            "timestamp": now_stamp(),
        },
        extra,
    )


def private(
    game_id: GameId,
    round_no: int,
    subround: int,
    speaker: str,
    target: str,
    message: str,
    extra: Mapping[str, Any] | None = None,
) -> Record:
    return _with_extra(
        {
            "game_id": game_id,
            "type": "private",
            "round": round_no,
            "subround": subround,
            "speaker_id": speaker,
            "target_id": target,
            "message": message,
            "timestamp": now_stamp(),
        },
        extra,
    )


def preference_proposal(game_id: GameId, round_no: int, proposer: str, target: str, rank: int) -> Record:
    return {
        "game_id": game_id,
        "type": "preference_proposal",
        "round": round_no,
        "proposer": proposer,
        "target": target,
        "rank_of_target": rank,
    }


def preference_outcome(
    game_id: GameId,
    round_no: int,
    target: str,
    *,
    accepted: str | None = None,
    rejected: str | None = None,
    replaced: str | None = None,
) -> Record:
    record: Record = {"game_id": game_id, "type": "preference_outcome", "round": round_no, "target": target}
    if rejected is not None:
        record["rejected"] = rejected
    if replaced is not None:
        record["replaced"] = replaced
    if accepted is not None:
        record["accepted"] = accepted
    return record


def preference_result(
    game_id: GameId, round_no: int, pairs: Iterable[tuple[str, str]], extra: Mapping[str, Any] | None = None
) -> Record:
    return _with_extra(
        {"game_id": game_id, "type": "preference_result", "round": round_no, "matched_pairs": [list(p) for p in pairs]},
        extra,
    )


REASON_TYPES = {"vote": "private_vote_reason", "revote": "private_revote_reason", "jury": "private_jury_reason"}


def vote_reason(
    game_id: GameId,
    round_no: int,
    phase: str,
    voter: str,
    target: str | None,
    reason: str,
    extra: Mapping[str, Any] | None = None,
) -> Record:
    return _with_extra(
        {
            "game_id": game_id,
            "type": REASON_TYPES[phase],
            "round": round_no,
            "voter_id": voter,
            "target_id": target,
            "reason": reason,
        },
        extra,
    )


def vote(
    game_id: GameId, round_no: int, voter: str, target: str | None, extra: Mapping[str, Any] | None = None
) -> Record:
    return _with_extra(
        {
            "game_id": game_id,
            "type": "vote",
            "round": round_no,
            "voter_id": voter,
            "target_id": target,
            "public_vote": True,
            "timestamp": now_stamp(),
        },
        extra,
    )


def elimination(
    game_id: GameId,
    round_no: int,
    eliminated: str,
    *,
    tie_break: bool,
    random_pick: bool,
    extra: Mapping[str, Any] | None = None,
) -> Record:
    """As the original's later logs: no `cumu_check` (a cumulative decision is `tie_break` true)."""
    return _with_extra(
        {
            "game_id": game_id,
            "type": "elimination",
            "round": round_no,
            "eliminated_player": eliminated,
            "tie_break": tie_break,
            "random_pick": random_pick,
            "timestamp": now_stamp(),
        },
        extra,
    )


def partial_points(rank: int, n_seats: int) -> float:
    """(n - r) / (n - 1): 1 for the winner, 0 for the first out."""
    return (n_seats - rank) / (n_seats - 1)


def final_results(game_id: GameId, ranks: Mapping[str, int], extra: Mapping[str, Any] | None = None) -> Record:
    """`ranks`: player id -> final rank. Written like the original's latest logs (seat labels in
    `winners`, player ids in `winners_full`), listed from the first out to the winner."""
    n = len(ranks)
    ordered = sorted(ranks.items(), key=lambda item: -item[1])
    winners_full = [pid for pid, rank in ordered if rank == 1]
    winners = [_seat_label(pid) for pid in winners_full]
    final = {pid: rank for pid, rank in ordered}
    points = {pid: partial_points(rank, n) for pid, rank in ordered}
    return _with_extra(
        {
            "game_id": game_id,
            "type": "final_results",
            "winners": winners,
            "winners_full": winners_full,
            "final_ranks": final,
            "final_ranks_full": dict(final),
            "partial_points": points,
            "partial_points_full": dict(points),
        },
        extra,
    )


def memory_note(game_id: GameId, round_no: int, pid: str, note: str, extra: Mapping[str, Any] | None = None) -> Record:
    """The memory variant's private note of one seat after a round."""
    return _with_extra(
        {
            "game_id": game_id,
            "type": "memory_note",
            "round": round_no,
            "player_id": pid,
            "note": note,
            "timestamp": now_stamp(),
        },
        extra,
    )


_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$")


def log_file_name(game_id: GameId, log: Iterable[Record] = ()) -> str:
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


# -- typed records ------------------------------------------------------------------------------
# One frozen model per record kind, fields in the original's key order; a key some logs leave out
# is optional and written only when the log had it (GameRecord.to_json). `extra` holds what we add.


class _Line(GameRecord):
    game_id: GameId


class ConversationRecord(_Line):
    type: Literal["conversation"]
    round: int
    subround: int  # PUBLIC_SUBROUND, TIEBREAK_SUBROUND or PLEA_SUBROUND
    player_id: str
    message: str
    timestamp: str | None = None
    extra: dict[str, Any] | None = None


class PrivateRecord(_Line):
    type: Literal["private"]
    round: int
    subround: int
    speaker_id: str
    target_id: str
    message: str
    timestamp: str | None = None
    extra: dict[str, Any] | None = None


class PreferenceProposalRecord(_Line):
    type: Literal["preference_proposal"]
    round: int
    proposer: str
    target: str
    rank_of_target: int


class PreferenceOutcomeRecord(_Line):
    type: Literal["preference_outcome"]
    round: int
    target: str
    rejected: str | None = None
    replaced: str | None = None
    accepted: str | None = None


class PreferenceResultRecord(_Line):
    type: Literal["preference_result"]
    round: int
    matched_pairs: list[list[str]]
    extra: dict[str, Any] | None = None


class VoteReasonRecord(_Line):
    type: Literal["private_vote_reason", "private_revote_reason", "private_jury_reason"]
    round: int
    voter_id: str
    target_id: str | None
    reason: str
    extra: dict[str, Any] | None = None


class VoteRecord(_Line):
    type: Literal["vote"]
    round: int
    voter_id: str
    target_id: str | None  # a player id, or the original's invalid-vote marker
    public_vote: bool
    timestamp: str | None = None
    extra: dict[str, Any] | None = None


class EliminationRecord(_Line):
    type: Literal["elimination"]
    round: int
    eliminated_player: str
    tie_break: bool
    cumu_check: bool | None = None  # the original's earlier logs only
    random_pick: bool
    timestamp: str | None = None
    extra: dict[str, Any] | None = None


class FinalResultsRecord(_Line):
    type: Literal["final_results"]
    winners: list[str]
    winners_full: list[str] | None = None  # absent in some of the original's logs
    final_ranks: dict[str, int]  # keyed by player id, or by seat label in some of the original's logs
    final_ranks_full: dict[str, int]
    partial_points: dict[str, Number]
    partial_points_full: dict[str, Number]
    extra: dict[str, Any] | None = None


class MemoryNoteRecord(_Line):
    type: Literal["memory_note"]
    round: int
    player_id: str
    note: str
    timestamp: str | None = None
    extra: dict[str, Any] | None = None


class OtherRecord(GameRecord):
    """A record kind this pipeline does not know (the reader counts them): kept as it is."""

    model_config = ConfigDict(frozen=True, extra="allow")


_KINDS: dict[str, type[GameRecord]] = {
    "conversation": ConversationRecord,
    "private": PrivateRecord,
    "preference_proposal": PreferenceProposalRecord,
    "preference_outcome": PreferenceOutcomeRecord,
    "preference_result": PreferenceResultRecord,
    "private_vote_reason": VoteReasonRecord,
    "private_revote_reason": VoteReasonRecord,
    "private_jury_reason": VoteReasonRecord,
    "vote": VoteRecord,
    "elimination": EliminationRecord,
    "final_results": FinalResultsRecord,
    "memory_note": MemoryNoteRecord,
}


def _kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return "other" if kind not in _KINDS else _KINDS[kind].__name__


LogRecord = Annotated[
    Annotated[ConversationRecord, Tag("ConversationRecord")]
    | Annotated[PrivateRecord, Tag("PrivateRecord")]
    | Annotated[PreferenceProposalRecord, Tag("PreferenceProposalRecord")]
    | Annotated[PreferenceOutcomeRecord, Tag("PreferenceOutcomeRecord")]
    | Annotated[PreferenceResultRecord, Tag("PreferenceResultRecord")]
    | Annotated[VoteReasonRecord, Tag("VoteReasonRecord")]
    | Annotated[VoteRecord, Tag("VoteRecord")]
    | Annotated[EliminationRecord, Tag("EliminationRecord")]
    | Annotated[FinalResultsRecord, Tag("FinalResultsRecord")]
    | Annotated[MemoryNoteRecord, Tag("MemoryNoteRecord")]
    | Annotated[OtherRecord, Tag("other")],
    Discriminator(_kind),
]


class EliminationLog(GameRecord):
    """One game's log in the original's format: its records in file order, one JSON object a line.

    `ascii`: whether the file escapes non-ASCII characters (our logs: `json.dumps` defaults) or
    writes them as they are (the original's); read from the file, so a log is written back byte
    for byte."""

    records: list[LogRecord]
    ascii: bool = True

    def lines(self) -> list[str]:
        return [json.dumps(record.to_json(), ensure_ascii=self.ascii) for record in self.records]


def as_log(records: EliminationLog | Iterable[Record | GameRecord]) -> EliminationLog:
    """A typed log, from a log or from the records' JSON objects (checked here)."""
    if isinstance(records, EliminationLog):
        return records
    return EliminationLog.model_validate(
        {"records": [r.to_json() if isinstance(r, GameRecord) else r for r in records]}
    )


def read_log(path: str | Path) -> EliminationLog:
    """One log file as an `EliminationLog`; a line that is not JSON, or a record of a known kind
    that does not match its model, is a `RecordError` naming the file, the line and the field."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{file}: cannot read: {exc}") from None
    records = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): messages hold U+2028
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{file}: line {number} is not JSON ({exc.msg})") from None
        try:
            records.append(_RECORD.validate_python(data))
        except ValidationError as exc:
            raise RecordError(
                f"{file}: line {number} does not match its record kind:\n" + "\n".join(describe_errors(exc))
            ) from None
    return EliminationLog(records=records, ascii=text.isascii())


_RECORD: TypeAdapter[Any] = TypeAdapter(LogRecord)


def write_log(path: str | Path, records: EliminationLog | Iterable[Record | GameRecord]) -> Path:
    """One JSON object per line, written atomically (a killed game leaves no partial log). Records
    given as JSON objects are checked against their kind's model first."""
    log = as_log(records)
    target = Path(path)
    with atomic_open(target, "w") as handle:
        for line in log.lines():
            handle.write(line + "\n")
    return target
