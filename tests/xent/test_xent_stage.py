"""Xent end to end: the Snakemake stage on bots in a temp project (model-free judge), and one map
played by the real local model with the real judge, rescored in a batch."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.schemas import CallsSchema, read_table
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import make_players
from pipeline.xent.games import load_game_text
from pipeline.xent.maps import build_map_text
from pipeline.xent.play import PlaySettings, play_map
from pipeline.xent.schemas import (
    MapsSchema,
    MovesSchema,
    RescoreSchema,
    RewardsSchema,
    RoundsSchema,
    ScoresSchema,
    TokenXentsSchema,
    XentRatingsSchema,
)
from pipeline.xent.values import Term, XentValue, combine
from pipeline.xent.xgl import parse_program
from tests.conftest import models_params, write_roster
from tests.core.artifacts.test_metrics_record import assert_metrics_record
from tests.roster.test_roster_stage import run_snakemake

pytestmark = pytest.mark.slow
BOTS = [
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
    {"name": "terse-bot", "bot": "heuristic", "bot_options": {"words": 2}},
]


def write_params(project: Path, players: list[str]) -> None:
    params = {
        "players": players,
        "opponent": "random-bot",
        "games": ["condense", "interception"],
        "maps_per_game": 2,
        "rounds": 2,
        "judge": "word",
        "rating": {"passes": 2, "bootstrap_resamples": 5},
    }
    (project / "params/xent.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def snakemake(project: Path) -> None:
    cwd = os.getcwd()
    try:
        run_snakemake(project, {"xent_all"})
    finally:
        os.chdir(cwd)


def stamps(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if p.is_file() and "logs" not in p.parts
    }


def test_xent_stage_through_snakemake(project: Path) -> None:
    write_roster(project, BOTS)
    write_params(project, ["heuristic-bot", "random-bot"])
    snakemake(project)
    out = project / "results/xent"

    maps = sorted((out / "maps").rglob("*.xgl"))
    assert len(maps) == 4 and all("story(" not in p.read_text() for p in maps)
    moves = read_table(out / "moves.parquet", MovesSchema)
    assert set(moves["model"]) == {"heuristic-bot", "random-bot"} and (moves["attempts"] >= 1).all()
    rewards = read_table(out / "rewards.parquet", RewardsSchema)
    assert set(rewards["player_role"]) == {"black"}
    tokens = read_table(out / "token_xents.parquet", TokenXentsSchema)
    per_reward = tokens.group_by(["game", "map_id", "model", "round", "reward_index"]).agg(pl.col("bits").sum())
    joined = rewards.join(per_reward, on=["game", "map_id", "model", "round", "reward_index"], how="left")
    assert (joined["total_bits"] - joined["bits"].fill_null(0.0)).abs().max() < 1e-9
    rescore = read_table(out / "rescore.parquet", RescoreSchema)
    assert ((rescore["total_bits"] - rescore["play_total_bits"]).abs() < 1e-3).all()
    assert json.loads((out / "rescore_check.json").read_text())["checked_against_play"] == rescore.height

    rounds = read_table(out / "rounds.parquet", RoundsSchema)
    assert rounds.height == 2 * 2 * 2 * 2  # games x maps x players x rounds
    scores = read_table(out / "scores.parquet", ScoresSchema)
    best = scores.group_by(["game", "map_id"]).agg(pl.col("map_score").max())
    assert scores.height == 8 and best.height == 4
    for row in scores.iter_rows(named=True):
        mine = rounds.filter((pl.col("map_id") == row["map_id"]) & (pl.col("model") == row["model"]))
        assert row["map_score"] == mine["total_bits"].max()
    read_table(out / "maps.parquet", MapsSchema)
    ratings = read_table(out / "ratings.parquet", XentRatingsSchema)
    assert set(ratings["player"]) == {"heuristic-bot", "random-bot"}
    assert_metrics_record(out / "metrics.json", dict(zip(ratings["player"], ratings["events"])))  # games: maps rated
    metrics = json.loads((out / "metrics.json").read_text())
    for model in ("heuristic-bot", "random-bot"):
        entry = metrics[model]
        assert {
            "xent_score",
            "xent_score_condense",
            "xent_score_interception",
            "trueskill_mu",
            "trueskill_rank",
            "trueskill_rank_lo",
            "trueskill_rank_hi",
            "trueskill_mu_lo",
            "trueskill_mu_hi",
        } <= set(entry)
        mine = scores.filter(pl.col("model") == model).drop_nulls("normalized_score")
        per_game = mine.group_by("game").agg(pl.col("normalized_score").mean())["normalized_score"]
        assert entry["xent_score"] == pytest.approx(per_game.mean() * 100, abs=1e-2)  # mean of game means
        assert entry["xent_score_pooled"] == pytest.approx(mine["normalized_score"].mean() * 100, abs=1e-2)
    calls = read_table(out / "calls.parquet", CallsSchema)
    assert calls.height > 0
    for plot in ("score_by_round", "running_best", "normalized_scores"):
        for ext in ("html", "png", "svg"):
            assert (out / "plots" / f"{plot}.{ext}").stat().st_size > 0

    # nothing changed: nothing reruns
    before = stamps(out)
    snakemake(project)
    assert stamps(out) == before

    # a new player adds its play jobs; maps and the others' play records stay as they are
    write_params(project, ["heuristic-bot", "random-bot", "terse-bot"])
    snakemake(project)
    after = stamps(out)
    kept = {k: v for k, v in before.items() if k.startswith(("maps/", "play/"))}
    assert all(after[k] == v for k, v in kept.items())
    assert len([k for k in after if k.startswith("play/") and k.endswith(".json")]) == 6
    assert "terse-bot" in json.loads((out / "metrics.json").read_text())


GAME = """# Condense (short): a prefix that makes the story predictable, without the story's words.
assign(s=story(12))
elicit(x, 6)
assign(x1=remove_common_words(x, s))
reveal(x1)
reward(xed(s | x1))
"""


def test_one_map_with_the_real_local_model_as_player_and_judge(tmp_path: Path) -> None:
    from pipeline.core.judge.scoring import load_judge

    judge = load_judge()
    game = load_game_text(GAME, "condense-short")
    built = parse_program(build_map_text(game, 0, judge))
    assert not built.has_story_calls
    models = models_params(
        [{"name": "gemma-270m", "model": "local/gemma-3-270m", "sampling": {"temperature": 0.7, "top_p": 0.95}}]
    )
    gateway = Gateway(models, job="xent-local", cache_dir=tmp_path / "cache")
    gemma = make_players(models, gateway, 1, game="xent")["gemma-270m"]
    record = asyncio.run(play_map(game, built, "m0", {"black": gemma}, judge, 1, PlaySettings(reply_max_tokens=8)))
    assert len(record["rounds"]) == 1
    for rnd in record["rounds"]:
        assert rnd["error"] is None
        (move,) = rnd["moves"]
        assert judge.count_tokens(move["move"]) <= 6 and 1 <= move["attempts"] <= 2
        (reward,) = [r for r in rnd["rewards"] if r["role"] == "black"]
        # rescoring the recorded terms in one batch gives the play-time total back
        value = XentValue(tuple(Term.from_dict(t) for t in reward["terms"]))
        again = combine(value, judge.score_many(value.pairs()))
        assert again.total == pytest.approx(reward["total_bits"], abs=1e-3)
        assert rnd["total_bits"] == pytest.approx(reward["total_bits"])
    calls = gateway.calls_frame()
    assert calls.height >= 1 and (calls["tokens_out"] <= 8).all()
