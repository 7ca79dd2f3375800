"""The reference's normalised score: |best| division, voided maps, mean of per-game means, metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.artifacts.schemas import read_table
from pipeline.xent.report import metrics_record, round_table, score_table
from pipeline.xent.schemas import ScoresSchema

KEYS = ["game", "map_id", "model", "round"]


def rounds_from(rows: list[tuple[str, str, str, int, float | None, str | None]]) -> pl.DataFrame:
    """(game, map, model, round, total bits, error) -> the rounds table as the report builds it."""
    played = pl.DataFrame(
        [{"game": g, "map_id": m, "model": p, "round": r, "error": e} for g, m, p, r, _, e in rows],
        schema={"game": pl.String, "map_id": pl.String, "model": pl.String, "round": pl.Int64, "error": pl.String},
    )
    rewards = pl.DataFrame(
        [
            {"game": g, "map_id": m, "model": p, "round": r, "total_bits": t}
            for g, m, p, r, t, e in rows
            if e is None and t is not None
        ],
        schema={
            "game": pl.String,
            "map_id": pl.String,
            "model": pl.String,
            "round": pl.Int64,
            "total_bits": pl.Float64,
        },
    )
    return round_table(rewards, played)


ROWS = [
    # game A, map 1: best is alpha's 4.0; beta reaches 2.0 -> 0.5
    ("A", "m1", "alpha", 1, 1.0, None),
    ("A", "m1", "alpha", 2, 4.0, None),
    ("A", "m1", "beta", 1, 2.0, None),
    ("A", "m1", "beta", 2, -1.0, None),
    # game A, map 2: every score is negative: divided by |best| = 2 -> -1 and -2
    ("A", "m2", "alpha", 1, -2.0, None),
    ("A", "m2", "beta", 1, -4.0, None),
    # game A, map 3: beta errored in round 2 -> voided for beta, and beta's 9.0 is not the best
    ("A", "m3", "alpha", 1, 3.0, None),
    ("A", "m3", "beta", 1, 9.0, None),
    ("A", "m3", "beta", 2, None, "line 2: ensure failed 11 times"),
    # game A, map 4: the best is exactly 0 -> skipped for everyone
    ("A", "m4", "alpha", 1, 0.0, None),
    ("A", "m4", "beta", 1, -3.0, None),
    # game B, one map: beta best
    ("B", "n1", "alpha", 1, 1.0, None),
    ("B", "n1", "beta", 1, 5.0, None),
]


def scores_by(scores: pl.DataFrame) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["map_id"], r["model"]): r for r in scores.iter_rows(named=True)}


def test_normalized_scores_divide_by_the_absolute_best_and_void_errored_maps() -> None:
    scores = score_table(rounds_from(ROWS))
    got = scores_by(scores)
    assert got[("m1", "alpha")]["normalized_score"] == 1.0 and got[("m1", "beta")]["normalized_score"] == 0.5
    assert got[("m2", "alpha")]["normalized_score"] == -1.0 and got[("m2", "beta")]["normalized_score"] == -2.0
    assert got[("m3", "beta")]["voided"] and got[("m3", "beta")]["normalized_score"] is None
    assert got[("m3", "alpha")]["normalized_score"] == 1.0  # beta's voided 9.0 is not the best
    assert got[("m4", "alpha")]["normalized_score"] is None and got[("m4", "beta")]["normalized_score"] is None
    assert got[("n1", "alpha")]["normalized_score"] == pytest.approx(0.2)
    assert not got[("m1", "beta")]["voided"] and got[("m1", "beta")]["map_score"] == 2.0


def test_headline_is_the_mean_of_per_game_means_and_the_pooled_mean_keeps_its_own_name() -> None:
    scores = score_table(rounds_from(ROWS))
    ratings = pl.DataFrame(
        {"player": [], "mu": [], "sigma": [], "mu_lo": [], "mu_hi": [], "rank": [], "rank_lo": [], "rank_hi": []}
    )
    metrics = metrics_record(scores, ratings, pl.DataFrame()).to_json()
    alpha, beta = metrics["alpha"], metrics["beta"]
    # alpha: game A maps m1, m2, m3 -> (1 - 1 + 1) / 3; game B -> 0.2; headline = mean of the two
    assert alpha["xent_score_A"] == pytest.approx(33.33) and alpha["xent_score_B"] == pytest.approx(20.0)
    assert alpha["xent_score"] == pytest.approx(26.67)
    assert alpha["xent_score_pooled"] == pytest.approx(30.0)  # (1 - 1 + 1 + 0.2) / 4
    # beta: game A maps m1, m2 (m3 voided, m4 skipped) -> (0.5 - 2) / 2; game B -> 1
    assert beta["xent_score_A"] == pytest.approx(-75.0) and beta["xent_score"] == pytest.approx(12.5)
    assert beta["maps_voided"] == 1 and alpha["maps_voided"] == 0
    assert json.dumps(metrics, sort_keys=True) == json.dumps(
        metrics_record(scores.reverse(), ratings, pl.DataFrame()).to_json(), sort_keys=True
    )  # row order does not matter


def test_scores_table_validates(tmp_path: Path) -> None:
    from pipeline.core.artifacts.schemas import write_table

    scores = score_table(rounds_from(ROWS))
    write_table(tmp_path / "scores.parquet", scores, ScoresSchema, sort_by=["game", "map_id", "model"])
    assert read_table(tmp_path / "scores.parquet", ScoresSchema).height == scores.height


def test_a_voided_map_ranks_its_player_last_in_the_rating_events() -> None:
    from pipeline.xent.report import map_table, rating_events

    rounds = rounds_from(ROWS)
    scores = score_table(rounds)
    events = {tuple(sorted(e.ranks.items())) for e in rating_events(scores)}
    assert (("alpha", 1), ("beta", 2)) in events  # m3: beta's 9.0 came with an errored round
    maps = {r["map_id"]: r for r in map_table(rounds, scores).iter_rows(named=True)}
    assert maps["m3"]["best_model"] == "alpha" and maps["m3"]["best_score"] == 3.0


def test_metrics_do_not_move_with_judge_noise_below_the_reported_precision() -> None:
    """Another machine's judge differs by ~1e-4 bits (bench/xent_judge_loop.py): same metrics.json."""
    ratings = pl.DataFrame(
        {"player": [], "mu": [], "sigma": [], "mu_lo": [], "mu_hi": [], "rank": [], "rank_lo": [], "rank_hi": []}
    )
    base = metrics_record(score_table(rounds_from(ROWS)), ratings, pl.DataFrame())
    for k, sign in enumerate((1, -1, 1)):
        # a best of exactly 0 stays 0 (near 0, |best| amplifies any noise: docs/xent.md)
        noisy = [(g, m, p, r, t if not t else t + sign * 1e-4 * ((k + r) % 3 - 1), e) for g, m, p, r, t, e in ROWS]
        assert metrics_record(score_table(rounds_from(noisy)), ratings, pl.DataFrame()) == base


def test_every_model_gets_its_empty_replies_at_the_token_limit_zero_when_none() -> None:
    scores = score_table(rounds_from(ROWS))
    ratings = pl.DataFrame(
        {"player": [], "mu": [], "sigma": [], "mu_lo": [], "mu_hi": [], "rank": [], "rank_lo": [], "rank_hi": []}
    )
    base = metrics_record(scores, ratings, pl.DataFrame()).to_json()
    assert {m: e["empty_at_token_limit"] for m, e in base.items()} == {"alpha": 0, "beta": 0}
    counted = metrics_record(scores, ratings, pl.DataFrame(), {"beta": 3, "not-a-player": 1}).to_json()
    assert counted["beta"]["empty_at_token_limit"] == 3 and counted["alpha"]["empty_at_token_limit"] == 0
    assert set(counted) == {"alpha", "beta"}
    # the other keys are as they were
    assert {m: {k: v for k, v in e.items() if k != "empty_at_token_limit"} for m, e in counted.items()} == {
        m: {k: v for k, v in e.items() if k != "empty_at_token_limit"} for m, e in base.items()
    }


def test_a_reply_the_token_limit_emptied_is_counted_in_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reasoning API whose hidden reasoning (500 tokens) outgrows the entry's cap (16 visible + 100
    reasoning) answers nothing, cut at the limit: the play stages record it, `rate` counts it."""
    import shutil

    import yaml

    from pipeline.core.artifacts.schemas import CallsSchema
    from pipeline.core.models.reply_budgets import empty_at_limit_counts
    from pipeline.testing.loopback import LoopbackServer
    from pipeline.xent.report import write_rate
    from pipeline.xent.stages import build_stage, load_schedule, play_stage, rescore_stage

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XENT_LOOPBACK_KEY", "not-a-real-key")
    shutil.copytree(Path(__file__).resolve().parents[2] / "params", tmp_path / "params")
    with LoopbackServer(
        reasoning={"r1": 500}, reply=lambda _: "I think of a garden. <move>bright garden</move>", max_seconds=120
    ) as server:
        api = {"extra": {"api_base": server.url}, "api_key_env": "XENT_LOOPBACK_KEY"}
        models = yaml.safe_load((tmp_path / "params/models.yaml").read_text())
        models["roster"] = [
            {"name": "r1", "model": "openai/r1", "sampling": {"reasoning_tokens": 100, "max_tokens": 16}, **api},
            {"name": "chat", "model": "openai/chat", **api},
            {"name": "heuristic-bot", "bot": "heuristic"},
        ]
        models.setdefault("gateway", {}).update(cache_dir=str(tmp_path / ".cache"), backoff_base_s=0.0)
        (tmp_path / "params/models.yaml").write_text(yaml.safe_dump(models))
        params = {
            "players": ["r1", "chat", "heuristic-bot"],
            "opponent": "heuristic-bot",
            "games": ["condense"],
            "maps_per_game": 1,
            "rounds": 2,
            "judge": "word",
            "rating": {"passes": 2, "bootstrap_resamples": 2},
        }
        (tmp_path / "params/xent.yaml").write_text(yaml.safe_dump(params))
        schedule = load_schedule("params/xent.yaml", "params/models.yaml")
        build_stage("params/xent.yaml", "params/models.yaml", "condense", "maps", None)
        for job in schedule.jobs:
            play_stage("params/xent.yaml", "params/models.yaml", job.game, job.job_id, "maps", "play")
    rescore_stage("params/xent.yaml", "params/models.yaml", "play", "out")
    write_rate("params/xent.yaml", "out")
    metrics = json.loads(Path("out/metrics.json").read_text())
    calls = read_table(Path("out/calls.parquet"), CallsSchema)
    assert empty_at_limit_counts(calls) == {"r1": 2}  # both rounds' asks came back empty at the limit
    assert metrics["r1"]["empty_at_token_limit"] == 2
    assert metrics["chat"]["empty_at_token_limit"] == 0 and metrics["heuristic-bot"]["empty_at_token_limit"] == 0
    moves = pl.read_parquet("out/moves.parquet")
    assert moves.filter(pl.col("model") == "r1")["reply"].to_list() == ["", ""]
