"""Any log in the original format (theirs or ours) -> tidy tables, with the final ranks re-derived.

Final ranks come from the records themselves: the regular eliminations in file order give ranks
n, n-1, ...; the jury round's elimination record (or, when a log has none, the jury votes, then
the votes over the whole game) decides 2 and 1. `final_results` is read too and compared; it is
used only when the records cannot decide (a tied jury without an elimination record).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.elimination.records import (
    PLEA_SUBROUND,
    PUBLIC_SUBROUND,
    TIEBREAK_SUBROUND,
    parse_player_id,
    partial_points,
)

try:  # orjson parses the original's thousands of logs several times faster; json is the fallback
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


class LogError(ValueError):
    """A file that is not a readable Elimination Game log; the message says why."""


MESSAGE_KIND = {PUBLIC_SUBROUND: "public", TIEBREAK_SUBROUND: "tiebreak", PLEA_SUBROUND: "plea"}
PHASE_OF_REASON = {"private_vote_reason": "vote", "private_revote_reason": "revote"}

TABLE_SCHEMAS: dict[str, dict[str, Any]] = {
    "games": {"game_id": pl.String, "file": pl.String, "seats": pl.Int64, "rounds": pl.Int64,
              "winner_seat": pl.String, "winner_model": pl.String, "rank_source": pl.String,
              "has_final_results": pl.Boolean, "matches_final_results": pl.Boolean},
    "seats": {"game_id": pl.String, "seat": pl.String, "player_id": pl.String, "model": pl.String},
    "messages": {"game_id": pl.String, "round": pl.Int64, "subround": pl.Int64, "kind": pl.String,
                 "seat": pl.String, "model": pl.String, "target_seat": pl.String, "target_model": pl.String,
                 "text": pl.String, "words": pl.Int64, "words_recorded": pl.Int64, "cut": pl.Boolean},
    "votes": {"game_id": pl.String, "round": pl.Int64, "phase": pl.String, "voter_seat": pl.String,
              "voter_model": pl.String, "target_seat": pl.String, "target_model": pl.String,
              "valid": pl.Boolean, "reason": pl.String},
    "eliminations": {"game_id": pl.String, "round": pl.Int64, "order": pl.Int64, "seat": pl.String,
                     "model": pl.String, "jury": pl.Boolean, "tie_break": pl.Boolean,
                     "cumu_check": pl.Boolean, "random_pick": pl.Boolean},
    "pairs": {"game_id": pl.String, "round": pl.Int64, "seat_a": pl.String, "seat_b": pl.String,
              "model_a": pl.String, "model_b": pl.String},
    "final_ranks": {"game_id": pl.String, "seat": pl.String, "player_id": pl.String, "model": pl.String,
                    "rank": pl.Int64, "points": pl.Float64, "recorded_rank": pl.Int64, "seats": pl.Int64},
}
TABLE_KEYS: dict[str, list[str]] = {
    "games": ["game_id"],
    "seats": ["game_id", "seat"],
    "messages": ["game_id", "round", "subround", "seat", "target_seat"],
    "votes": ["game_id", "round", "phase", "voter_seat"],
    "eliminations": ["game_id", "order"],
    "pairs": ["game_id", "round", "seat_a"],
    "final_ranks": ["game_id", "rank"],
}


def _seat_key(seat: str) -> int:
    return int(seat[1:]) if seat[1:].isdigit() else 10**6


@dataclass
class ParsedGame:
    """One log as rows of every table."""

    game_id: str
    file: str
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    ranks: dict[str, int] | None = None  # seat -> final rank (None: the game did not finish)
    problems: list[str] = field(default_factory=list)


class _Players:
    def __init__(self) -> None:
        self.seat_of: dict[str, str] = {}
        self.model_of_seat: dict[str, str] = {}
        self.pid_of_seat: dict[str, str] = {}

    def add(self, pid: Any) -> str | None:
        if not isinstance(pid, str):
            return None
        if pid in self.seat_of:
            return self.seat_of[pid]
        parsed = parse_player_id(pid)
        if parsed is None:
            raise LogError(f"player id {pid!r} is not of the form Player<seat>_Game<id>_<model>")
        seat = f"P{parsed[0]}"
        self.seat_of[pid] = seat
        self.model_of_seat[seat] = parsed[2]
        self.pid_of_seat[seat] = pid
        return seat


def _load_records(path: Path) -> list[dict[str, Any]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LogError(f"cannot read: {exc.strerror or exc}") from None
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = _loads(line)
        except (ValueError, TypeError) as exc:
            raise LogError(f"line {number} is not JSON ({str(exc)[:80]})") from None
        if not isinstance(record, dict):
            raise LogError(f"line {number} is not a JSON object")
        records.append(record)
    if not records:
        raise LogError("no records")
    if not any(r.get("type") in ("conversation", "vote", "elimination", "final_results") for r in records):
        raise LogError("no Elimination Game records (conversation, vote, elimination, final_results)")
    return records


def read_game(path: str | Path) -> ParsedGame:
    """Parse one log; raise LogError when it cannot be read as a game."""
    file = Path(path)
    records = _load_records(file)
    game_id = str(next((r["game_id"] for r in records if "game_id" in r), file.stem))
    game = ParsedGame(game_id=game_id, file=file.name)
    players = _Players()
    votes: list[dict[str, Any]] = []
    reasons: list[dict[str, Any]] = []
    eliminations: list[dict[str, Any]] = []
    final: dict[str, Any] | None = None
    last_round = 0
    jury_round: int | None = None

    for r in records:
        kind = r.get("type")
        rnd = r.get("round")
        if isinstance(rnd, int):
            last_round = max(last_round, rnd)
        if kind == "conversation":
            seat = players.add(r.get("player_id"))
            sub = int(r.get("subround", PUBLIC_SUBROUND))
            if sub == PLEA_SUBROUND:
                jury_round = rnd
            _message(game, players, r, seat, None, MESSAGE_KIND.get(sub, "public"), sub)
        elif kind == "private":
            seat = players.add(r.get("speaker_id"))
            target = players.add(r.get("target_id"))
            _message(game, players, r, seat, target, "private", int(r.get("subround", 2)))
        elif kind == "vote":
            players.add(r.get("voter_id"))
            players.add(r.get("target_id"))
            votes.append(r)
        elif kind in PHASE_OF_REASON:
            players.add(r.get("voter_id"))
            players.add(r.get("target_id"))
            reasons.append(r)
        elif kind == "private_jury_reason":
            voter = players.add(r.get("voter_id"))
            target = players.add(r.get("target_id"))
            jury_round = rnd if jury_round is None else jury_round
            game.rows["votes"].append(_vote_row(game_id, players, rnd, "jury", voter, target,
                                                r.get("reason"), (r.get("extra") or {}).get("valid", target is not None)))
        elif kind == "elimination":
            players.add(r.get("eliminated_player"))
            eliminations.append(r)
        elif kind == "preference_result":
            for pair in r.get("matched_pairs") or []:
                if len(pair) == 2:
                    a, b = str(pair[0]), str(pair[1])
                    game.rows["pairs"].append({"game_id": game_id, "round": rnd, "seat_a": a, "seat_b": b})
        elif kind == "final_results":
            final = r
            for pid in (r.get("final_ranks") or {}):
                players.add(pid)

    _match_votes(game, players, votes, reasons)
    for pair in game.rows["pairs"]:
        pair["model_a"] = players.model_of_seat.get(pair["seat_a"])
        pair["model_b"] = players.model_of_seat.get(pair["seat_b"])
    for seat, pid in players.pid_of_seat.items():
        game.rows["seats"].append({"game_id": game_id, "seat": seat, "player_id": pid,
                                   "model": players.model_of_seat[seat]})
    _ranks(game, players, eliminations, jury_round, final, last_round)
    return game


def _message(game: ParsedGame, players: _Players, r: dict[str, Any], seat: str | None, target: str | None,
             kind: str, subround: int) -> None:
    text = r.get("message") or ""
    recorded = len(text.split())
    extra = r.get("extra") or {}
    cut = bool(extra.get("cut"))
    game.rows["messages"].append({
        "game_id": game.game_id, "round": r.get("round"), "subround": subround, "kind": kind, "seat": seat,
        "model": players.model_of_seat.get(seat) if seat else None, "target_seat": target,
        "target_model": players.model_of_seat.get(target) if target else None, "text": text,
        "words": int(extra.get("words", recorded)) if cut else recorded, "words_recorded": recorded, "cut": cut,
    })


def _vote_row(game_id: str, players: _Players, rnd: Any, phase: str, voter: str | None, target: str | None,
              reason: Any, valid: bool) -> dict[str, Any]:
    return {"game_id": game_id, "round": rnd, "phase": phase, "voter_seat": voter,
            "voter_model": players.model_of_seat.get(voter) if voter else None, "target_seat": target,
            "target_model": players.model_of_seat.get(target) if target else None,
            "valid": bool(valid and target is not None), "reason": reason if isinstance(reason, str) else None}


def _match_votes(game: ParsedGame, players: _Players, votes: Sequence[dict[str, Any]],
                 reasons: Sequence[dict[str, Any]]) -> None:
    """Pair each vote with its reason: the k-th vote of a voter in a round with its k-th reason."""
    pending: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for reason in reasons:
        pending[(reason.get("round"), reason.get("voter_id"))].append(reason)
    used: Counter[tuple[Any, Any]] = Counter()
    for v in votes:
        key = (v.get("round"), v.get("voter_id"))
        options = pending.get(key, [])
        reason = options[used[key]] if used[key] < len(options) else None
        used[key] += 1
        extra = v.get("extra") or {}
        if "phase" in extra:
            phase = extra["phase"]
        elif reason is not None:
            phase = PHASE_OF_REASON[reason["type"]]
        else:
            phase = "revote" if used[key] > 1 else "vote"  # a second vote in a round is the re-vote
        target = players.seat_of.get(v.get("target_id")) if v.get("target_id") else None
        game.rows["votes"].append(_vote_row(
            game.game_id, players, v.get("round"), phase, players.seat_of.get(v.get("voter_id")), target,
            reason.get("reason") if reason else None, extra.get("valid", target is not None)))


def _ranks(game: ParsedGame, players: _Players, eliminations: Sequence[dict[str, Any]], jury_round: Any,
           final: dict[str, Any] | None, last_round: int) -> None:
    seats = sorted(players.pid_of_seat, key=_seat_key)
    n = len(seats)
    recorded: dict[str, int] = {}
    if final:
        for pid, rank in (final.get("final_ranks") or {}).items():
            seat = players.seat_of.get(pid)
            if seat is not None:
                recorded[seat] = int(rank)
    out: list[tuple[str, dict[str, Any], bool]] = []
    seen: set[str] = set()
    for e in eliminations:
        seat = players.seat_of.get(e.get("eliminated_player"))
        if seat is None or seat in seen:
            continue
        seen.add(seat)
        out.append((seat, e, jury_round is not None and e.get("round") == jury_round))
    regular = [o for o in out if not o[2]]
    derived: dict[str, int] = {seat: n - i for i, (seat, _, _) in enumerate(regular)}
    remaining = [s for s in seats if s not in derived]
    source = "derived"
    if len(remaining) == 2:
        jury_out = next((seat for seat, _, jury in out if jury), None) or _jury_loser(game, remaining)
        if jury_out is not None:
            derived[jury_out] = 2
            derived[next(s for s in remaining if s != jury_out)] = 1
    elif len(remaining) == 1:
        derived[remaining[0]] = 1
    if len(derived) != n or sorted(derived.values()) != list(range(1, n + 1)):
        if recorded and sorted(recorded.values()) == list(range(1, n + 1)):
            derived, source = dict(recorded), "final_results"
            game.problems.append("final ranks taken from final_results: the records do not decide them")
        else:
            game.problems.append("incomplete game: no final ranks")
            derived = {}
    game.ranks = derived or None
    for order, (seat, e, jury) in enumerate(out, 1):
        game.rows["eliminations"].append({
            "game_id": game.game_id, "round": e.get("round"), "order": order, "seat": seat,
            "model": players.model_of_seat.get(seat), "jury": jury, "tie_break": e.get("tie_break"),
            "cumu_check": e.get("cumu_check"), "random_pick": e.get("random_pick")})
    for seat in seats:
        rank = derived.get(seat)
        game.rows["final_ranks"].append({
            "game_id": game.game_id, "seat": seat, "player_id": players.pid_of_seat[seat],
            "model": players.model_of_seat[seat], "rank": rank,
            "points": partial_points(rank, n) if rank is not None and n > 1 else None,
            "recorded_rank": recorded.get(seat), "seats": n})
    winner = next((s for s, r in derived.items() if r == 1), None)
    matches = (derived == recorded) if (recorded and derived) else None
    if matches is False:
        game.problems.append("re-derived final ranks differ from final_results")
    game.rows["games"].append({
        "game_id": game.game_id, "file": game.file, "seats": n,
        "rounds": last_round,
        "winner_seat": winner, "winner_model": players.model_of_seat.get(winner) if winner else None,
        "rank_source": source if derived else None, "has_final_results": final is not None,
        "matches_final_results": matches})


def _jury_loser(game: ParsedGame, finalists: Sequence[str]) -> str | None:
    """The finalist the jury voted out; a split jury goes to the votes over the whole game."""
    jury = Counter(v["target_seat"] for v in game.rows["votes"]
                   if v["phase"] == "jury" and v["target_seat"] in finalists)
    if not jury:
        return None
    best = max(jury[f] for f in finalists)
    top = [f for f in finalists if jury[f] == best]
    if len(top) == 1:
        return top[0]
    against = Counter(v["target_seat"] for v in game.rows["votes"] if v["phase"] in ("vote", "revote"))
    best = max(against[f] for f in top)
    top = [f for f in top if against[f] == best]
    return top[0] if len(top) == 1 else None


@dataclass
class Corpus:
    tables: dict[str, pl.DataFrame]
    games: list[ParsedGame]
    skipped: list[dict[str, str]]  # {"file", "error"}
    files: int

    @property
    def finished(self) -> list[ParsedGame]:
        return [g for g in self.games if g.ranks]


def find_logs(paths: Iterable[str | Path]) -> list[Path]:
    """Every *.jsonl under the given directories (recursively) plus the given files, sorted."""
    found: set[Path] = set()
    for path in map(Path, paths):
        if path.is_dir():
            found.update(p for p in path.rglob("*.jsonl") if p.is_file())
        else:
            found.add(path)
    return sorted(found)


def frames(games: Sequence[ParsedGame]) -> dict[str, pl.DataFrame]:
    tables = {}
    for name, schema in TABLE_SCHEMAS.items():
        rows = [row for g in games for row in g.rows.get(name, ())]
        frame = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
        tables[name] = frame.sort(TABLE_KEYS[name], nulls_last=True, maintain_order=True)
    return tables


def read_corpus(paths: Iterable[str | Path]) -> Corpus:
    """Read every log; unreadable files are listed in `skipped` with the reason, never dropped silently."""
    files = find_logs(paths)
    games: list[ParsedGame] = []
    skipped: list[dict[str, str]] = []
    seen_ids: dict[str, str] = {}
    for file in files:
        if not file.exists():
            skipped.append({"file": str(file), "error": "no such file"})
            continue
        try:
            game = read_game(file)
        except LogError as exc:
            skipped.append({"file": str(file), "error": str(exc)})
            continue
        if game.game_id in seen_ids:
            skipped.append({"file": str(file), "error": f"duplicate of game {game.game_id} in {seen_ids[game.game_id]}"})
            continue
        seen_ids[game.game_id] = str(file)
        games.append(game)
    return Corpus(tables=frames(games), games=games, skipped=skipped, files=len(files))
