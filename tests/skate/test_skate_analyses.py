"""SKATE's analyses from the paper on known-skill bots: stability as models join in order,
re-ranking when answer-only models join, and the strategy comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.artifacts.schemas import read_table
from pipeline.skate.analyses import kendall_tau
from pipeline.skate.analysis_report import write_game_analyses, write_strategy_comparison
from pipeline.skate.config import SkateParams
from pipeline.skate.play import play_game
from pipeline.skate.schemas import (
    AnswerOnlyRankingSchema,
    StabilitySchema,
    StrategyComparisonSchema,
)
from tests.conftest import models_params

BOTS = [  # clearly separated skills: oracle 1 > setter-bot 0.9 (1 on its own) > good-setter 0.5 > poor 0.1
    {"name": "setter-bot", "bot": "setter", "bot_options": {"accuracy": 0.9}},
    {"name": "good-setter", "bot": "noisy", "bot_options": {"accuracy": 0.5}},
    {"name": "oracle-bot", "bot": "oracle"},
    {"name": "poor-bot", "bot": "noisy", "bot_options": {"accuracy": 0.1}},
]


def params(**overrides: Any) -> SkateParams:
    data: dict[str, Any] = {
        "players": ["setter-bot", "good-setter"],
        "answer_only": ["oracle-bot", "poor-bot"],
        "rounds": 1,
        "attempts": 2,
        "strategy": "historical_tasks",
        "similarity_threshold": 0.99,
        "answering": {"mode": "exact"},
        "ranking": {"passes": 4, "bootstrap_resamples": 0},
        "sandbox": {"cpu_s": 1, "wall_s": 3},
        "analyses": {
            "stability_order": ["setter-bot", "good-setter", "poor-bot", "oracle-bot"],
            "strategies": ["no_info", "historical_tasks"],
        },
    }
    data.update(overrides)
    return SkateParams.model_validate(data)


def test_stability_and_answer_only_reranking(tmp_path: Path) -> None:
    chosen = params()
    play_game(chosen, models_params(BOTS), tmp_path, report=False)  # the analyses read pcorrect.parquet
    summary = write_game_analyses(chosen, tmp_path)
    stability = read_table(tmp_path / "analyses/stability.parquet", StabilitySchema)
    assert stability["models"].unique().sort().to_list() == [2, 3, 4]
    last = stability.filter(pl.col("models") == 4).sort("rank")["player"].to_list()
    assert last == ["oracle-bot", "setter-bot", "good-setter", "poor-bot"]
    # known skills: each arrival keeps the order of those already present
    assert [s["kendall_tau_existing"] for s in summary["stability"]] == [1.0, 1.0]
    assert [s["joined"] for s in summary["stability"]] == ["poor-bot", "oracle-bot"]
    reranked = read_table(tmp_path / "analyses/answer_only.parquet", AnswerOnlyRankingSchema)
    assert set(reranked.filter(pl.col("panel") == "setters only")["player"]) == {"setter-bot", "good-setter"}
    assert summary["answer_only"]["kendall_tau_setters"] == 1.0
    assert summary["answer_only"]["with_answer_only"][0] == "oracle-bot"
    for name in ("stability", "answer_only"):
        assert (tmp_path / f"analyses/plots/{name}.png").stat().st_size > 1000
    assert json.loads((tmp_path / "analyses/game_analyses.json").read_text()) == summary


def test_strategy_comparison_plays_one_game_per_strategy(tmp_path: Path) -> None:
    chosen = params(rounds=1, answer_only=["oracle-bot"], analyses={"strategies": ["no_info", "historical_tasks"]})
    models = models_params(BOTS)
    for strategy in chosen.analyses.strategies:
        play_game(chosen.model_copy(update={"strategy": strategy}), models, tmp_path / "strategies" / strategy)
    summary = write_strategy_comparison(chosen, tmp_path)
    table = read_table(tmp_path / "analyses/strategies.parquet", StrategyComparisonSchema)
    assert table.height == 2 * 3 and set(table["strategy"]) == {"no_info", "historical_tasks"}
    assert summary["reference"] == "historical_tasks"
    assert {r["strategy"] for r in summary["rank_agreement"]} == {"no_info", "historical_tasks"}
    assert (tmp_path / "analyses/plots/strategies.svg").exists()


def test_a_stability_order_outside_the_game_is_refused() -> None:
    with pytest.raises(ValueError, match=r"analyses.stability_order: ghost is not among players or answer_only"):
        params(analyses={"stability_order": ["setter-bot", "ghost"]})


def test_kendall_tau_counts_agreeing_pairs() -> None:
    assert kendall_tau(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert kendall_tau(["a", "b", "c"], ["c", "b", "a"]) == -1.0
    assert kendall_tau(["a", "b", "c"], ["b", "a", "c", "d"]) == pytest.approx(1 / 3)
    assert kendall_tau(["a"], ["a"]) is None
