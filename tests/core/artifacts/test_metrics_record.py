"""The metrics record: the one metrics.json contract every benchmark writes and the leaderboard reads.

`assert_metrics_record` is what each benchmark's stage test (tests/<benchmark>/test_*_stage.py) asks
of the metrics.json its small real run wrote: it reads as the record, and every model's games are
its rated games in the benchmark's rating table."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from pipeline.core.artifacts.metrics_record import (
    MetricsError,
    MetricsRecord,
    ModelMetrics,
    Rating,
    read_metrics,
)


def assert_metrics_record(path: Path, rated_games: Mapping[str, int]) -> MetricsRecord:
    """`path` reads as the metrics record, and its rated models and their games are `rated_games`
    (model -> the events of the benchmark's rating table)."""
    record = read_metrics(path)
    assert {model: row.games for model, (_, row) in record.rated().items()} == dict(rated_games)
    return record


SUMMARY_ROW = {
    "mu": 25.123456,
    "sigma": 2.0,
    "mu_lo": 21.5,
    "mu_hi": 28.25,
    "rank": 1,
    "rank_lo": 1,
    "rank_hi": 2,
    "events": 12,
    "resamples": 50,
}


def record() -> MetricsRecord:
    return MetricsRecord(
        models={
            "alpha": ModelMetrics.rated(SUMMARY_ROW, {"win_rate": 2 / 3, "wins": 8, "vote_accuracy": float("nan")}),
            "beta": ModelMetrics.unrated({"wins": 0, "map_set_differs": ["players"], "reachable": True}),
        }
    )


def test_the_file_is_flat_rounded_and_reads_back_as_the_same_record(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    record().write(path)
    rows = json.loads(path.read_text())
    assert rows["alpha"] == {
        "trueskill_mu": 25.1235,  # one rounding rule: 4 decimals
        "trueskill_sigma": 2.0,
        "trueskill_mu_lo": 21.5,
        "trueskill_mu_hi": 28.25,
        "trueskill_rank": 1,
        "trueskill_rank_lo": 1,
        "trueskill_rank_hi": 2,
        "trueskill_resamples": 50,
        "trueskill_games": 12,  # games: the rated games of the rating table
        "win_rate": 0.6667,
        "wins": 8,
        "vote_accuracy": None,  # a rate over nothing
    }
    # a model in no rated game: its rating keys are null and it has no games
    assert rows["beta"]["trueskill_mu"] is None and rows["beta"]["trueskill_games"] == 0
    assert read_metrics(path) == record()
    record().write(path)
    assert json.loads(path.read_text()) == rows


def test_a_benchmark_metric_cannot_redefine_games() -> None:
    with pytest.raises(ValueError, match="games: reserved for the record's own fields"):
        ModelMetrics.rated(SUMMARY_ROW, {"games": 10})
    with pytest.raises(ValueError, match="trueskill_games is 3 but trueskill_mu is null"):
        ModelMetrics(rating=None, games=3)
    with pytest.raises(ValueError, match="finite number"):
        ModelMetrics.rated(SUMMARY_ROW, {"points": float("inf")})
    with pytest.raises(ValueError, match="trueskill_rank_lo and trueskill_rank_hi are both numbers or both null"):
        Rating(mu=1.0, sigma=1.0, rank=1, rank_lo=1, resamples=0)


def test_a_malformed_file_names_the_file_each_model_and_key(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    rows = record().to_json()
    rows["alpha"]["trueskill_rank"] = "first"
    rows["alpha"]["win_rate"] = "high"
    del rows["beta"]["trueskill_resamples"]
    path.write_text(json.dumps(rows))
    with pytest.raises(MetricsError) as caught:
        read_metrics(path)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(f"{path}: not a metrics record")
    assert lines[1:] == [
        "  - alpha.trueskill_rank: Input should be a valid integer (got 'first')",
        "  - alpha.win_rate: a metric is a number, true/false, null or a list of names (got 'high')",
        "  - beta: trueskill_resamples: missing (every model's row carries them, null when undefined)",
    ]
    path.write_text("{")
    with pytest.raises(MetricsError, match="not JSON"):
        read_metrics(path)
