"""The adaptive Xent schedule through the real workflow: `python -m pipeline run` in a work directory (the
repository's Snakefile, real Snakemake, real plays of bots scored by the model-free `word` judge).

The first run plays one round of one table (two bots on the one map) until the round budget stops the
rounds, then rescores and rates; a second run plays nothing; a bot added to the pool sits at the very
next table, and only its own play is made: its table-mate's score on that map is the one it played
before. Small on purpose (one game of one map, one round a stretch, 2 rating passes, no bootstrap,
the rated metrics rather than the plots, and only the rounds after the newcomer joins): bots and the
word judge cost nothing, so the time is Snakemake's and the jobs' starts (about 25 s of CPU).
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

BOTS = [{"name": "heuristic-bot", "bot": "heuristic"}, {"name": "random-bot", "bot": "random"}]
NEWCOMER = {"name": "terse-bot", "bot": "heuristic", "bot_options": {"words": 2}}
XENT: dict[str, Any] = {
    "players": [b["name"] for b in BOTS],
    "opponent": "random-bot",
    "games": ["condense"],
    "maps_per_game": 1,
    "rounds": 1,
    "judge": "word",
    "schedule": {"adaptive": {"enabled": True, "table_size": 2, "max_rounds": 1, "max_games": 20, "seed": 1}},
    "rating": {"passes": 2, "bootstrap_resamples": 0},
}
METRICS = "results/xent/metrics.json"


def write_params(root: Path, bots: list[dict[str, Any]], xent: dict[str, Any]) -> None:
    models = yaml.safe_load((root / "params" / "models.yaml").read_text())
    models["roster"] = bots
    (root / "params" / "models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    (root / "params" / "xent.yaml").write_text(yaml.safe_dump(xent, sort_keys=False))


def pipeline(root: Path, verb: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(pipeline_command(root, verb, *args), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def rounds(root: Path) -> list[dict[str, Any]]:
    folder = root / "results" / "xent" / "rounds"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("round-*.json"))]


def plays(root: Path) -> dict[str, int]:
    """Each play record (`<game>/<job_id>`) and its modification time (a replay would change it)."""
    folder = root / "results" / "xent" / "play"
    return {str(p.relative_to(folder).with_suffix("")): p.stat().st_mtime_ns for p in sorted(folder.rglob("*.json"))}


def metrics(root: Path) -> dict[str, dict[str, Any]]:
    return json.loads((root / METRICS).read_text())


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_workdir(tmp_path_factory.mktemp("adaptive-xent") / "work")
    write_params(root, BOTS, XENT)
    pipeline(root, "run", METRICS)
    return root


def test_a_round_is_played_then_a_rerun_plays_nothing(played: Path) -> None:
    ledger = rounds(played)
    assert [r["round"] for r in ledger] == [1, 2]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["games"] == []
    (table,) = ledger[0]["games"]
    assert sorted(table["seats"]) == sorted(XENT["players"]) and table["game"] == "condense"
    assert set(plays(played)) == {f"condense/{job}" for job in table["plays"]}
    assert ledger[1]["read_games"] == [table["id"]]
    moved = ledger[1]["standings"]
    assert all(moved[name]["games"] == 1 for name in XENT["players"])
    found = metrics(played)
    assert set(found) == set(XENT["players"])
    assert all(
        {"xent_score", "trueskill_mu", "opponent_win_rate", "opponent_win_rate_uniform", "opponent_win_rate_imputed"}
        <= set(row)
        for row in found.values()
    )
    before, files = plays(played), [json.dumps(r) for r in ledger]
    again = pipeline(played, "run", METRICS)
    assert "Nothing to be done" in again.stderr + again.stdout
    assert "stopped (max_rounds)" in again.stderr
    assert plays(played) == before and [json.dumps(r) for r in rounds(played)] == files


def test_a_new_bot_is_placed_first_and_only_its_play_is_made(played: Path, tmp_path: Path) -> None:
    root = tmp_path / "work"
    shutil.copytree(played, root, symlinks=True)
    before, old_rounds = plays(root), rounds(root)
    joined = json.loads(json.dumps(XENT))
    joined["players"].append(NEWCOMER["name"])
    write_params(root, [*BOTS, NEWCOMER], joined)
    pipeline(root, "run", "xent_rounds")  # the rounds only: the first test rates
    ledger = rounds(root)
    assert ledger[: len(old_rounds)] == old_rounds  # the earlier rounds stay as they were
    first_new = ledger[len(old_rounds)]
    assert first_new["placement"] == [NEWCOMER["name"]] and NEWCOMER["name"] in first_new["tables"][0]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["budget"]["since_round"] == first_new["round"]
    (table,) = first_new["games"]
    after = plays(root)
    assert {k: after[k] for k in before} == before  # no play made twice
    newcomer = table["plays"][table["seats"].index(NEWCOMER["name"])]
    assert set(after) - set(before) == {f"condense/{newcomer}"}  # the one map: its table-mate's score stands
