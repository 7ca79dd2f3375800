"""Honest uncertainty: an interval counts only with the evidence for it (core's `interval_settled`),
and every place that shows ranks says so: the rating summary, the leaderboard, `compare` and the
Elimination import printout. A 2-game field gets no zero-width interval and no "separable"; a
well-sampled field with clear skill gaps does."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.cli import main
from pipeline.core.artifacts.metrics_record import MetricsRecord, ModelMetrics
from pipeline.core.rating.multipass import (
    MIN_SETTLED_GAMES,
    MIN_SETTLED_RESAMPLES,
    FreeForAll,
    RatingEvent,
    RatingParams,
    evidence_text,
    interval_settled,
    rating_summary,
    settled_rank_interval,
    unsettled_reason,
)
from pipeline.leaderboard.combine import benchmark_board, rank_text, rating_separation
from tests.conftest import REPO

PARAMS = RatingParams(draw_probability=0.0)
SAMPLES = REPO / "tests" / "data" / "elimination"  # three real games of the original benchmark


def field(n_games: int, skill: dict[str, float], seed: int = 0) -> list[RatingEvent]:
    """Free-for-all games of every player; performance = skill + N(0, 1)."""
    rng = np.random.default_rng(seed)
    events: list[RatingEvent] = []
    for _ in range(n_games):
        perf = {p: s + rng.normal(0.0, 1.0) for p, s in skill.items()}
        order = sorted(perf, key=lambda p: -perf[p])
        events.append(FreeForAll({p: i for i, p in enumerate(order)}))
    return events


def contract(summary: pl.DataFrame) -> MetricsRecord:
    """The metrics record as the benchmarks build it from `rating_summary`."""
    return MetricsRecord(models={row["player"]: ModelMetrics.rated(row, {}) for row in summary.iter_rows(named=True)})


GAPS = {"top": 12.0, "upper": 8.0, "lower": 4.0, "bottom": 0.0}


def test_the_rule_needs_enough_games_and_resamples() -> None:
    assert interval_settled(MIN_SETTLED_GAMES, MIN_SETTLED_RESAMPLES)
    assert not interval_settled(MIN_SETTLED_GAMES - 1, 1000)
    assert not interval_settled(1000, MIN_SETTLED_RESAMPLES - 1)
    assert not interval_settled(1000, 0) and not interval_settled(None, 1000) and not interval_settled(1000, None)
    assert unsettled_reason(2, 0) == f"no bootstrap; 2 games (fewer than {MIN_SETTLED_GAMES})"
    assert unsettled_reason(1, 20) == f"1 game (fewer than {MIN_SETTLED_GAMES})"
    assert unsettled_reason(MIN_SETTLED_GAMES, MIN_SETTLED_RESAMPLES) == ""
    assert evidence_text(2, 20) == "2 games, 20 resamples" and evidence_text(None, 0) == "games unknown, no bootstrap"
    assert settled_rank_interval(2, 2, 2, 5, settled=False) == (1, 5)
    assert settled_rank_interval(2, 2, 3, 5, settled=True) == (2, 3)


def test_a_two_game_field_gets_the_whole_field_and_no_separable() -> None:
    events = field(2, GAPS)
    summary = rating_summary(events, PARAMS, passes=3, seed=1, resamples=50)
    assert summary["events"].to_list() == [2] * 4 and not summary["settled"].any()
    n = summary.height
    for row in summary.iter_rows(named=True):
        assert (row["rank_lo"], row["rank_hi"]) == (1, n)  # never "1 (1-1)" from two games
    assert summary["mu"].equals(rating_summary(events, PARAMS, passes=3, seed=1, resamples=0)["mu"])  # numbers kept
    board = benchmark_board("elimination", contract(summary), [], 1.96)
    top, bottom = board.ratings["top"], board.ratings["bottom"]
    assert rank_text(top.rank, top.rank_lo, top.rank_hi, top.settled) == "1 (1–4) unsettled"
    verdict = rating_separation(top, bottom)
    assert verdict.startswith("not enough games to tell (2 vs 2 games per model, 50 resamples")
    assert board.not_separable("top") == ["upper", "lower", "bottom"]


def test_a_well_sampled_field_with_clear_gaps_is_separable() -> None:
    events = field(60, GAPS, seed=3)
    summary = rating_summary(events, PARAMS, passes=2, seed=5, resamples=40, bootstrap_passes=1)
    assert summary["settled"].all() and summary["player"].to_list() == list(GAPS)
    assert [(r["rank_lo"], r["rank_hi"]) for r in summary.iter_rows(named=True)] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    board = benchmark_board("elimination", contract(summary), [], 1.96)
    assert rating_separation(board.ratings["top"], board.ratings["upper"]) == (
        "separable (60 vs 60 games per model, 40 resamples)"
    )
    assert board.settled_note() == "Rankings settled (60 games per model, 40 resamples)."


def test_compare_says_separable_only_with_the_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    (results / "elimination").mkdir(parents=True)
    (results / "whoisspy").mkdir(parents=True)
    many = rating_summary(field(60, GAPS, seed=3), PARAMS, passes=2, seed=5, resamples=40, bootstrap_passes=1)
    few = rating_summary(field(2, GAPS, seed=3), PARAMS, passes=2, seed=5, resamples=40, bootstrap_passes=1)
    contract(many).write(results / "elimination" / "metrics.json")
    contract(few).write(results / "whoisspy" / "metrics.json")
    # the mean percentile board: the joint fit reads rated events, which these results do not have
    params = tmp_path / "leaderboard.yaml"
    params.write_text('version: "1.0"\ncombined: {method: mean_percentile}\n')
    args = ["compare", "top", "bottom", "--params", str(params), "--results", str(results)]
    assert main(args) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if line.startswith("| ")}
    assert rows["elimination"].endswith("| separable (60 vs 60 games per model, 40 resamples) |")
    assert "rank 4 (1–4) unsettled" in rows["whoisspy"]
    assert "| not enough games to tell (2 vs 2 games per model, 40 resamples;" in rows["whoisspy"]
    # the combined rank rests on the unsettled whoisspy ratings too
    assert "not enough games to tell (top unsettled in whoisspy; bottom unsettled in whoisspy;" in rows["combined"]


def test_import_without_bootstrap_prints_honest_intervals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLES, logs)
    assert (
        main(
            [
                "elimination",
                "import",
                str(logs),
                "--out",
                str(tmp_path / "out"),
                "--passes",
                "2",
                "--no-plots",
                "--show",
                "30",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if re.match(r"\s*\d+ \(", line)]
    assert len(rows) == 20  # 20 models over 3 games
    for line in rows:
        match = re.match(r"\s*(\d+) \((\d+)-(\d+)\) unsettled  ", line)
        assert match, line
        assert (int(match[2]), int(match[3])) == (1, 20), line  # the whole field, not "(1-1)"
    assert lines[-1].startswith("rankings not settled for 20 of 20 model(s): their rank interval is the whole field")
    assert "(--bootstrap; here 0)" in lines[-1] and "(here 1 to 2)" in lines[-1]
