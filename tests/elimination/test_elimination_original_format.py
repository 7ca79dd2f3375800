"""Played games as the original plays and logs them: anonymous votes, stated word limits, the
all-tied case, the two variants, and every record checked against the original's logs."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from pipeline.elimination.config import EliminationParams
from pipeline.elimination.engine import GameSpec, run_game
from pipeline.elimination.reader import read_game
from pipeline.elimination.schedule import build_schedule
from tests.conftest import REPO, models_params
from tests.elimination.test_elimination_support import RECORDED, of_type, play, scripted, seat

ORIGINAL_LOGS = sorted((REPO / "tests" / "data" / "elimination-corpus").glob("*.jsonl")) + sorted(
    (REPO / "tests" / "data" / "elimination").glob("*.jsonl")
)
BOTS = [
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
    {"name": "recorder", "bot": "recorder"},
]


def original_shapes() -> dict[str, dict[str, Any]]:
    """Per record type of the original's logs: keys every record has, keys any has, value types."""
    every: dict[str, set[str]] = {}
    anywhere: dict[str, set[str]] = defaultdict(set)
    types: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in ORIGINAL_LOGS:
        for line in path.read_text().split("\n")[:-1]:  # not splitlines(): messages hold U+2028
            record = json.loads(line)
            kind = record["type"]
            every[kind] = set(record) if kind not in every else every[kind] & set(record)
            anywhere[kind] |= set(record)
            for key, value in record.items():
                types[(kind, key)].add(type(value).__name__)
    return {
        kind: {"every": every[kind], "any": anywhere[kind], "types": {k: types[(kind, k)] for k in anywhere[kind]}}
        for kind in every
    }


def mixed_game(tmp_path: Path, **options: Any) -> list[dict[str, Any]]:
    seats = ("heuristic-bot", "random-bot") * 4
    return play(seats, BOTS, "fmt01", tmp_path, **options)


@pytest.mark.parametrize("variant", ["standard", "memory"])
def test_every_record_has_the_original_keys_and_types(tmp_path: Path, variant: str) -> None:
    shapes = original_shapes()
    assert {"memory_note", "vote", "elimination", "final_results"} <= set(shapes)
    # an invalid vote (P8 names itself twice) so that the markers are written too
    replies = {"r1/vote/P8": "P8: me"}
    roster = [{"name": "script", "bot": "script", "bot_options": {"replies": replies}}]
    records = play(("script",) * 8, roster, "fmt02", tmp_path, variant=variant)
    seen = set()
    for record in records:
        kind = record["type"]
        assert kind in shapes, f"the original writes no {kind!r} record"
        keys = set(record) - {"extra"}  # our additions live in `extra` only
        assert shapes[kind]["every"] <= keys <= shapes[kind]["any"], (kind, keys ^ shapes[kind]["every"])
        for key in keys:
            assert type(record[key]).__name__ in shapes[kind]["types"][key], (kind, key, record[key])
        seen.add(kind)
    expected = {
        "conversation",
        "preference_proposal",
        "preference_outcome",
        "preference_result",
        "private",
        "private_vote_reason",
        "vote",
        "elimination",
        "private_jury_reason",
        "final_results",
    }
    assert expected | ({"memory_note"} if variant == "memory" else set()) <= seen
    assert isinstance(records[0]["game_id"], int) and records[0]["game_id"] < 2**53
    vote = next(v for v in of_type(records, "vote", 1) if seat(v["voter_id"]) == "P8")
    reason = next(r for r in of_type(records, "private_vote_reason", 1) if seat(r["voter_id"]) == "P8")
    assert (vote["target_id"], reason["target_id"]) == ("(invalid/skipped)", "(invalid_or_skipped)")
    # as in the original, the reason comes right before its vote
    assert records.index(reason) == records.index(vote) - 1


def test_the_played_log_is_named_and_read_like_the_original(tmp_path: Path) -> None:
    models = models_params(BOTS)
    spec = GameSpec("0123456789abcdef", ("heuristic-bot", "random-bot") * 4)
    output = run_game(spec, models, tmp_path / "game")
    assert re.fullmatch(rf"game_{spec.log_game_id}_\d{{8}}_\d{{6}}\.jsonl", output.log_path.name)
    assert spec.log_game_id == int("0123456789abc", 16)
    game = read_game(output.log_path)
    assert game.file == f"game_{spec.log_game_id}.jsonl"  # tables never hold the start time
    assert game.rows["games"][0]["matches_final_results"] is True
    # rerunning the same game leaves one log
    again = run_game(spec, models, tmp_path / "game")
    assert sorted(p.name for p in (tmp_path / "game").glob("*.jsonl")) == [again.log_path.name]


def vote_lines(game_public: list[str]) -> list[str]:
    return [line for line in game_public if line.startswith("Votes:")]


@pytest.mark.parametrize("mode", ["anonymous", "public"])
def test_votes_are_anonymous_unless_public_is_asked_for(tmp_path: Path, mode: str) -> None:
    RECORDED.clear()
    seats = ("recorder",) * 8
    play(seats, BOTS, f"anon-{mode}", tmp_path, votes=mode)
    later = [request for _, request in RECORDED if request.state["round"] >= 2]
    assert later
    announced = [v for request in later for v in request.state["votes"]]
    texts = [m["content"] for request in later for m in request.messages]
    votes_shown = [line for text in texts for line in text.splitlines() if "Votes:" in line]
    assert votes_shown
    if mode == "anonymous":
        assert all("voter" not in v for v in announced)  # bots get the tally, like the prompts
        assert not any("->" in line for line in votes_shown)
        assert all(re.fullmatch(r".*Votes: (P\d+ \d+(, )?)+( ?\d+ invalid)?\.", line) for line in votes_shown)
        assert all("who voted for whom stays secret" in request.messages[0]["content"] for request in later)
    else:
        assert all("voter" in v for v in announced)
        assert all("->" in line for line in votes_shown)


def test_when_every_seat_is_tied_the_tied_seats_still_speak() -> None:
    # four seats, each gets one vote: nobody is left to re-vote
    replies = {"r1/vote/P1": "P2: x", "r1/vote/P2": "P3: x", "r1/vote/P3": "P4: x", "r1/vote/P4": "P1: x"}
    records = scripted(replies, n=4, game_id="alltied")
    statements = [r for r in of_type(records, "conversation", 1) if r["subround"] == 600]
    assert sorted(seat(r["player_id"]) for r in statements) == ["P1", "P2", "P3", "P4"]
    assert of_type(records, "private_revote_reason", 1) == []
    assert all(r["message"] for r in statements)  # the heuristic bot spoke to the all-tied prompt
    out = of_type(records, "elimination", 1)[0]
    assert out["tie_break"] is True and out["extra"]["rule"] in ("cumulative", "random")


def test_public_only_variant_has_no_pairing_or_private_talk(tmp_path: Path) -> None:
    records = mixed_game(tmp_path, variant="public_only")
    kinds = {r["type"] for r in records}
    assert not kinds & {"private", "preference_proposal", "preference_outcome", "preference_result"}
    assert of_type(records, "final_results")
    path = tmp_path / "game_1_20250101_000000.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    game = read_game(path)
    assert game.rows["games"][0]["variant"] == "public_only" and game.ranks is not None


def test_memory_variant_notes_are_written_before_the_vote_and_shown_only_to_their_writer(tmp_path: Path) -> None:
    RECORDED.clear()
    seats = ("recorder",) * 4 + ("heuristic-bot",) * 4
    records = play(seats, BOTS, "mem01", tmp_path, variant="memory", memory_players=("recorder",))
    notes = of_type(records, "memory_note")
    assert notes and {seat(n["player_id"]) for n in notes} <= {"P1", "P2", "P3", "P4"}
    first = notes[0]
    last_of_round = [n for n in notes if n["round"] == first["round"]][-1]
    before = records[records.index(first) - 1]
    assert before["type"] == "private" and records[records.index(last_of_round) + 1]["type"] == "private_vote_reason"
    writer = seat(first["player_id"])
    later = [(s, r) for s, r in RECORDED if r.state["round"] > first["round"]]
    mine = [r for s, r in later if s == writer]
    others = [r for s, r in later if s != writer]
    assert any(first["note"] in r.messages[-1]["content"] for r in mine)
    assert not any(first["note"] in m["content"] for r in others for m in r.messages)
    path = tmp_path / "game_2_20250101_000000.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    game = read_game(path)
    assert game.rows["games"][0]["variant"] == "memory" and len(game.rows["memory_notes"]) == len(notes)


def test_the_variants_and_vote_mode_are_part_of_the_game_id() -> None:
    models = models_params(BOTS)
    base = EliminationParams(schedule={"lineups": [["heuristic-bot", "random-bot"] * 4], "max_seats_per_player": 4})
    ids = {
        build_schedule(base.model_copy(update=change), models)[0].game_id
        for change in ({}, {"votes": "public"}, {"variant": "public_only"}, {"variant": "memory"})
    }
    assert len(ids) == 4
