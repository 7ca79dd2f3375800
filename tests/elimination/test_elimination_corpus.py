"""Importing the original benchmark's public logs as its leaderboard did: every quirk read, the
recorded ranks and points summed, the multi-pass TrueSkill with every part a parameter."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.elimination.config import RatingSettings
from pipeline.elimination.importer import run_import
from pipeline.elimination.reader import read_corpus
from tests.conftest import REPO

# eight real logs of the original's public corpus (copied from shared/samples/elimination-corpus):
# invalid-vote markers, seat-keyed final ranks, memory notes, a cumulative tie-break, a game
# whose recorded final ranks differ from what its records say, and a message holding U+2028
UNICODE_SEPARATOR = "1754806601657650"
CORPUS = REPO / "tests" / "data" / "elimination-corpus"
CORPUS_FILES = sorted(CORPUS.glob("*.jsonl"))
SEAT_KEYED = {"1752482503304408", "1752482503304677"}


def records(path: Path) -> list[dict]:
    # split("\n"), not splitlines(): some messages hold U+2028, which splitlines() would break on
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def recorded_points() -> dict[str, tuple[int, float]]:
    """Per model: (games, sum of partial points) straight from the logs' final_results."""
    games: dict[str, int] = defaultdict(int)
    points: dict[str, float] = defaultdict(float)
    for path in CORPUS_FILES:
        final = next(r for r in records(path) if r["type"] == "final_results")
        for pid, value in final["partial_points_full"].items():
            model = pid.split("_", 2)[2]
            games[model] += 1
            points[model] += value
    return {m: (games[m], points[m]) for m in games}


def import_corpus(tmp_path: Path, paths: list[Path] | None = None, **settings) -> tuple[pl.DataFrame, dict]:
    rating = RatingSettings(bootstrap_resamples=0, passes=4, **settings)
    result = run_import(paths or [CORPUS], tmp_path / "out", rating, plots=False)
    return result.leaderboard, json.loads((tmp_path / "out" / "import_report.json").read_text())


def test_every_sample_log_is_read_and_every_quirk_kept(tmp_path: Path) -> None:
    assert len(CORPUS_FILES) == 8
    corpus = read_corpus([CORPUS])
    assert corpus.skipped == [] and len(corpus.finished) == 8
    votes = corpus.tables["votes"]
    all_records = [r for path in CORPUS_FILES for r in records(path)]
    markers = [
        r["target_id"]
        for r in all_records
        if r["type"] in ("vote", "private_jury_reason") and not r["target_id"].startswith("Player")
    ]
    assert markers, "the samples hold invalid votes"
    invalid = votes.filter(pl.col("target_marker").is_not_null())
    assert sorted(invalid["target_marker"].to_list()) == sorted(markers)
    assert not invalid["valid"].any() and invalid["target_seat"].null_count() == invalid.height
    notes = corpus.tables["memory_notes"]
    assert notes.height == sum(r["type"] == "memory_note" for r in all_records) > 0
    assert notes["model"].str.ends_with("-memory").all()
    variants = dict(corpus.tables["games"].select("game_id", "variant").iter_rows())
    assert variants["1740655552619356"] == "memory" and variants["1739872030686895"] == "standard"


def test_a_message_with_a_unicode_line_separator_stays_one_message() -> None:
    path = next(p for p in CORPUS_FILES if UNICODE_SEPARATOR in p.name)
    assert "\u2028" in path.read_text()
    messages = read_corpus([path]).tables["messages"]
    expected = [r["message"] for r in records(path) if r["type"] in ("conversation", "private")]
    assert sorted(messages["text"].to_list()) == sorted(expected)
    assert any("\u2028" in text for text in messages["text"].to_list())


def test_seat_keyed_final_ranks_go_to_the_right_models() -> None:
    corpus = read_corpus([CORPUS])
    ranks = corpus.tables["final_ranks"].filter(pl.col("game_id").is_in(SEAT_KEYED))
    assert ranks.height == 16 and ranks["rank"].null_count() == 0
    for path in CORPUS_FILES:
        final = next(r for r in records(path) if r["type"] == "final_results")
        if str(final["game_id"]) not in SEAT_KEYED:
            continue
        assert all(key.startswith("P") and "_" not in key for key in final["final_ranks"])
        mine = ranks.filter(pl.col("game_id") == str(final["game_id"]))
        by_pid = dict(zip(mine["player_id"], mine["rank"], strict=True))
        assert by_pid == final["final_ranks_full"]
        by_seat = dict(zip(mine["seat"], mine["points"], strict=True))
        assert by_seat == pytest.approx(final["partial_points"])


def test_the_leaderboard_sums_the_recorded_partial_points_like_the_original(tmp_path: Path) -> None:
    board, report = import_corpus(tmp_path)
    expected = recorded_points()
    got = {r["model"]: (r["games"], r["points_sum"]) for r in board.iter_rows(named=True)}
    assert set(got) == set(expected)
    for model, (games, points) in expected.items():
        assert got[model][0] == games and got[model][1] == pytest.approx(points, abs=1e-12)
    assert report["ranks"] == "recorded" and report["skipped"] == [] and report["rank_source_fallback"] == []
    # the recorded ranks and the records disagree on one game: listed, not applied
    differing = {d["game_id"]: d for d in report["rank_differences"]}
    assert "1739956388957083" in differing
    seats = differing["1739956388957083"]["seats"]
    assert {s: (v["recorded"], v["derived"]) for s, v in seats.items()} == {"P1": (2, 1), "P2": (1, 2)}
    assert report["invalid_vote_markers"]["(invalid/skipped)"] > 0 and report["memory_notes"] > 0


def test_re_deriving_the_ranks_is_an_option_that_changes_exactly_the_listed_games(tmp_path: Path) -> None:
    recorded = read_corpus([CORPUS])
    derived = read_corpus([CORPUS], ranks="derived")
    _, report = import_corpus(tmp_path, ranks="derived")
    listed = {d["game_id"] for d in report["rank_differences"]}
    changed = (
        recorded.tables["final_ranks"]
        .join(derived.tables["final_ranks"], on=["game_id", "seat"])
        .filter(pl.col("rank") != pl.col("rank_right"))["game_id"]
        .unique()
        .to_list()
    )
    assert listed == set(changed) and listed
    assert report["ranks"] == "derived"
    assert derived.tables["games"].filter(pl.col("game_id").is_in(listed))["rank_source"].to_list() == [
        "derived"
    ] * len(listed)


def test_a_corrupt_log_is_skipped_with_its_reason_and_unknown_records_are_counted(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = CORPUS_FILES[0].read_text().split("\n")[:-1]
    (logs / "game_cut.jsonl").write_text("\n".join(lines[:40]) + "\n" + lines[40][:30] + "\n")
    extra = json.dumps({"game_id": 7, "type": "spectator_comment", "round": 1, "text": "hi"})
    (logs / "game_extra.jsonl").write_text("\n".join(lines) + "\n" + extra + "\n")
    _, report = import_corpus(tmp_path, [logs])
    assert [Path(s["file"]).name for s in report["skipped"]] == ["game_cut.jsonl"]
    assert "line 41 is not JSON" in report["skipped"][0]["error"]
    assert report["unknown_record_kinds"] == {"spectator_comment": 1} and report["games_finished"] == 1


def test_a_public_only_log_is_its_own_variant(tmp_path: Path) -> None:
    private_kinds = {"private", "preference_proposal", "preference_outcome", "preference_result"}
    kept = [json.dumps(r) for r in records(CORPUS_FILES[0]) if r["type"] not in private_kinds]
    (tmp_path / "game_public.jsonl").write_text("\n".join(kept) + "\n")
    corpus = read_corpus([tmp_path / "game_public.jsonl"])
    assert corpus.tables["games"]["variant"].to_list() == ["public_only"]
    assert corpus.tables["pairs"].is_empty() and len(corpus.finished) == 1


def test_the_prior_mu_shifts_every_model_equally_so_mu_rel_does_not_move(tmp_path: Path) -> None:
    four, _ = import_corpus(tmp_path / "a", mu=4.0)
    five, _ = import_corpus(tmp_path / "b", mu=5.0)
    joined = four.join(five, on="model")
    assert (joined["mu_right"] - joined["mu"]).to_numpy() == pytest.approx(1.0, abs=1e-6)
    assert joined["mu_rel"].to_numpy() == pytest.approx(joined["mu_rel_right"].to_numpy(), abs=1e-6)
    assert four["mu_rel"].mean() == pytest.approx(0.0, abs=1e-9)
    assert joined["sigma"].to_numpy() == pytest.approx(joined["sigma_right"].to_numpy(), abs=1e-9)


def test_every_part_of_the_rating_is_a_parameter(tmp_path: Path) -> None:
    base, _ = import_corpus(tmp_path / "a")
    median, _ = import_corpus(tmp_path / "b", aggregate="median")
    reseeded, _ = import_corpus(tmp_path / "c", seed=3)
    wider, _ = import_corpus(tmp_path / "d", sigma=4.0)

    def mus(board: pl.DataFrame) -> dict[str, float]:
        return dict(zip(board["model"], board["mu"], strict=True))

    for other in (median, reseeded, wider):
        assert mus(other) != mus(base) and set(mus(other)) == set(mus(base))
    assert (wider["sigma"] < 4.0).all()
    again, _ = import_corpus(tmp_path / "e")
    assert again.equals(base)  # same settings, same numbers


def test_the_import_command_takes_the_rating_options(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert (
        main(
            [
                "elimination",
                "import",
                str(CORPUS),
                "--out",
                str(out),
                "--passes",
                "2",
                "--no-plots",
                "--ranks",
                "derived",
                "--aggregate",
                "median",
                "--mu",
                "3.1",
                "--show",
                "3",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out.splitlines()
    rows, note = printed[:-1], printed[-1]
    assert len(rows) == 3 and all("mu_rel=" in line and "unsettled" in line for line in rows)
    assert note.startswith("rankings not settled")  # 2 passes, no bootstrap: no interval is earned
    assert json.loads((out / "import_report.json").read_text())["ranks"] == "derived"
    with pytest.raises(SystemExit):
        main(["elimination", "import", str(CORPUS), "--out", str(out), "--aggregate", "mode"])


def test_a_log_without_final_results_is_rated_only_when_ranks_are_derived(tmp_path: Path) -> None:
    kept = [json.dumps(r) for r in records(CORPUS_FILES[0]) if r["type"] != "final_results"]
    path = tmp_path / "game_nofinal.jsonl"
    path.write_text("\n".join(kept) + "\n")
    recorded = read_corpus([path])
    assert len(recorded.games) == 1 and recorded.finished == []  # the original's table counts no such game
    assert "no usable final_results" in recorded.games[0].problems[0]
    derived = read_corpus([path], ranks="derived")
    assert len(derived.finished) == 1 and derived.tables["games"]["rank_source"].to_list() == ["derived"]
