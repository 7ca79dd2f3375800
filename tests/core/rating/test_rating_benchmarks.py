"""The benchmarks' ratings carry the shared TrueSkill summary: mu and rank intervals in their tables and
the `trueskill_*` keys of the rating contract in their metrics.json."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from pipeline.core.rating.multipass import RatingParams
from pipeline.elimination import metrics as elimination_metrics
from pipeline.elimination.config import RatingSettings as EliminationRating
from pipeline.elimination.ratings import leaderboard, rate
from pipeline.elimination.schemas import LeaderboardSchema
from pipeline.skate.metrics import metrics_json as skate_metrics_json
from pipeline.skate.ranking import question_games
from pipeline.skate.ranking import ratings as skate_ratings
from pipeline.skate.schemas import SkateRatingsSchema
from pipeline.whoisspy.config import RatingSettings as WhoIsSpyRating
from pipeline.whoisspy.metrics import (
    build_tables,
    rating_events,
    variants_table,
)
from pipeline.whoisspy.metrics import (
    leaderboard as whoisspy_leaderboard,
)
from pipeline.whoisspy.metrics import (
    metrics_json as whoisspy_metrics_json,
)
from pipeline.whoisspy.metrics import (
    ratings as whoisspy_ratings,
)
from pipeline.whoisspy.schemas import LeaderboardSchema as WhoIsSpyLeaderboardSchema
from tests.whoisspy.test_whoisspy_schedule import bot_records

CONTRACT_KEYS = {
    "trueskill_mu",
    "trueskill_sigma",
    "trueskill_mu_lo",
    "trueskill_mu_hi",
    "trueskill_rank",
    "trueskill_rank_lo",
    "trueskill_rank_hi",
}


def assert_contract(entry: dict, *, with_intervals: bool) -> None:
    assert CONTRACT_KEYS <= set(entry)
    for key in ("trueskill_rank", "trueskill_rank_lo", "trueskill_rank_hi"):
        assert isinstance(entry[key], int)
    assert entry["trueskill_rank_lo"] <= entry["trueskill_rank"] <= entry["trueskill_rank_hi"]
    if with_intervals:
        assert entry["trueskill_mu_lo"] <= entry["trueskill_mu"] <= entry["trueskill_mu_hi"]
    else:
        assert entry["trueskill_mu_lo"] is None and entry["trueskill_mu_hi"] is None


def elimination_final_ranks(games: int = 40) -> pl.DataFrame:
    """Six models in 4-seat games; "ace" always finishes first, the others at random."""
    rng = np.random.default_rng(3)
    others = ["b", "c", "d", "e", "f"]
    rows = []
    for g in range(games):
        table = ["ace", *rng.choice(others, size=3, replace=False).tolist()]
        order = ["ace", *rng.permutation(table[1:]).tolist()]
        for place, model in enumerate(order, start=1):
            rows.append({"game_id": f"g{g:03d}", "model": model, "rank": place, "points": (4 - place) / 3})
    return pl.DataFrame(rows)


def test_elimination_leaderboard_and_metrics_carry_rank_intervals() -> None:
    final_ranks = elimination_final_ranks()
    settings = EliminationRating(passes=4, bootstrap_resamples=20, bootstrap_passes=2)
    board = LeaderboardSchema.validate(leaderboard(rate(final_ranks, settings), final_ranks))
    assert board["model"][0] == "ace"
    assert board.row(0, named=True)["rank_hi"] == 1  # always first: separable from everyone
    assert (board["rank_lo"] <= board["rank"]).all() and (board["rank"] <= board["rank_hi"]).all()
    assert (
        board.filter(pl.col("model") != "ace")["rank_hi"] - board.filter(pl.col("model") != "ace")["rank_lo"]
    ).max() >= 1
    metrics = elimination_metrics.metrics_json(
        board, pl.DataFrame({"model": []}, schema={"model": pl.String})
    ).to_json()
    for entry in metrics.values():
        assert_contract(entry, with_intervals=True)
        assert entry["mu"] == entry["trueskill_mu"] and entry["rank"] == entry["trueskill_rank"]  # old keys kept

    # 20 resamples: a model's interval is settled exactly when it played 20 rated games or more
    assert board["settled"].to_list() == (board["rated_games"] >= 20).to_list()
    assert board["resamples"].to_list() == [20] * board.height
    assert metrics["ace"]["trueskill_games"] == 40 and metrics["ace"]["trueskill_resamples"] == 20

    no_boot = leaderboard(rate(final_ranks, settings, bootstrap=0), final_ranks)
    LeaderboardSchema.validate(no_boot)
    # no bootstrap: the rank interval is the whole field, not the point rank
    assert no_boot["rank_lo"].to_list() == [1] * no_boot.height
    assert no_boot["rank_hi"].to_list() == [no_boot.height] * no_boot.height
    assert not no_boot["settled"].any()
    metrics = elimination_metrics.metrics_json(
        no_boot, pl.DataFrame({"model": []}, schema={"model": pl.String})
    ).to_json()
    assert_contract(metrics["ace"], with_intervals=False)
    assert metrics["ace"]["trueskill_resamples"] == 0


def skate_pcorrect(questions: int = 24) -> pl.DataFrame:
    rng = np.random.default_rng(4)
    answerers = ["oracle", "p1", "p2", "p3"]
    rows = []
    for q in range(questions):
        setter = answerers[1 + q % 3]
        for answerer in answerers:
            p = 1.0 if answerer == "oracle" else float(rng.uniform(0.0, 0.9))
            rows.append(
                {
                    "question_id": f"q{q:02d}",
                    "round": 1 + q // 3,
                    "setter": setter,
                    "answerer": answerer,
                    "mode": "exact",
                    "p_correct": p,
                    "std_error": 0.0,
                    "samples": 1,
                    "answer_only": answerer == "oracle",
                }
            )
    return pl.DataFrame(rows)


def test_skate_ratings_and_metrics_carry_rank_intervals() -> None:
    pcorrect = skate_pcorrect()
    params = RatingParams(draw_probability=0.2)
    setters = ["p1", "p2", "p3"]
    frames = [
        skate_ratings(question_games(pcorrect, mode, 0.05, 0.55, setters), params, 3, 7, mode, resamples=20)
        for mode in ("relative", "absolute")
    ]
    table = SkateRatingsSchema.validate(pl.concat(frames))
    oracle = table.filter((pl.col("mode") == "relative") & (pl.col("player") == "oracle")).row(0, named=True)
    assert (oracle["rank"], oracle["rank_lo"], oracle["rank_hi"]) == (1, 1, 1)
    empty = pl.DataFrame(schema={"setter": pl.String, "outcome": pl.String, "status": pl.String})
    metrics = skate_metrics_json(table, pcorrect, empty, empty, ["oracle", *setters], "relative").to_json()
    for entry in metrics.values():
        assert_contract(entry, with_intervals=True)
        assert "trueskill_relative_mu" in entry and "trueskill_absolute_mu" in entry  # old keys kept
    assert metrics["oracle"]["trueskill_mu"] == metrics["oracle"]["trueskill_relative_mu"]


def test_whoisspy_leaderboard_and_metrics_carry_rank_intervals(tmp_path: Path) -> None:
    tables = build_tables(bot_records(tmp_path))
    events = rating_events(tables["games"], tables["seats"], "baseline")
    table, intervals = whoisspy_ratings(events, WhoIsSpyRating(passes=2, bootstrap_resamples=10), seed=0)
    assert table.columns == ["player", "mu", "sigma", "mu_sd", "events", "passes"]  # core RatingsSchema
    assert intervals.columns == ["player", "mu_lo", "mu_hi", "rank", "rank_lo", "rank_hi", "resamples", "settled"]
    board = WhoIsSpyLeaderboardSchema.validate(whoisspy_leaderboard(tables["seats"], "baseline", table, intervals))
    metrics = whoisspy_metrics_json(board, variants_table(tables["seats"]), "baseline").to_json()
    assert set(metrics) == {"heuristic-bot", "random-bot"}
    for entry in metrics.values():
        assert_contract(entry, with_intervals=True)
        assert "rank" in entry and "points" in entry  # the points rank stays
    ranks = sorted(entry["trueskill_rank"] for entry in metrics.values())
    assert ranks == [1, 2]
    # 10 resamples over a few games: not settled, so each rank interval is the whole field
    assert not board["trueskill_settled"].any()
    for entry in metrics.values():
        assert (entry["trueskill_rank_lo"], entry["trueskill_rank_hi"]) == (1, 2)
        assert entry["trueskill_resamples"] == 10 and entry["trueskill_games"] >= 1
