"""The adaptive Elimination schedule through the real workflow: `python -m pipeline run elimination_all`
in a work directory (the repository's Snakefile, real Snakemake, real games between graded bots).

The first run plays rounds until a budget stops them, then rates; a second run plays nothing; a bot
added to the pool gets a round of its own first and only new games; the plan shows the expected games.
Small on purpose (9 bots, 4 seats, 2 tables a round, one round a stretch, 4 rating passes): each test
takes about 5 to 25 s on 2 idle cores.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.testing.project import make_workdir, pipeline_command

pytestmark = pytest.mark.slow

BOTS = [{"name": f"bot-{k}", "bot": "heuristic", "bot_options": {"skill": round(k / 8, 3)}} for k in range(9)]
NEWCOMER = {"name": "bot-new", "bot": "heuristic", "bot_options": {"skill": 0.95}}
ELIMINATION: dict[str, Any] = {
    "seats": 4,
    "history_rounds": 0,
    "schedule": {
        "rotations": 1,
        "players": [b["name"] for b in BOTS],
        "adaptive": {"enabled": True, "tables_per_round": 2, "max_rounds": 1, "max_games": 40, "seed": 1},
    },
    "rating": {"passes": 4, "bootstrap_resamples": 0},
}


def write_params(root: Path, bots: list[dict[str, Any]], elimination: dict[str, Any]) -> None:
    models = yaml.safe_load((root / "params" / "models.yaml").read_text())
    models["roster"] = bots
    (root / "params" / "models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    (root / "params" / "elimination.yaml").write_text(yaml.safe_dump(elimination, sort_keys=False))


def pipeline(root: Path, verb: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(pipeline_command(root, verb, *args), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def rounds(root: Path) -> list[dict[str, Any]]:
    folder = root / "results" / "elimination" / "rounds"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("round-*.json"))]


def game_folders(root: Path) -> dict[str, float]:
    """Each played game's folder and its calls table's modification time (a replay would change it)."""
    games = root / "results" / "elimination" / "games"
    return {p.name: (p / "calls.parquet").stat().st_mtime_ns for p in sorted(games.iterdir())}


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_workdir(tmp_path_factory.mktemp("adaptive") / "work")
    write_params(root, BOTS, ELIMINATION)
    pipeline(root, "run", "elimination_all")
    return root


def copy_of(played: Path, into: Path) -> Path:
    shutil.copytree(played, into, symlinks=True)
    return into


def test_rounds_are_played_then_a_rerun_plays_nothing(played: Path) -> None:
    ledger = rounds(played)
    assert [r["round"] for r in ledger] == [1, 2]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["games"] == []
    chosen = [g["id"] for r in ledger for g in r["games"]]
    assert len(chosen) == 2 and sorted(game_folders(played)) == sorted(chosen)
    assert sorted(ledger[1]["read_games"]) == sorted(g["id"] for g in ledger[0]["games"])
    metrics = json.loads((played / "results" / "elimination" / "metrics.json").read_text())
    seated = {name for r in ledger for table in r["tables"] for name in table}
    assert set(metrics) == seated
    assert all("opponent_win_rate_uniform" in row and "opponent_win_rate" in row for row in metrics.values())
    before, files = game_folders(played), [json.dumps(r) for r in ledger]
    again = pipeline(played, "run", "elimination_all")
    assert "Nothing to be done" in again.stderr + again.stdout
    assert "stopped (max_rounds)" in again.stderr
    assert game_folders(played) == before and [json.dumps(r) for r in rounds(played)] == files


def test_a_new_bot_gets_its_games_first_and_nothing_is_replayed(played: Path, tmp_path: Path) -> None:
    root = copy_of(played, tmp_path / "work")
    before, old_rounds = game_folders(root), rounds(root)
    joined = json.loads(json.dumps(ELIMINATION))
    joined["schedule"]["players"].append(NEWCOMER["name"])
    write_params(root, [*BOTS, NEWCOMER], joined)
    pipeline(root, "run", "elimination_all")
    ledger = rounds(root)
    assert ledger[: len(old_rounds)] == old_rounds  # the earlier rounds stay as they were
    first_new = ledger[len(old_rounds)]
    # the newcomer (and any bot the first round left out) has no game yet: placed in the very next round
    assert NEWCOMER["name"] in first_new["placement"]
    seated = {name for table in first_new["tables"] for name in table}
    assert set(first_new["placement"]) <= seated
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["budget"]["since_round"] == first_new["round"]
    after = game_folders(root)
    assert {k: after[k] for k in before} == before  # no game played twice
    new_games = {g["id"] for r in ledger[len(old_rounds) :] for g in r["games"]}
    assert set(after) - set(before) == new_games and len(new_games) == 2
    metrics = json.loads((root / "results" / "elimination" / "metrics.json").read_text())
    assert NEWCOMER["name"] in metrics


def test_the_plan_shows_the_rounds_and_the_games_to_come(played: Path, tmp_path: Path) -> None:
    root = copy_of(played, tmp_path / "work")
    more = json.loads(json.dumps(ELIMINATION))
    more["schedule"]["adaptive"]["max_rounds"] = 4  # a raised budget: the stopped rounds go on
    write_params(root, BOTS, more)
    shown = pipeline(root, "plan", "elimination_all")
    line = next(x for x in shown.stdout.splitlines() if x.startswith("adaptive elimination:"))
    assert "2 round(s), 2 game(s) chosen (2 finished, 0 to play)" in line
    assert "expected further games to the stopping rule" in line
    saved = json.loads((root / "results" / "plan" / "plan.json").read_text())["adaptive"][0]
    assert 0 < saved["further_mean"] <= saved["further_high"] <= 6  # 3 more rounds of 2 games at most
    assert saved["cost_per_game"] == 0.0  # bots cost nothing
