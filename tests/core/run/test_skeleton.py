"""The skeleton the core makes from a game contract (pipeline.core.run.skeleton): Who is Spy's and the
Elimination Game's `schedule` and `play` verbs, their rules' schedule and their plan's estimators
have no code of the benchmark's own but the contract, and they behave as the user sees them: the
schedule lists the contract's games, `play` writes a game the contract plays (one alone, several as a
shard that skips what is done), a wrong id names the fix, and the plan prices every scheduled game."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.cli import main
from pipeline.core.artifacts import ParamsError
from pipeline.core.models import Gateway, load_models
from pipeline.core.run.contract import game_contract, make_game_players, play, schedule
from pipeline.core.run.declaration import ScheduleCall
from pipeline.core.run.estimates import PlanContext
from pipeline.core.run.plan import PlannedJob
from pipeline.core.run.registry import benchmark
from tests.environments.test_environments import without_clocks

BOTS = [
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
    {"name": "other-random", "bot": "random"},
]
API = {"name": "gpt-4o", "model": "openai/gpt-4o"}
PARAMS = {
    "whoisspy": {"players": ["heuristic-bot"], "fill": ["random-bot", "other-random"], "variants": ["baseline"]},
    "elimination": {
        "seats": 4,
        "schedule": {
            "lineups": [["heuristic-bot", "random-bot", "other-random", "random-bot"]],
            "rotations": 2,
            "max_seats_per_player": 2,
        },
    },
}


def project(root: Path, name: str, roster: list[dict[str, Any]] = BOTS) -> tuple[str, str]:
    (root / "params").mkdir(parents=True, exist_ok=True)
    (root / "params/models.yaml").write_text(yaml.safe_dump({"roster": roster}))
    (root / f"params/{name}.yaml").write_text(yaml.safe_dump(PARAMS[name]))
    return str(root / f"params/{name}.yaml"), str(root / "params/models.yaml")


def contract_record(name: str, params: str, models: str, game_id: str, root: Path) -> Any:
    """The game as the contract alone plays it, the players made by the core."""
    contract = game_contract(name)
    roster = load_models(models)
    game = next(g for g in schedule(contract, params, roster) if g.id == game_id)
    gateway = Gateway(roster, job=f"{name}/{game_id}", root=root)
    return contract.to_json(asyncio.run(play(contract, game, make_game_players(contract, game, roster, gateway))))


def written_record(name: str, folder: Path, game_id: str) -> Any:
    if name == "whoisspy":
        return json.loads((folder / f"{game_id}.json").read_text())
    (log,) = (folder / game_id).glob("game_*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("name", ["whoisspy", "elimination"])
def test_the_generated_verbs_list_and_play_the_contracts_games(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    params, models = project(tmp_path, name)
    monkeypatch.chdir(tmp_path)
    games = schedule(name, params, models)
    assert len(games) >= 2
    out = tmp_path / "games"
    common = ["--params", params, "--models", models]

    assert main([name, "schedule", "--json", *common]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [row["game_id"] for row in listed] == [g.id for g in games]

    # the rules' schedule: one play job per game, the same ids and seats
    scheduled = benchmark(name).rules.schedule(ScheduleCall(name, params, models, str(tmp_path / "results")))
    assert {job_id: job.seats for job_id, job in scheduled.jobs.items()} == {g.id: g.seats for g in games}

    # one game alone, then the rest as a shard that skips the one already written
    first, *rest = games
    assert main([name, "play", first.id, "--out", str(out), *common]) == 0
    assert without_clocks(written_record(name, out, first.id)) == without_clocks(
        contract_record(name, params, models, first.id, tmp_path)
    )
    first_files = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    marker = tmp_path / "shard.json"
    ids = ",".join(g.id for g in games)
    assert main([name, "play", ids, "--out", str(out), "--marker", str(marker), *common]) == 0
    assert marker.is_file()
    for game in rest:
        assert without_clocks(written_record(name, out, game.id)) == without_clocks(
            contract_record(name, params, models, game.id, tmp_path)
        )
    assert {p: p.stat().st_mtime_ns for p in first_files} == first_files  # the game done before is not played again

    capsys.readouterr()
    assert main([name, "play", "0123456789abcdef", "--out", str(out), *common]) == 2
    assert f"not in the schedule of {params}" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["whoisspy", "elimination"])
def test_the_generated_estimators_price_every_scheduled_game(name: str, tmp_path: Path) -> None:
    roster = [*BOTS, API]
    spec = dict(PARAMS[name])
    if name == "whoisspy":
        spec["players"] = ["gpt-4o"]
    else:
        spec["schedule"] = {"lineups": [["gpt-4o", "random-bot", "other-random", "heuristic-bot"]], "rotations": 1}
    (tmp_path / "params").mkdir()
    (tmp_path / "params/models.yaml").write_text(yaml.safe_dump({"roster": roster}))
    (tmp_path / f"params/{name}.yaml").write_text(yaml.safe_dump(spec))
    context = PlanContext(tmp_path, load_models(tmp_path / "params/models.yaml"))
    estimators = benchmark(name).load_estimators()
    assert set(estimators) == {f"{name}_play", f"{name}_shard"}
    games = schedule(name, tmp_path / f"params/{name}.yaml", tmp_path / "params/models.yaml")
    per_game = [
        {e.model: e for e in estimators[f"{name}_play"](PlannedJob(f"{name}_play", "new", {"game_id": g.id}), context)}
        for g in games
    ]
    for estimates in per_game:
        assert estimates["gpt-4o"].calls > 0 and estimates["gpt-4o"].expected_calls > 0
        assert all(e.calls == 0 for model, e in estimates.items() if model != "gpt-4o")  # bots ask nothing
    with pytest.raises(ParamsError, match="not in the schedule"):
        estimators[f"{name}_play"](PlannedJob(f"{name}_play", "new", {"game_id": "0123456789abcdef"}), context)
