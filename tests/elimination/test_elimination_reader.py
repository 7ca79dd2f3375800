"""Reading logs in the original format: the three real samples, broken files, and `import`."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.elimination.matching import clean_ranking, match_pairs
from pipeline.elimination.reader import read_corpus, read_game
from tests.conftest import REPO

# the three real logs of the original benchmark (copied from shared/samples/elimination)
SAMPLES = REPO / "tests" / "data" / "elimination"
SAMPLE_FILES = sorted(SAMPLES.glob("*.jsonl"))
assert len(SAMPLE_FILES) == 3, f"expected the three sample logs in {SAMPLES}"


def recorded_final(path: Path) -> dict:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return next(r for r in lines if r["type"] == "final_results")


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name[:21])
def test_the_samples_final_results_are_re_derived_from_their_records(path: Path) -> None:
    game = read_game(path, ranks="derived")
    final = recorded_final(path)
    recorded = {pid: rank for pid, rank in final["final_ranks"].items()}
    derived = {
        next(r["player_id"] for r in game.rows["seats"] if r["seat"] == s): rank for s, rank in game.ranks.items()
    }
    assert derived == recorded
    assert game.rows["games"][0]["rank_source"] == "derived"
    winner_pid = next(pid for pid, rank in derived.items() if rank == 1)
    assert final.get("winners_full", final["winners"]) == [winner_pid]
    for row in game.rows["final_ranks"]:
        assert row["points"] == pytest.approx(final["partial_points"][row["player_id"]])


def test_the_samples_tables_hold_every_vote_message_and_pair() -> None:
    corpus = read_corpus([SAMPLES])
    assert corpus.skipped == [] and len(corpus.games) == 3
    votes, messages = corpus.tables["votes"], corpus.tables["messages"]
    for path in SAMPLE_FILES:
        records = [json.loads(line) for line in path.read_text().splitlines()]
        gid = str(records[0]["game_id"])
        count = lambda kind, records=records: sum(r["type"] == kind for r in records)  # noqa: E731
        mine = votes.filter(pl.col("game_id") == gid)
        assert mine.filter(pl.col("phase") == "revote").height == count("private_revote_reason")
        assert mine.filter(pl.col("phase") == "jury").height == count("private_jury_reason") == 6
        assert mine.filter(pl.col("phase") != "jury").height == count("vote")
        assert mine["reason"].null_count() == 0  # every vote found its reason
        assert messages.filter(pl.col("game_id") == gid).height == count("conversation") + count("private")
    # the 2025-08 sample has no jury elimination record: the jury votes (4-2) decide
    late = corpus.tables["eliminations"].filter(pl.col("game_id") == "1754788012062785")
    assert late.height == 6 and not late["jury"].any()
    ranks = corpus.tables["final_ranks"].filter(pl.col("game_id") == "1739758867672084")
    assert ranks.filter(pl.col("rank") == 1)["model"].to_list() == ["gemini_20_flash"]


def write_broken_logs(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "garbage.jsonl").write_text("this is not json\n")
    (directory / "empty.jsonl").write_text("")
    (directory / "other.jsonl").write_text('{"hello": "world"}\n')
    (directory / "badid.jsonl").write_text(
        '{"game_id": 1, "type": "conversation", "round": 1, "subround": 1, "player_id": "someone", "message": "hi"}\n'
    )
    # a game cut off after two rounds: read, reported incomplete, not rated
    lines = SAMPLE_FILES[0].read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"round": 3' in line)
    (directory / "game_truncated.jsonl").write_text("\n".join(lines[:cut]).replace("1739758867672084", "42") + "\n")


def test_unreadable_files_are_reported_and_skipped(tmp_path: Path) -> None:
    write_broken_logs(tmp_path / "logs")
    corpus = read_corpus([tmp_path / "logs"])
    skipped = {Path(s["file"]).name: s["error"] for s in corpus.skipped}
    assert set(skipped) == {"garbage.jsonl", "empty.jsonl", "other.jsonl", "badid.jsonl"}
    assert "line 1 is not JSON" in skipped["garbage.jsonl"]
    assert "not of the form Player<seat>_Game<id>_<model>" in skipped["badid.jsonl"]
    assert len(corpus.games) == 1 and corpus.finished == []


def test_import_writes_the_leaderboard_tables_and_report(tmp_path: Path, capsys) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for path in SAMPLE_FILES:
        shutil.copy(path, logs / path.name)
    write_broken_logs(logs / "nested")
    out = tmp_path / "out"
    assert (
        main(["elimination", "import", str(logs), "--out", str(out), "--passes", "3", "--bootstrap", "0", "--no-plots"])
        == 0
    )
    err = capsys.readouterr().err
    assert "garbage.jsonl" in err and "4 skipped" in err
    with (out / "leaderboard.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["model", "mu", "mu_rel", "sigma", "games", "points_sum", "avg_points"]
    models = {r["model"] for r in rows}
    assert {"gemini_20_flash", "r1-fireworks", "chatgpt-4o-03-27", "o3-mini"} <= models
    assert len(models) == 20  # 24 seats; o1, grok2, llama33_70b and o3-mini played twice
    mus = [float(r["mu"]) for r in rows]
    assert mus == sorted(mus, reverse=True)
    o3 = next(r for r in rows if r["model"] == "o3-mini")
    assert int(o3["games"]) == 2 and float(o3["points_sum"]) == pytest.approx(4 / 7 + 6 / 7)
    report = json.loads((out / "import_report.json").read_text())
    assert report["games_finished"] == 3 and len(report["skipped"]) == 4
    assert report["incomplete"] == ["game_truncated.jsonl"] and report["differ_from_final_results"] == []
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == models and metrics["o3-mini"]["trueskill_games"] == 2  # its rated games
    stats = pl.read_parquet(out / "tables" / "model_stats.parquet")
    assert stats.filter(pl.col("model") == "gemini_20_flash")["wins"].item() == 1
    for name in ("games", "seats", "messages", "votes", "eliminations", "pairs", "final_ranks"):
        assert (out / "tables" / f"{name}.parquet").exists()


def test_import_is_deterministic_and_mu_is_a_parameter(tmp_path: Path) -> None:
    args = ["elimination", "import", str(SAMPLES), "--passes", "4", "--bootstrap", "0", "--no-plots"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert main([*args, "--out", str(tmp_path / "c"), "--mu", "5.0"]) == 0
    a = (tmp_path / "a" / "leaderboard.csv").read_bytes()
    assert a == (tmp_path / "b" / "leaderboard.csv").read_bytes()
    for table in ("votes", "final_ranks", "messages"):
        assert (tmp_path / "a/tables" / f"{table}.parquet").read_bytes() == (
            tmp_path / "b/tables" / f"{table}.parquet"
        ).read_bytes()
    mu4 = pl.read_csv(tmp_path / "a" / "leaderboard.csv")
    mu5 = pl.read_csv(tmp_path / "c" / "leaderboard.csv")
    shift = mu5.join(mu4, on="model").select((pl.col("mu") - pl.col("mu_right")).alias("d"))["d"]
    assert shift.to_list() == pytest.approx([1.0] * mu4.height)  # the prior mean only shifts every mu


def test_matching_pairs_everyone_but_one_with_an_odd_count() -> None:
    import random

    for n in (3, 4, 5, 7, 8):
        seats = [f"P{i}" for i in range(1, n + 1)]
        for trial in range(40):
            rng = random.Random(trial * 31 + n)
            rankings = {s: rng.sample([o for o in seats if o != s], n - 1) for s in seats}
            order = rng.sample(seats, n)
            matching = match_pairs(order, rankings)
            paired = [s for pair in matching.pairs for s in pair]
            assert len(paired) == len(set(paired)) == n - (n % 2)
            assert len(matching.unpaired) == n % 2
            assert set(paired) | set(matching.unpaired) == set(seats)


def test_matching_proposals_accept_replace_and_reject_like_the_original() -> None:
    # the last round of the first sample: P6 proposes to both others and is rejected by both
    matching = match_pairs(["P3", "P5", "P6"], {"P3": ["P5", "P6"], "P5": ["P3", "P6"], "P6": ["P5", "P3"]})
    assert [(p.proposer, p.target, p.rank, p.outcome) for p in matching.proposals] == [
        ("P3", "P5", 0, "accepted"),
        ("P5", "P3", 0, "accepted"),
        ("P6", "P5", 0, "rejected"),
        ("P6", "P3", 1, "rejected"),
    ]
    assert matching.pairs == [("P3", "P5")] and matching.unpaired == ["P6"]
    # a better proposal replaces the held one; the displaced seat proposes on at once
    matching = match_pairs(
        ["P1", "P2", "P3", "P4"],
        {"P1": ["P3", "P2", "P4"], "P2": ["P3", "P1", "P4"], "P3": ["P2", "P1", "P4"], "P4": ["P3", "P1", "P2"]},
    )
    steps = [(p.proposer, p.target, p.outcome, p.displaced) for p in matching.proposals]
    assert steps[:3] == [("P1", "P3", "accepted", None), ("P2", "P3", "replaced", "P1"), ("P1", "P2", "accepted", None)]
    assert sorted(map(sorted, matching.pairs)) == [["P1", "P4"], ["P2", "P3"]]


def test_rankings_are_cleaned_and_what_was_dropped_or_filled_is_kept() -> None:
    import random

    cleaned = clean_ranking("P9, P2 then p2, P1 and P3!", "P1", ["P1", "P2", "P3", "P4", "P5"], random.Random(0))
    assert cleaned.named == ("P2", "P3")
    assert cleaned.dropped == ("P9", "P2", "P1")
    assert sorted(cleaned.filled) == ["P4", "P5"] and cleaned.ranking[:2] == ("P2", "P3")
