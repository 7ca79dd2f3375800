"""The adaptive Who is Spy schedule through the real workflow: `python -m pipeline run` in a work directory (the repository's Snakefile, real Snakemake, real games between bots).

The first run plays a round of one table until the round budget stops the rounds, then rates; a second
run plays nothing; a bot added to the pool gets a seat in the very next round and only new games are
played. Small on purpose (6 bots, one table a round, one round a stretch, 2 rating passes and no
bootstrap): bots spend no tokens, so the time is Snakemake's starts.
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

BOTS = [{"name": f"bot-{k}", "bot": "heuristic" if k % 2 else "random"} for k in range(6)]
NEWCOMER = {"name": "bot-new", "bot": "heuristic"}
WHOISSPY: dict[str, Any] = {
    "players": [b["name"] for b in BOTS],
    "fill": [BOTS[0]["name"]],
    "variants": ["baseline"],
    "schedule": {"adaptive": {"enabled": True, "tables_per_round": 1, "max_rounds": 1, "max_games": 20, "seed": 1}},
    "rating": {"passes": 2, "bootstrap_resamples": 0},
}
# the rated metrics, not whoisspy_all: the plots would add a report job to every run and test nothing here
METRICS = "results/whoisspy/metrics.json"


def write_params(root: Path, bots: list[dict[str, Any]], whoisspy: dict[str, Any]) -> None:
    models = yaml.safe_load((root / "params" / "models.yaml").read_text())
    models["roster"] = bots
    (root / "params" / "models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    (root / "params" / "whoisspy.yaml").write_text(yaml.safe_dump(whoisspy, sort_keys=False))


def pipeline(root: Path, verb: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(pipeline_command(root, verb, *args), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def rounds(root: Path) -> list[dict[str, Any]]:
    folder = root / "results" / "whoisspy" / "rounds"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("round-*.json"))]


def games(root: Path) -> dict[str, int]:
    """Each played game's record and its modification time (a replay would change it)."""
    folder = root / "results" / "whoisspy" / "games"
    return {p.name.removesuffix(".json"): p.stat().st_mtime_ns for p in sorted(folder.glob("*.json"))}


def metrics(root: Path) -> dict[str, dict[str, Any]]:
    return json.loads((root / "results" / "whoisspy" / "metrics.json").read_text())


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_workdir(tmp_path_factory.mktemp("adaptive-spy") / "work")
    write_params(root, BOTS, WHOISSPY)
    pipeline(root, "run", METRICS)
    return root


def test_a_round_is_played_then_a_rerun_plays_nothing(played: Path) -> None:
    ledger = rounds(played)
    assert [r["round"] for r in ledger] == [1, 2]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["games"] == []
    (game,) = ledger[0]["games"]
    assert sorted(game["seats"]) == sorted(WHOISSPY["players"]) and list(games(played)) == [game["id"]]
    assert ledger[1]["read_games"] == [game["id"]]
    spy = game["seats"][game["spy_seat"]]
    moved = ledger[1]["standings"]
    assert moved[spy]["games"] == 1 and moved[spy]["mu"] != ledger[0]["standings"][spy]["mu"]
    found = metrics(played)
    assert set(found) == set(WHOISSPY["players"])
    assert all(
        {"opponent_win_rate", "opponent_win_rate_uniform", "opponent_win_rate_imputed"} <= set(row)
        for row in found.values()
    )
    before, files = games(played), [json.dumps(r) for r in ledger]
    again = pipeline(played, "run", METRICS)
    assert "Nothing to be done" in again.stderr + again.stdout
    assert "stopped (max_rounds)" in again.stderr
    assert games(played) == before and [json.dumps(r) for r in rounds(played)] == files


def test_a_new_bot_is_placed_first_and_nothing_is_replayed(played: Path, tmp_path: Path) -> None:
    root = tmp_path / "work"
    shutil.copytree(played, root, symlinks=True)
    before, old_rounds = games(root), rounds(root)
    joined = json.loads(json.dumps(WHOISSPY))
    joined["players"].append(NEWCOMER["name"])
    write_params(root, [*BOTS, NEWCOMER], joined)
    pipeline(root, "run", METRICS)
    ledger = rounds(root)
    assert ledger[: len(old_rounds)] == old_rounds  # the earlier rounds stay as they were
    first_new = ledger[len(old_rounds)]
    assert first_new["placement"] == [NEWCOMER["name"]] and NEWCOMER["name"] in first_new["tables"][0]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["budget"]["since_round"] == first_new["round"]
    after = games(root)
    assert {k: after[k] for k in before} == before  # no game played twice
    assert set(after) - set(before) == {g["id"] for g in first_new["games"]}
    assert NEWCOMER["name"] in metrics(root)
