"""Who is Spy end to end: the Snakemake stage on bots in a temp project, and a real local-model game."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.schemas import CallsSchema, RatingsSchema, read_table
from pipeline.core.models.gateway import Gateway
from pipeline.leaderboard.build import build_leaderboard
from pipeline.leaderboard.config import LeaderboardParams
from pipeline.whoisspy.config import ReplyParams, RulesParams
from pipeline.whoisspy.engine import run_game
from pipeline.whoisspy.schedule import make_spec
from pipeline.whoisspy.schemas import GamesSchema, LeaderboardSchema, SeatsSchema, VariantsSchema, VotesSchema
from tests.conftest import models_params, write_roster
from tests.core.artifacts.test_metrics_record import assert_metrics_record
from tests.roster.test_roster_stage import run_snakemake

pytestmark = pytest.mark.slow
BOTS = [{"name": "heuristic-bot", "bot": "heuristic"}, {"name": "random-bot", "bot": "random"}]


def write_params(project: Path, variants: list[str]) -> None:
    params = {
        "players": ["heuristic-bot"],
        "fill": ["heuristic-bot", "random-bot"],
        "games_per_role": 1,
        "variants": variants,
        "rating": {"passes": 2, "bootstrap_resamples": 5},
    }
    (project / "params/whoisspy.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def snakemake(project: Path) -> None:
    cwd = os.getcwd()
    try:
        run_snakemake(project, {"whoisspy_all"})
    finally:
        os.chdir(cwd)


def stamps(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if p.is_file() and "logs" not in p.parts
    }


def test_whoisspy_stage_through_snakemake(project: Path) -> None:
    write_roster(project, BOTS)
    write_params(project, ["baseline"])
    snakemake(project)
    out = project / "results/whoisspy"

    games = read_table(out / "games.parquet", GamesSchema)
    assert games.height == 2 and set(games["focal_role"]) == {"spy", "civilian"}
    assert (games["score_total"] - 12).abs().max() < 1e-9
    for game_id in games["game_id"]:
        record = json.loads((out / "games" / f"{game_id}.json").read_text())
        assert {"game_id", "variant", "words", "players", "events", "winner"} <= set(record)
        assert {"seat", "model", "role", "word", "score", "eliminated_round", "eliminated_by", "fouls"} <= set(
            record["players"][0]
        )
    read_table(out / "seats.parquet", SeatsSchema)
    read_table(out / "votes.parquet", VotesSchema)
    board = read_table(out / "leaderboard.parquet", LeaderboardSchema)
    assert set(board["model"]) == {"heuristic-bot", "random-bot"}
    read_table(out / "ratings.parquet", RatingsSchema)
    assert set(read_table(out / "variants.parquet", VariantsSchema)["variant"]) == {"baseline"}
    calls = read_table(out / "calls.parquet", CallsSchema)
    assert calls.height > 0 and (calls["cost_usd"] == 0).all()
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"heuristic-bot", "random-bot"}
    assert metrics["heuristic-bot"]["points"] == pytest.approx(
        board.filter(pl.col("model") == "heuristic-bot")["points"][0], abs=1e-4
    )
    for plot in ("points_leaderboard", "win_rate_by_role", "vote_accuracy", "foul_rate", "variants"):
        for ext in ("html", "png", "svg"):
            assert (out / "plots" / f"{plot}.{ext}").stat().st_size > 0
    assert_games_are_the_rated_games(project)

    # nothing changed: nothing reruns
    before = stamps(out)
    snakemake(project)
    assert stamps(out) == before

    # a new variant adds its games; the games already played stay as they are
    write_params(project, ["baseline", "attack"])
    snakemake(project)
    after = stamps(out)
    old_games = {k: v for k, v in before.items() if k.startswith("games/")}
    assert all(after[k] == v for k, v in old_games.items())
    assert len([k for k in after if k.startswith("games/") and k.endswith(".json")]) == 4
    assert read_table(out / "games.parquet", GamesSchema).height == 4
    variants = read_table(out / "variants.parquet", VariantsSchema)
    attack = variants.filter((pl.col("variant") == "attack") & (pl.col("model") == "heuristic-bot"))
    assert attack.height and attack["baseline"].is_not_null().all()
    assert "attack_foul_rate" in json.loads((out / "metrics.json").read_text())["heuristic-bot"]


def shown_games(svg: str) -> dict[str, int]:
    """model -> the games a chart's marks say (their aria-labels: "...; model: m; ...; games: 2; ...")."""
    return {model: int(games) for model, games in re.findall(r"model: ([^;]+);[^\"]*?games: (\d+);", svg)}


def assert_games_are_the_rated_games(project: Path) -> None:
    """metrics.json validates as the metrics record, and every page shows a bot's rated games:
    metrics.json, the points plot, and the leaderboard's page, table and JSON. Two bots fill the six
    seats of each game, so a bot's seats outnumber its games (the demo's pages once showed seats)."""
    out = project / "results/whoisspy"
    ratings = read_table(out / "ratings.parquet", RatingsSchema)
    rated = dict(zip(ratings["player"], ratings["events"]))
    assert rated == {"heuristic-bot": 2, "random-bot": 2}
    record = assert_metrics_record(out / "metrics.json", rated)
    seats = {model: row.metrics["seats"] for model, row in record.models.items()}
    assert sum(seats.values()) == 12 and max(seats.values()) > 2
    assert shown_games((out / "plots/points_leaderboard.svg").read_text()) == rated

    params = LeaderboardParams(version="1.0", benchmarks=["whoisspy"])
    build_leaderboard(params, project / "results", project / "board", project, models=project / "params/models.yaml")
    page = (project / "board/site/whoisspy/index.html").read_text()
    rows = re.findall(
        r'<td>[^<]*</td><td>([^<]+)</td><td class="num">[^<]*</td>\s*<td class="num">[^<]*</td>'
        r'<td class="num">(\d+)</td>',
        page,
    )
    assert {model: int(games) for model, games in rows} == rated
    assert shown_games((project / "board/site/whoisspy/plots/points_leaderboard.svg").read_text()) == rated
    board = json.loads((project / "board/leaderboard.json").read_text())
    assert {model: row["whoisspy_trueskill_games"] for model, row in board.items()} == rated


def test_a_game_with_the_real_local_model(tmp_path: Path) -> None:
    roster = [
        {"name": "gemma-270m", "model": "local/gemma-3-270m", "sampling": {"temperature": 0.7, "top_p": 0.95}},
        *BOTS,
    ]
    models = models_params(roster)
    spec = make_spec(
        models,
        variant="attack",
        seats=["heuristic-bot", "heuristic-bot", "gemma-270m", "heuristic-bot", "random-bot", "heuristic-bot"],
        spy_seat=2,
        civilian_word="tea",
        spy_word="coffee",
        rules=RulesParams(time_limit_s=600),
        replies=ReplyParams(speech_max_tokens=8, vote_max_tokens=3, reasoning_max_tokens=8),
    )
    gateway = Gateway(models, job="whoisspy-local", cache_dir=tmp_path / "cache")
    record = run_game(spec, models, gateway)
    assert record["winner"] in ("spy", "civilians") and record["events"][-1]["type"] == "end"
    assert sum(p["score"] for p in record["players"]) == pytest.approx(12)
    gemma_speeches = [e for e in record["events"] if e["type"] == "speech" and e["seat"] == "P3"]
    assert gemma_speeches and all(len(e["text"]) <= 400 for e in gemma_speeches)
    calls = gateway.calls_frame().filter(pl.col("roster_name") == "gemma-270m")
    assert calls.height >= 1 and (calls["tokens_out"] >= 1).all() and not calls["cache_hit"].any()
    assert (calls["tokens_out"] <= 8).all()
