"""Any log in the original format (theirs or ours) -> tidy tables.

Final ranks, two sources, both always computed and compared:

- "recorded" (the default, as the original's leaderboard): `final_results.final_ranks` and its
  `partial_points`, whether keyed by player id or by seat label (`"P5"`, some 2025-07 logs; the
  `*_full` twins keyed by player id are preferred when present);
- "derived": re-derived from the records: the regular eliminations in file order give ranks
  n, n-1, ...; the jury round's elimination record (or, when a log has none, the jury votes,
  then the votes over the whole game) decides 2 and 1.

A log without usable `final_results` is not rated by default, as the original's leaderboard
(which sums recorded partial points) did not count it; with "derived", a game its records cannot
decide (a tied jury without its elimination record) falls back to the recorded ranks.
`rank_source` says which one a game used.

The original's quirks read faithfully: invalid votes name a marker instead of a player
(`"(invalid/skipped)"`, `"(invalid_or_skipped)"`; kept in `votes.target_marker`), `memory_note`
records (the memory variant; table `memory_notes`), logs with public statements only (the
public-only variant; `games.variant`). Record kinds this reader does not know are counted per
game in `unknown_records`, never a reason to drop a log.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.elimination.records import (
    PLEA_SUBROUND,
    PUBLIC_SUBROUND,
    TIEBREAK_SUBROUND,
    log_name,
    parse_player_id,
    partial_points,
)

_loads: Callable[[bytes], Any]
try:  # orjson parses the original's thousands of logs several times faster; json is the fallback
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


class LogError(ValueError):
    """A file that is not a readable Elimination Game log; the message says why."""


RANK_SOURCES = ("recorded", "derived")
MESSAGE_KIND = {PUBLIC_SUBROUND: "public", TIEBREAK_SUBROUND: "tiebreak", PLEA_SUBROUND: "plea"}
PHASE_OF_REASON = {"private_vote_reason": "vote", "private_revote_reason": "revote"}

TABLE_SCHEMAS: dict[str, dict[str, Any]] = {
    "games": {
        "game_id": pl.String,
        "file": pl.String,
        "seats": pl.Int64,
        "rounds": pl.Int64,
        "variant": pl.String,
        "winner_seat": pl.String,
        "winner_model": pl.String,
        "rank_source": pl.String,
        "has_final_results": pl.Boolean,
        "matches_final_results": pl.Boolean,
    },
    "seats": {"game_id": pl.String, "seat": pl.String, "player_id": pl.String, "model": pl.String},
    "messages": {
        "game_id": pl.String,
        "round": pl.Int64,
        "subround": pl.Int64,
        "kind": pl.String,
        "seat": pl.String,
        "model": pl.String,
        "target_seat": pl.String,
        "target_model": pl.String,
        "text": pl.String,
        "words": pl.Int64,
        "words_recorded": pl.Int64,
        "cut": pl.Boolean,
        "empty_at_token_limit": pl.Boolean,
    },
    "votes": {
        "game_id": pl.String,
        "round": pl.Int64,
        "phase": pl.String,
        "voter_seat": pl.String,
        "voter_model": pl.String,
        "target_seat": pl.String,
        "target_model": pl.String,
        "valid": pl.Boolean,
        "target_marker": pl.String,
        "token_limit_replies": pl.Int64,
        "reason": pl.String,
    },
    "eliminations": {
        "game_id": pl.String,
        "round": pl.Int64,
        "order": pl.Int64,
        "seat": pl.String,
        "model": pl.String,
        "jury": pl.Boolean,
        "tie_break": pl.Boolean,
        "cumu_check": pl.Boolean,
        "random_pick": pl.Boolean,
    },
    "pairs": {
        "game_id": pl.String,
        "round": pl.Int64,
        "seat_a": pl.String,
        "seat_b": pl.String,
        "model_a": pl.String,
        "model_b": pl.String,
    },
    "final_ranks": {
        "game_id": pl.String,
        "seat": pl.String,
        "player_id": pl.String,
        "model": pl.String,
        "rank": pl.Int64,
        "points": pl.Float64,
        "recorded_rank": pl.Int64,
        "recorded_points": pl.Float64,
        "derived_rank": pl.Int64,
        "seats": pl.Int64,
    },
    "memory_notes": {"game_id": pl.String, "round": pl.Int64, "seat": pl.String, "model": pl.String, "note": pl.String},
}
TABLE_KEYS: dict[str, list[str]] = {
    "games": ["game_id"],
    "seats": ["game_id", "seat"],
    "messages": ["game_id", "round", "subround", "seat", "target_seat"],
    "votes": ["game_id", "round", "phase", "voter_seat"],
    "eliminations": ["game_id", "order"],
    "pairs": ["game_id", "round", "seat_a"],
    "final_ranks": ["game_id", "rank", "seat"],
    "memory_notes": ["game_id", "round", "seat"],
}


SEAT_LABEL = re.compile(r"^P\d+$")


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
    unknown: Counter[str] = field(default_factory=Counter)  # record kinds this reader does not know


class _Players:
    def __init__(self) -> None:
        self.seat_of: dict[str, str] = {}
        self.model_of_seat: dict[str, str] = {}
        self.pid_of_seat: dict[str, str] = {}

    def add(self, pid: Any) -> str | None:
        """The seat of a player id, registering it; raise LogError for a malformed id."""
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

    def target(self, value: Any) -> tuple[str | None, str | None]:
        """(seat, marker) of a vote's target: a player id, a seat label, or the original's
        invalid-vote marker such as "(invalid/skipped)" (seat None, marker kept)."""
        if not isinstance(value, str) or not value:
            return None, None
        if value in self.seat_of:
            return self.seat_of[value], None
        if parse_player_id(value) is not None:
            return self.add(value), None
        if SEAT_LABEL.match(value):
            return value, None
        return None, value

    def seat_of_key(self, key: str) -> str | None:
        """final_results keys: player ids, or seat labels ("P5") in some of the original's logs."""
        if key in self.seat_of:
            return self.seat_of[key]
        if SEAT_LABEL.match(key):
            return key
        if parse_player_id(key) is not None:
            return self.add(key)
        return None


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


KNOWN_RECORDS = frozenset(
    {
        "conversation",
        "private",
        "vote",
        "private_vote_reason",
        "private_revote_reason",
        "private_jury_reason",
        "elimination",
        "preference_proposal",
        "preference_outcome",
        "preference_result",
        "final_results",
        "memory_note",
    }
)


def read_game(path: str | Path, ranks: str = "recorded") -> ParsedGame:
    """Parse one log; raise LogError when it cannot be read as a game. `ranks`: "recorded"
    (final_results, as the original's leaderboard) or "derived" (re-derived from the records)."""
    if ranks not in RANK_SOURCES:
        raise ValueError(f"ranks must be one of {RANK_SOURCES}, got {ranks!r}")
    file = Path(path)
    records = _load_records(file)
    game_id = str(next((r["game_id"] for r in records if "game_id" in r), file.stem))
    game = ParsedGame(game_id=game_id, file=log_name(file.name))
    players = _Players()
    votes: list[dict[str, Any]] = []
    reasons: list[dict[str, Any]] = []
    eliminations: list[dict[str, Any]] = []
    final: dict[str, Any] | None = None
    last_round = 0
    jury_round: int | None = None
    has_private = False

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
            has_private = True
            seat = players.add(r.get("speaker_id"))
            target, _ = players.target(r.get("target_id"))
            _message(game, players, r, seat, target, "private", int(r.get("subround", 2)))
        elif kind == "vote":
            players.add(r.get("voter_id"))
            players.target(r.get("target_id"))
            votes.append(r)
        elif kind in PHASE_OF_REASON:
            players.add(r.get("voter_id"))
            players.target(r.get("target_id"))
            reasons.append(r)
        elif kind == "private_jury_reason":
            voter = players.add(r.get("voter_id"))
            target, marker = players.target(r.get("target_id"))
            jury_round = rnd if jury_round is None else jury_round
            valid = (r.get("extra") or {}).get("valid", target is not None)
            game.rows["votes"].append(
                _vote_row(
                    game_id, players, rnd, "jury", voter, target, marker, r.get("reason"), valid, r.get("extra") or {}
                )
            )
        elif kind == "elimination":
            players.target(r.get("eliminated_player"))
            eliminations.append(r)
        elif kind == "preference_result":
            for pair in r.get("matched_pairs") or []:
                if isinstance(pair, (list, tuple)) and len(pair) == 2:
                    a, b = str(pair[0]), str(pair[1])
                    game.rows["pairs"].append({"game_id": game_id, "round": rnd, "seat_a": a, "seat_b": b})
        elif kind == "memory_note":
            seat = players.add(r.get("player_id"))
            game.rows["memory_notes"].append(
                {
                    "game_id": game_id,
                    "round": rnd,
                    "seat": seat,
                    "note": r.get("note") if isinstance(r.get("note"), str) else "",
                }
            )
        elif kind == "final_results":
            final = r
        elif kind not in KNOWN_RECORDS:
            game.unknown[str(kind)] += 1

    _match_votes(game, players, votes, reasons)
    for pair in game.rows["pairs"]:
        pair["model_a"] = players.model_of_seat.get(pair["seat_a"])
        pair["model_b"] = players.model_of_seat.get(pair["seat_b"])
    for note in game.rows["memory_notes"]:
        note["model"] = players.model_of_seat.get(note["seat"])
    recorded, recorded_points = _recorded(final, players)
    for seat, pid in players.pid_of_seat.items():
        game.rows["seats"].append(
            {"game_id": game_id, "seat": seat, "player_id": pid, "model": players.model_of_seat[seat]}
        )
    if game.rows["memory_notes"]:
        variant = "memory"
    elif not has_private and any(m["kind"] == "public" for m in game.rows["messages"]):
        variant = "public_only"
    else:
        variant = "standard"
    _ranks(game, players, eliminations, jury_round, final, recorded, recorded_points, last_round, ranks, variant)
    return game


def _recorded(final: dict[str, Any] | None, players: _Players) -> tuple[dict[str, int], dict[str, float]]:
    """Seat -> recorded rank and seat -> recorded partial points (the player-id-keyed `*_full`
    fields win over the plain ones, which some logs key by seat label)."""
    if not final:
        return {}, {}
    out: list[dict[str, Any]] = []
    for names in (("final_ranks_full", "final_ranks"), ("partial_points_full", "partial_points")):
        mapped: dict[str, Any] = {}
        for name in reversed(names):  # the plain field first, then the *_full one overrides it
            table = final.get(name)
            if not isinstance(table, dict):
                continue
            for key, value in table.items():
                seat = players.seat_of_key(str(key))
                if seat is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
                    mapped[seat] = value
        out.append(mapped)
    ranks = {seat: int(v) for seat, v in out[0].items()}
    points = {seat: float(v) for seat, v in out[1].items()}
    return ranks, points


def _message(
    game: ParsedGame,
    players: _Players,
    r: dict[str, Any],
    seat: str | None,
    target: str | None,
    kind: str,
    subround: int,
) -> None:
    text = r.get("message") or ""
    recorded = len(text.split())
    extra = r.get("extra") or {}
    cut = bool(extra.get("cut"))
    game.rows["messages"].append(
        {
            "game_id": game.game_id,
            "round": r.get("round"),
            "subround": subround,
            "kind": kind,
            "seat": seat,
            "model": players.model_of_seat.get(seat) if seat else None,
            "target_seat": target,
            "target_model": players.model_of_seat.get(target) if target else None,
            "text": text,
            "words": int(extra.get("words", recorded)) if cut else recorded,
            "words_recorded": recorded,
            "cut": cut,
            "empty_at_token_limit": bool(extra.get("empty_at_token_limit")),
        }
    )


TOKEN_LIMIT_PROBLEM = "the reply was cut by the token limit before any visible text"


def _token_limit_replies(extra: dict[str, Any]) -> int:
    """Tries of a vote (our logs' `extra.invalid_attempts`) that the token limit cut before any text."""
    attempts = extra.get("invalid_attempts") or []
    return sum(1 for a in attempts if isinstance(a, dict) and a.get("problem") == TOKEN_LIMIT_PROBLEM)


def _vote_row(
    game_id: str,
    players: _Players,
    rnd: Any,
    phase: str,
    voter: str | None,
    target: str | None,
    marker: str | None,
    reason: Any,
    valid: bool,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "game_id": game_id,
        "round": rnd,
        "phase": phase,
        "voter_seat": voter,
        "voter_model": players.model_of_seat.get(voter) if voter else None,
        "target_seat": target,
        "target_model": players.model_of_seat.get(target) if target else None,
        "valid": bool(valid and target is not None),
        "target_marker": marker,
        "token_limit_replies": _token_limit_replies(extra or {}),
        "reason": reason if isinstance(reason, str) else None,
    }


def _match_votes(
    game: ParsedGame, players: _Players, votes: Sequence[dict[str, Any]], reasons: Sequence[dict[str, Any]]
) -> None:
    """Pair each vote with its reason: the k-th vote of a voter in a round with its k-th reason."""
    pending: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for given in reasons:
        pending[(given.get("round"), given.get("voter_id"))].append(given)
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
        target, marker = players.target(v.get("target_id"))
        voter_id = v.get("voter_id")
        voter = players.seat_of.get(voter_id) if isinstance(voter_id, str) else None
        game.rows["votes"].append(
            _vote_row(
                game.game_id,
                players,
                v.get("round"),
                phase,
                voter,
                target,
                marker,
                reason.get("reason") if reason else None,
                extra.get("valid", target is not None),
                extra,
            )
        )


def _is_permutation(ranks: dict[str, int], seats: Sequence[str]) -> bool:
    return set(ranks) == set(seats) and sorted(ranks.values()) == list(range(1, len(seats) + 1))


def _ranks(
    game: ParsedGame,
    players: _Players,
    eliminations: Sequence[dict[str, Any]],
    jury_round: Any,
    final: dict[str, Any] | None,
    recorded: dict[str, int],
    recorded_points: dict[str, float],
    last_round: int,
    source: str,
    variant: str,
) -> None:
    seats = sorted(players.pid_of_seat, key=_seat_key)
    n = len(seats)
    out: list[tuple[str, dict[str, Any], bool]] = []
    seen: set[str] = set()
    for e in eliminations:
        seat, _ = players.target(e.get("eliminated_player"))
        if seat is None or seat in seen:
            continue
        seen.add(seat)
        out.append((seat, e, jury_round is not None and e.get("round") == jury_round))
    regular = [o for o in out if not o[2]]
    derived: dict[str, int] = {seat: n - i for i, (seat, _, _) in enumerate(regular)}
    remaining = [s for s in seats if s not in derived]
    if len(remaining) == 2:
        jury_out = next((seat for seat, _, jury in out if jury), None) or _jury_loser(game, remaining)
        if jury_out is not None:
            derived[jury_out] = 2
            derived[next(s for s in remaining if s != jury_out)] = 1
    elif len(remaining) == 1:
        derived[remaining[0]] = 1
    if not _is_permutation(derived, seats):
        derived = {}
    if not _is_permutation(recorded, seats):
        if recorded:
            game.problems.append("final_results does not rank every seat 1..n")
        recorded = {}
    # recorded (the original's leaderboard): a log without usable final_results is not rated, as
    # there; derived: a game its records cannot decide (a tied jury without its record) falls back
    # to the recorded ranks
    options = {"recorded": recorded, "derived": derived}
    if options[source]:
        used: str | None = source
    elif source == "derived" and recorded:
        used = "recorded"
        game.problems.append("final ranks recorded: the records cannot decide this game")
    else:
        used = None
        game.problems.append(
            "incomplete game: no final ranks"
            if not derived
            else "not rated: no usable final_results (the original rates only those; "
            "--ranks derived rates it from its records)"
        )
    chosen = options[used] if used else {}
    game.ranks = chosen or None
    for order, (seat, e, jury) in enumerate(out, 1):
        game.rows["eliminations"].append(
            {
                "game_id": game.game_id,
                "round": e.get("round"),
                "order": order,
                "seat": seat,
                "model": players.model_of_seat.get(seat),
                "jury": jury,
                "tie_break": e.get("tie_break"),
                "cumu_check": e.get("cumu_check"),
                "random_pick": e.get("random_pick"),
            }
        )
    for seat in seats:
        rank = chosen.get(seat)
        if rank is None or n < 2:
            points = None
        elif used == "recorded" and seat in recorded_points:
            points = recorded_points[seat]  # the original's own number, as its leaderboard sums it
        else:
            points = partial_points(rank, n)
        game.rows["final_ranks"].append(
            {
                "game_id": game.game_id,
                "seat": seat,
                "player_id": players.pid_of_seat[seat],
                "model": players.model_of_seat[seat],
                "rank": rank,
                "points": points,
                "recorded_rank": recorded.get(seat),
                "recorded_points": recorded_points.get(seat),
                "derived_rank": derived.get(seat),
                "seats": n,
            }
        )
    winner = next((s for s, r in chosen.items() if r == 1), None)
    matches = (derived == recorded) if (recorded and derived) else None
    if matches is False:
        game.problems.append("re-derived final ranks differ from final_results")
    game.rows["games"].append(
        {
            "game_id": game.game_id,
            "file": game.file,
            "seats": n,
            "rounds": last_round,
            "variant": variant,
            "winner_seat": winner,
            "winner_model": players.model_of_seat.get(winner) if winner else None,
            "rank_source": {"recorded": "final_results", "derived": "derived"}.get(used or ""),
            "has_final_results": final is not None,
            "matches_final_results": matches,
        }
    )


def _jury_loser(game: ParsedGame, finalists: Sequence[str]) -> str | None:
    """The finalist the jury voted out; a split jury goes to the votes over the whole game."""
    jury = Counter(
        v["target_seat"] for v in game.rows["votes"] if v["phase"] == "jury" and v["target_seat"] in finalists
    )
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


def read_corpus(paths: Iterable[str | Path], ranks: str = "recorded") -> Corpus:
    """Read every log; unreadable files are listed in `skipped` with the reason, never dropped silently.
    `ranks`: which final ranks the tables' `rank` and `points` hold (see `read_game`)."""
    files = find_logs(paths)
    games: list[ParsedGame] = []
    skipped: list[dict[str, str]] = []
    seen_ids: dict[str, str] = {}
    for file in files:
        if not file.exists():
            skipped.append({"file": str(file), "error": "no such file"})
            continue
        try:
            game = read_game(file, ranks)
        except LogError as exc:
            skipped.append({"file": str(file), "error": str(exc)})
            continue
        if game.game_id in seen_ids:
            skipped.append(
                {"file": str(file), "error": f"duplicate of game {game.game_id} in {seen_ids[game.game_id]}"}
            )
            continue
        seen_ids[game.game_id] = str(file)
        games.append(game)
    return Corpus(tables=frames(games), games=games, skipped=skipped, files=len(files))
