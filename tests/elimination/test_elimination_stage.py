"""The Elimination stage through Snakemake (bots only), and one game with the real local model."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.schemas import CallsSchema, read_table
from pipeline.core.models.roster import load_models
from pipeline.elimination.config import ReplyTokens, load_elimination_params
from pipeline.elimination.engine import GameSpec, run_game
from pipeline.elimination.reader import read_game
from pipeline.elimination.schedule import build_schedule
from tests.conftest import models_params, write_roster
from tests.core.artifacts.test_metrics_record import assert_metrics_record
from tests.elimination.test_elimination_support import of_type, seat
from tests.roster.test_roster_stage import run_snakemake

pytestmark = pytest.mark.slow

BOTS = [{"name": "random-bot", "bot": "random"}, {"name": "heuristic-bot", "bot": "heuristic"}]
# not periodic under the half-turn rotation, so its two seatings are two different games
LINEUP = ["heuristic-bot"] * 3 + ["random-bot"] * 4 + ["heuristic-bot"]
NEW_LINEUP = ["heuristic-bot"] + ["random-bot"] * 3 + ["heuristic-bot"] * 3 + ["random-bot"]


def write_params(project: Path, lineups: list[list[str]]) -> None:
    data = {
        "reply_tokens": {"statement": 24, "preference": 16, "private": 16, "vote": 12},
        "schedule": {"lineups": lineups, "rotations": 2, "max_seats_per_player": 4},
        "rating": {"passes": 3, "bootstrap_resamples": 2, "bootstrap_passes": 1},
    }
    (project / "params" / "elimination.yaml").write_text(yaml.safe_dump(data))


def test_the_stage_plays_the_schedule_rates_and_reruns_only_new_games(project: Path) -> None:
    write_roster(project, BOTS)
    write_params(project, [LINEUP])
    run_snakemake(project, {"elimination_all"})
    results = project / "results" / "elimination"
    schedule = build_schedule(
        load_elimination_params(project / "params/elimination.yaml"), load_models(project / "params/models.yaml")
    )
    game_dirs = sorted(p.name for p in (results / "games").iterdir())
    assert game_dirs == sorted(g.game_id for g in schedule) and len(game_dirs) == 2
    logs = {gid: next((results / "games" / gid).glob("game_*.jsonl")) for gid in game_dirs}
    for log in logs.values():
        assert read_game(log).ranks is not None
    with (results / "leaderboard.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["model"] for r in rows] and {r["model"] for r in rows} == {"random-bot", "heuristic-bot"}
    assert all(int(r["games"]) == 2 for r in rows)
    board = pl.read_parquet(results / "leaderboard.parquet")
    assert board["rank"].to_list() == [1, 2] and board["mu_lo"].null_count() == 0  # bootstrap from params
    metrics = json.loads((results / "metrics.json").read_text())
    assert set(metrics) == {"random-bot", "heuristic-bot"} and "betrayal_rate" in metrics["random-bot"]
    assert_metrics_record(results / "metrics.json", dict(zip(board["model"], board["rated_games"])))
    for name in (
        "trueskill",
        "rank_distribution",
        "betrayal_betrayer",
        "betrayal_victim",
        "first_place",
        "earliest_out",
        "final2_win_rate",
        "average_words",
    ):
        for ext in ("html", "png", "svg"):
            assert (results / "plots" / f"{name}.{ext}").stat().st_size > 0
    calls = read_table(results / "calls.parquet", CallsSchema)
    assert set(calls["job"]) == {f"elimination/{gid}" for gid in game_dirs}
    stamps = {gid: log.stat().st_mtime_ns for gid, log in logs.items()}

    # a new lineup: its games run, the old ones are left alone, the ratings include all of them
    write_params(project, [LINEUP, NEW_LINEUP])
    run_snakemake(project, {"elimination_all"})
    now = sorted(p.name for p in (results / "games").iterdir())
    assert set(game_dirs) < set(now) and len(now) == 4
    for gid, log in logs.items():
        assert log.stat().st_mtime_ns == stamps[gid]
    board = pl.read_csv(results / "leaderboard.csv")
    assert board["games"].to_list() == [4, 4]


def test_one_game_with_the_real_local_model_in_a_seat(tmp_path: Path) -> None:
    """gemma-270m in P1; scripted bots vote it out in round 1, so it makes few (short) calls."""
    models = models_params(
        [
            {"name": "gemma-270m", "model": "local/gemma-3-270m", "sampling": {"temperature": 0.7, "max_tokens": 48}},
            {
                "name": "script",
                "bot": "script",
                "bot_options": {"replies": {f"r1/vote/P{i}": "P1: scripted" for i in range(2, 9)}},
            },
        ]
    )
    spec = GameSpec(
        "local01",
        ("gemma-270m",) + ("script",) * 7,
        reply_tokens=ReplyTokens(statement=6, preference=10, private=6, vote=6),
    )
    output = run_game(spec, models, tmp_path / "game", root=tmp_path)
    records = output.records
    assert seat(of_type(records, "elimination", 1)[0]["eliminated_player"]) == "P1"
    mine = [r for r in of_type(records, "conversation", 1) if seat(r["player_id"]) == "P1"]
    assert len(mine) == 1
    assert len([r for r in of_type(records, "private", 1) if seat(r["speaker_id"]) == "P1"]) == 3
    assert [r for r in of_type(records, "private_jury_reason") if seat(r["voter_id"]) == "P1"]
    calls = read_table(output.calls_path, CallsSchema)
    gemma = calls.filter(pl.col("roster_name") == "gemma-270m")
    assert 6 <= gemma.height <= 9  # statement, ranking, 3 private, vote (+ re-ask), jury (+ re-ask)
    assert gemma["tokens_out"].max() <= 10 and gemma["tokens_out"].sum() > 0
    game = read_game(output.log_path)
    assert game.ranks["P1"] == 8 and game.rows["games"][0]["matches_final_results"] is True
