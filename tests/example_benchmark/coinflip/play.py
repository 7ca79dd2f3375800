"""schedule, play, rate, report: the verbs every benchmark answers, as functions of a VerbCall."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import polars as pl

from coinflip.config import CoinflipParams, load
from coinflip.schemas import GamesSchema
from pipeline.core.artifacts import content_id, seed_from, write_json_atomic, write_table
from pipeline.core.artifacts.metrics_record import MetricsRecord, ModelMetrics, read_metrics
from pipeline.core.rating.multipass import Pairwise, RatingParams, rating_summary
from pipeline.core.run.verbs import VerbCall


def games(params: CoinflipParams) -> dict[str, tuple[str, str, int]]:
    """Game id -> (player a, player b, repeat). An id is the content id of all that decides the game
    (rules version, players, their biases, repeat), so a new player adds games and changes none."""
    found = {}
    for a, b in itertools.combinations(sorted(params.players), 2):
        for repeat in range(params.games_per_pair):
            decided_by = ["coinflip-v1", a, params.players[a], b, params.players[b], repeat]
            found[content_id(decided_by)] = (a, b, repeat)
    return found


def schedule(call: VerbCall) -> dict[str, dict[str, object]]:
    """Every scheduled game: the standard rules play one job per id, `schedule` lists them."""
    return {
        game_id: {"player_a": a, "player_b": b, "repeat": repeat}
        for game_id, (a, b, repeat) in sorted(games(load(call.params)).items())
    }


def play(call: VerbCall) -> None:
    """flip scheduled games; write <out>/games/<game_id>.json"""
    params = load(call.params)
    scheduled = games(params)
    for game_id in call.jobs:
        a, b, _ = scheduled[game_id]
        rng = random.Random(seed_from("coinflip", game_id))  # never the global random
        draws = {name: rng.random() ** (1.0 / max(params.players[name], 1e-6) - 1.0) for name in (a, b)}
        record = {
            "game_id": game_id,
            "player_a": a,
            "player_b": b,
            "draw_a": draws[a],
            "draw_b": draws[b],
            "winner": a if draws[a] >= draws[b] else b,
        }
        write_json_atomic(Path(call.out) / "games" / f"{game_id}.json", record)


def rate(call: VerbCall) -> None:
    """games.parquet, TrueSkill and metrics.json from every scheduled game"""
    params, out = load(call.params), Path(call.out)
    rows = [json.loads((out / "games" / f"{gid}.json").read_text()) for gid in sorted(games(params))]
    table = write_table(out / "games.parquet", pl.DataFrame(rows), GamesSchema, sort_by=["game_id"])
    events = [
        Pairwise(r["player_a"], r["player_b"], "a" if r["winner"] == r["player_a"] else "b")
        for r in table.iter_rows(named=True)
    ]
    summary = rating_summary(
        events,
        RatingParams(draw_probability=0.0),
        params.passes,
        seed_from("coinflip-rate"),
        params.bootstrap_resamples,
    )
    wins = table.group_by("winner").len()
    won = dict(zip(wins["winner"], wins["len"], strict=True))
    # the metrics record: each player's rating and rated games from its summary row, and the
    # benchmark's own metrics (`headline` names which the leaderboard shows)
    metrics = MetricsRecord(
        models={
            row["player"]: ModelMetrics.rated(row, {"wins": int(won.get(row["player"], 0))})
            for row in summary.iter_rows(named=True)
        }
    )
    metrics.write(out / "metrics.json")


def report(call: VerbCall) -> None:
    """summary.md from the ratings: what people read (a real benchmark draws plots)"""
    out = Path(call.out)
    rated = read_metrics(out / "metrics.json").rated()
    lines = ["| player | wins | TrueSkill mu | rank |", "| --- | ---: | ---: | ---: |"]
    for player, (rating, row) in sorted(rated.items(), key=lambda item: item[1][0].rank):
        lines.append(f"| {player} | {row.metrics['wins']} | {rating.mu:.2f} | {rating.rank} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
