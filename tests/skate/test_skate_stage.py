"""SKATE's Snakemake stage end to end on a bots-only game in a temp project (no model, no network)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.schemas import CallsSchema, read_table
from pipeline.skate.schemas import PCorrectSchema, QuestionsSchema, SkateRatingsSchema
from tests.conftest import write_roster
from tests.core.artifacts.test_metrics_record import assert_metrics_record
from tests.roster.test_roster_stage import run_snakemake

pytestmark = pytest.mark.slow

ROSTER = [
    {"name": "setter-bot", "bot": "setter"},
    {"name": "noisy-bot", "bot": "noisy", "bot_options": {"accuracy": 0.3}},
]


def test_skate_stage_through_the_snakemake_api(project: Path) -> None:
    write_roster(project, ROSTER)
    params_path = project / "params/skate.yaml"
    params = yaml.safe_load(params_path.read_text())
    params.update(
        players=["setter-bot"], answer_only=["noisy-bot"], rounds=1, attempts=1, strategy="historical_performance"
    )
    params["ranking"]["passes"] = 4
    params["analyses"] = {"strategies": ["no_info", "historical_performance"]}
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    cwd = os.getcwd()
    try:
        run_snakemake(project, {"skate_all"})
        results = project / "results/skate"
        stamps = {p: p.stat().st_mtime_ns for p in results.rglob("*.parquet")}
        run_snakemake(project, {"skate_all"})  # nothing changed: nothing reruns
    finally:
        os.chdir(cwd)
    assert {p: p.stat().st_mtime_ns for p in results.rglob("*.parquet")} == stamps

    questions = read_table(results / "questions.parquet", QuestionsSchema)
    assert questions["status"].to_list() == ["accepted"]
    pcorrect = read_table(results / "pcorrect.parquet", PCorrectSchema)
    p = dict(zip(pcorrect["answerer"], pcorrect["p_correct"]))
    assert p["setter-bot"] == 1.0 and p["noisy-bot"] < 0.6  # the setter bot knows its own answer
    assert pcorrect.filter(pl.col("answer_only"))["answerer"].to_list() == ["noisy-bot"]
    ratings = read_table(results / "ratings.parquet", SkateRatingsSchema)
    assert set(ratings["mode"]) == {"relative", "absolute"}
    metrics = json.loads((results / "metrics.json").read_text())
    assert metrics["setter-bot"]["trueskill_relative_mu"] > metrics["noisy-bot"]["trueskill_relative_mu"]
    # the metrics record; games: the primary ranking mode's rated comparisons
    primary = ratings.filter(pl.col("mode") == params["ranking"]["primary"])
    assert_metrics_record(results / "metrics.json", dict(zip(primary["player"], primary["events"])))
    assert (results / "plots/trueskill_history.html").exists()
    # the paper's analyses ran as stages: stability, answer-only re-ranking, strategy comparison
    for name in ("stability", "answer_only", "strategies"):
        assert (results / f"analyses/plots/{name}.png").stat().st_size > 1000
    strategies = pl.read_parquet(results / "analyses/strategies.parquet")
    assert set(strategies["strategy"]) == {"no_info", "historical_performance"}
    # every job wrote a log and a calls table
    assert len(list((results / "logs").rglob("*.log"))) == 1 + 1 + 2 + 2 + 1 + 2 + 1
    calls = read_table(results / "calls.parquet", CallsSchema)
    assert set(calls["roster_name"]) == {"setter-bot", "noisy-bot"}
