"""Games of the embedded model many per job: how a schedule splits into shards, and that games
played concurrently in one shard (one model, one decoding batch) are the games played alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.core.models.gateway import Gateway
from pipeline.core.run.shards import ShardGame, jobs_for_games, run_shard
from pipeline.whoisspy.config import ReplyParams, RulesParams
from pipeline.whoisspy.engine import play_record, run_record
from pipeline.whoisspy.schedule import GameSpec, make_spec
from pipeline.xent.workflow import xent_rule_inputs
from tests.conftest import models_params

ROSTER = [
    {"name": "smol", "model": "local/smollm2-135m", "sampling": {"temperature": 0.7, "top_p": 0.95}},
    {"name": "api", "model": "openai/gpt-4o-mini"},
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
]


def write_models(path: Path, games_per_job: int) -> Path:
    data = {"roster": ROSTER, "parallel": {"games_per_job": games_per_job}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_embedded_model_games_get_shards_of_their_own(tmp_path: Path) -> None:
    seats = {
        "a1": ["api", "heuristic-bot"],
        "a2": ["api", "random-bot"],
        "l1": ["smol", "heuristic-bot"],
        "l2": ["smol", "random-bot"],
        "l3": ["smol", "api"],  # the embedded model plays: a local shard, whatever else sits there
        "b1": ["heuristic-bot", "random-bot"],
    }
    jobs = jobs_for_games(seats, write_models(tmp_path / "models.yaml", 2))
    assert jobs.solo == []  # bots-only games too go to shards (of their own)
    assert sorted(g for games in jobs.shards.values() for g in games) == ["a1", "a2", "b1", "l1", "l2", "l3"]
    local_games = sorted(g for shard in jobs.local for g in jobs.shards[shard])
    assert local_games == ["l1", "l2", "l3"]
    for shard, games in jobs.shards.items():  # never an API game beside an embedded-model or bot one
        assert len(games) <= 2 and (shard in jobs.local) == all(g.startswith("l") for g in games)
        assert len({g[0] for g in games}) == 1

    off = jobs_for_games(seats, write_models(tmp_path / "off.yaml", 0))
    assert sorted(off.solo) == sorted(seats) and not off.shards and not off.local


def test_xent_play_jobs_are_sharded_unless_shards_are_off(tmp_path: Path) -> None:
    params = tmp_path / "xent.yaml"
    params.write_text(
        yaml.safe_dump({"players": ["heuristic-bot", "random-bot"], "games": ["condense"], "judge": "word"})
    )
    sharded = xent_rule_inputs(str(params), str(write_models(tmp_path / "models.yaml", 64)))
    assert len(sharded.jobs) == 2 and len(sharded.shards) == 1
    (shard_id, job_ids), *_ = sharded.shards.items()
    assert sorted(job_ids) == sorted(sharded.job_maps)
    assert sharded.shard_maps[shard_id] == sorted({m for maps in sharded.job_maps.values() for m in maps})
    assert sharded.played == [f"results/xent/shards/{shard_id}.json"]

    solo = xent_rule_inputs(str(params), str(write_models(tmp_path / "off.yaml", 0)))
    assert solo.played == solo.jobs == sharded.jobs and not solo.shards


def game_spec(models: Any, seats: list[str], spy_seat: int, words: tuple[str, str]) -> GameSpec:
    return make_spec(
        models,
        variant="baseline",
        seats=seats,
        spy_seat=spy_seat,
        civilian_word=words[0],
        spy_word=words[1],
        rules=RulesParams(time_limit_s=600),
        replies=ReplyParams(speech_max_tokens=6, vote_max_tokens=3, reasoning_max_tokens=6),
    )


def comparable(record: Any) -> dict[str, Any]:
    """A record without what timing decides (each reply's latency)."""
    data = record.to_json()
    for event in data["events"]:
        event.pop("latency_s", None)
    return data


@pytest.mark.slow
def test_embedded_model_games_in_one_shard_are_the_games_played_alone(tmp_path: Path) -> None:
    models = models_params(ROSTER)
    specs = [
        game_spec(
            models,
            ["smol", "heuristic-bot", "random-bot", "heuristic-bot", "random-bot", "heuristic-bot"],
            0,
            ("tea", "coffee"),
        ),
        game_spec(
            models,
            ["heuristic-bot", "smol", "random-bot", "heuristic-bot", "random-bot", "heuristic-bot"],
            3,
            ("cat", "dog"),
        ),
    ]
    alone = {
        s.game_id: comparable(
            run_record(s, models, Gateway(models, job=f"alone/{s.game_id}", cache_dir=tmp_path / "a"))
        )
        for s in specs
    }
    together: dict[str, Any] = {}

    async def play(spec: GameSpec) -> None:
        gateway = Gateway(models, job=f"shard/{spec.game_id}", cache_dir=tmp_path / "b")  # no answer reused
        together[spec.game_id] = comparable(await play_record(spec, models, gateway))

    said: list[str] = []
    marker = tmp_path / "shard.json"
    status = run_shard(
        [ShardGame(s.game_id, s) for s in specs], play, lambda _: False, at_once=2, marker=marker, say=said.append
    )
    assert status == 0 and marker.is_file() and said[-1].startswith("played 2 game(s)")
    assert together == alone
    for spec, seat in zip(specs, ("P1", "P2")):  # the embedded model's seat spoke in both games
        assert any(e["type"] == "speech" and e["seat"] == seat for e in alone[spec.game_id]["events"])
