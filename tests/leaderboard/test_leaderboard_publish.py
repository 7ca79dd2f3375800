"""`python -m pipeline leaderboard`: the combined leaderboard files, their stamp, honest intervals, a
safe offline site, and speed on a corpus of thousands of games."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from pipeline.cli import main
from tests.leaderboard.test_leaderboard_helpers import build_corpus, build_results

REPO = Path(__file__).resolve().parents[2]
EXTERNAL = re.compile(r"""(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", re.I)
CSS_EXTERNAL = re.compile(r"""(?:@import|url\()\s*["']?\s*(?:https?:)?//""", re.I)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("publish")
    build_results(root / "results")
    shutil.copy2(REPO / "params" / "leaderboard.yaml", root / "leaderboard.yaml")
    code = main(
        [
            "leaderboard",
            "--params",
            str(root / "leaderboard.yaml"),
            "--results",
            str(root / "results"),
            "--out",
            str(root / "results" / "leaderboard"),
            "--workspace",
            str(root),
        ]
    )
    assert code == 0
    return root / "results" / "leaderboard"


def test_leaderboard_json_is_flat_numbers_with_intervals(published: Path) -> None:
    board = json.loads((published / "leaderboard.json").read_text())
    assert sorted(board) == ["alpha", "beta", "gamma"]
    for row in board.values():
        assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row.values())
    alpha, gamma = board["alpha"], board["gamma"]
    # the contract's bootstrap ranks are taken as given when settled (50 games each, 100 resamples)
    assert (alpha["whoisspy_rank"], alpha["whoisspy_rank_lo"], alpha["whoisspy_rank_hi"]) == (1, 1, 2)
    assert alpha["whoisspy_settled"] == 1 and alpha["whoisspy_trueskill_games"] == 50
    assert alpha["whoisspy_trueskill_resamples"] == 100
    # elimination gives only mu intervals, from 2 games each: alpha's [8, 12] lies above the others',
    # but that orders nothing: every rank interval is the whole field
    assert (board["beta"]["elimination_rank_lo"], board["beta"]["elimination_rank_hi"]) == (1, 3)
    assert alpha["elimination_not_separable"] == 2 and alpha["elimination_settled"] == 0
    assert alpha["elimination_trueskill_games"] == 2 and alpha["elimination_trueskill_resamples"] == 20
    assert alpha["elimination_trueskill_mu_lo"] == 8.0  # the numbers themselves are kept
    assert alpha["combined_settled"] == 0
    # gamma did not play xent: no xent keys, provisional on 3 benchmarks, ranked after alpha and beta
    assert not any(k.startswith("xent_") for k in gamma) and gamma["combined_benchmarks"] == 3
    assert gamma["combined_provisional"] == 1 and gamma["combined_rank"] == 3
    # the joint fit: alpha led every benchmark, on the Elo scale around 1000 (the mean of alpha and beta)
    assert alpha["combined_rank"] == 1 and alpha["combined_provisional"] == 0 and alpha["combined_score"] > 1000
    assert alpha["combined_score"] + board["beta"]["combined_score"] == pytest.approx(2000, abs=1e-3)
    assert alpha["combined_games"] == 2 + 2 + 2 + 2 and gamma["combined_games"] == 6
    assert alpha["xent_xent_score"] == 100.0 and alpha["whoisspy_points"] == 110.0


def test_version_stamp_names_version_and_input_hashes(published: Path) -> None:
    version = json.loads((published / "version.json").read_text())
    assert version["leaderboard_version"] == "1.0"
    assert version["git_commit"] is None  # the temp folder is no git workspace: tolerated
    assert "elimination/tables/messages.parquet" in version["inputs"]
    assert "xent/maps/condense/m1.xgl" in version["inputs"]
    assert all(re.fullmatch(r"[0-9a-f]{16}", h) for h in version["inputs"].values())
    stamp_line = f"leaderboard v1.0 · no git · inputs {version['inputs_id']}"
    assert stamp_line in (published / "leaderboard.md").read_text()
    pages = list((published / "site").rglob("*.html"))
    own = [p for p in pages if "/plots/" not in str(p) and "/charts/" not in str(p)]
    assert len(own) >= 4 + 4 + 2 + 2 + 2 + 1
    for page in own:
        assert stamp_line in page.read_text(), page


def test_markdown_shows_rank_intervals_and_not_separable(published: Path) -> None:
    text = (published / "leaderboard.md").read_text()
    # settled: the interval as given, with its mu interval
    assert "| 2 (1–3) | beta | 25.00 [22.00, 28.00] | 2.00 | 50 | 2 |" in text
    assert "not separable" in text


def test_a_two_game_field_is_shown_unsettled(published: Path) -> None:
    text = (published / "leaderboard.md").read_text()
    banner = text.split("## Combined")[0]
    assert "**Rankings not settled: a rank interval counts only from a bootstrap of at least 20 resamples" in banner
    assert "elimination (3 of 3 models; 2 games per model, 20 resamples)" in banner
    elimination = text.split("## elimination")[1].split("## ")[0]
    assert "Rankings not settled for 3 of 3 models" in elimination
    # no zero-width interval, no mu interval, nothing separable: the whole field, marked
    assert "| 1 (1–3) unsettled | alpha | 10.00 [8.00, 12.00] | 3.00 | 2 | 2 |" in elimination
    combined = text.split("## Combined")[1].split("\n## ")[0]
    assert "| 1 (1–2) unsettled | alpha |" in combined
    assert "| 3 unsettled | gamma |" in combined and "3/4, missed xent" in combined
    index = (published / "site" / "index.html").read_text()
    assert "Rankings not settled" in index and "unsettled" in index
    page = (published / "site" / "elimination" / "index.html").read_text()
    assert "1 (1–3) unsettled" in page and "Rankings not settled for 3 of 3 models" in page


def test_site_has_no_external_resources_and_escapes_model_text(published: Path) -> None:
    site = published / "site"
    for page in list(site.rglob("*.html")) + list(site.rglob("*.css")) + list(site.rglob("*.svg")):
        text = page.read_text(encoding="utf-8")
        assert not EXTERNAL.search(text), f"{page} references an external resource"
        assert not CSS_EXTERNAL.search(text), page
    for page in (
        "elimination/games/e1.html",
        "whoisspy/games/w1.html",
        "skate/games/q2.html",
        "xent/games/condense--m1--beta.html",
    ):
        text = (site / page).read_text()
        assert "<script>window.__pwned" not in text, page
        assert "&lt;script&gt;window.__pwned" in text, page
    heat = (site / "xent/games/condense--m1--alpha.html").read_text()
    assert "&lt;b&gt;mat&lt;/b&gt;" in heat and 'title="' in heat and "rgba(213, 94, 0, 1.00)" in heat


def test_replays_show_each_benchmarks_content(published: Path) -> None:
    site = published / "site"
    elim = (site / "elimination/games/e1.html").read_text()
    for expected in ("Public talk", "Private talk", "P1 whispers to P2", "Votes", "Eliminated: P4", "Round 3"):
        assert expected in elim
    spy = (site / "whoisspy/games/w1.html").read_text()
    for expected in ("apple", "pear", "foul: said_word", "found the spy", "Out: P2"):
        assert expected in spy
    skate = (site / "skate/games/q1.html").read_text()
    assert "print(sum(range(4)))" in skate and "correct" in skate and "0.950" in skate
    xent = (site / "xent/games/condense--m1--alpha.html").read_text()
    assert "the map's program" in xent and "2 attempts" in xent and "Round 3" in xent


def test_publish_is_deterministic(published: Path, tmp_path: Path) -> None:
    root = published.parent.parent
    out = tmp_path / "again"
    assert (
        main(
            [
                "leaderboard",
                "--params",
                str(root / "leaderboard.yaml"),
                "--results",
                str(root / "results"),
                "--out",
                str(out),
                "--workspace",
                str(root),
                "--no-site",
            ]
        )
        == 0
    )
    for name in ("leaderboard.json", "leaderboard.md", "version.json"):
        assert (out / name).read_bytes() == (published / name).read_bytes()


def test_missing_benchmarks_are_skipped(tmp_path: Path) -> None:
    build_results(tmp_path / "results")
    shutil.rmtree(tmp_path / "results" / "xent")
    (tmp_path / "results" / "skate" / "pcorrect.parquet").unlink()
    assert (
        main(
            [
                "leaderboard",
                "--params",
                str(REPO / "params" / "leaderboard.yaml"),
                "--results",
                str(tmp_path / "results"),
                "--out",
                str(tmp_path / "lb"),
                "--workspace",
                str(tmp_path),
            ]
        )
        == 0
    )
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert not any(k.startswith("xent_") for row in board.values() for k in row)
    assert not (tmp_path / "lb" / "site" / "xent").exists()
    assert (tmp_path / "lb" / "site" / "skate" / "games" / "q1.html").exists()


def test_a_corrupted_benchmark_table_stops_publish_naming_file_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import polars as pl

    build_results(tmp_path / "results")
    speeches = tmp_path / "results" / "whoisspy" / "speeches.parquet"
    pl.read_parquet(speeches).with_columns(pl.lit("late").alias("round")).write_parquet(speeches)
    out = tmp_path / "lb"
    assert (
        main(
            [
                "leaderboard",
                "--params",
                str(REPO / "params" / "leaderboard.yaml"),
                "--results",
                str(tmp_path / "results"),
                "--out",
                str(out),
                "--workspace",
                str(tmp_path),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "speeches.parquet" in err and "'round'" in err
    assert not (out / "leaderboard.json").exists()  # nothing half-published


def test_a_malformed_metrics_file_stops_the_build_naming_file_model_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_results(tmp_path / "results")
    metrics = tmp_path / "results" / "whoisspy" / "metrics.json"
    rows = json.loads(metrics.read_text())
    rows["beta"]["trueskill_sigma"] = -1.0  # a benchmark writing a bad rating
    del rows["gamma"]["trueskill_games"]  # or leaving the evidence out
    metrics.write_text(json.dumps(rows))
    out = tmp_path / "lb"
    args = ["leaderboard", "--params", str(REPO / "params" / "leaderboard.yaml"), "--results"]
    assert main([*args, str(tmp_path / "results"), "--out", str(out), "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {metrics}: not a metrics record" in err
    assert "  - beta.trueskill_sigma: Input should be greater than or equal to 0 (got -1.0)" in err
    assert "  - gamma: trueskill_games: missing" in err
    assert not (out / "leaderboard.json").exists()


def test_bad_version_is_a_params_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params = tmp_path / "leaderboard.yaml"
    params.write_text("version: 1\n")
    assert (
        main(["leaderboard", "--params", str(params), "--results", str(tmp_path), "--out", str(tmp_path / "lb")]) == 2
    )
    err = capsys.readouterr().err
    assert "leaderboard.yaml" in err and "version" in err and "MAJOR.MINOR" in err


@pytest.mark.slow
def test_thousands_of_games_publish_fast_with_a_small_index(tmp_path: Path) -> None:
    build_corpus(tmp_path / "results", games=2000)
    started = time.perf_counter()
    assert (
        main(
            [
                "leaderboard",
                "--params",
                str(REPO / "params" / "leaderboard.yaml"),
                "--results",
                str(tmp_path / "results"),
                "--out",
                str(tmp_path / "lb"),
                "--workspace",
                str(tmp_path),
            ]
        )
        == 0
    )
    elapsed = time.perf_counter() - started
    site = tmp_path / "lb" / "site"
    assert len(list((site / "elimination" / "games").iterdir())) == 2000
    assert len(list((site / "whoisspy" / "games").iterdir())) == 2000
    assert len(list((site / "elimination" / "list").iterdir())) == 20
    biggest_index = max((site / b / "index.html").stat().st_size for b in ("elimination", "whoisspy"))
    biggest_game = max(p.stat().st_size for p in (site / "elimination" / "games").iterdir())
    print(f"2000+2000 games published in {elapsed:.1f} s; index {biggest_index} B, game page {biggest_game} B")
    assert biggest_index < 100_000 and (site / "index.html").stat().st_size < 50_000
    assert elapsed < 90, f"publishing 4,000 replays took {elapsed:.0f} s"
