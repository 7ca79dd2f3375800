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
from pathlib import Path
from typing import Any

import pytest

from pipeline.testing import adaptive

pytestmark = pytest.mark.slow

BENCH = "xent"
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


def plays(root: Path) -> dict[str, int]:
    """Each play record (`<game>/<job_id>`) and its modification time (a replay would change it)."""
    return adaptive.stamps(adaptive.results(root, BENCH) / "play", "**/*.json", strip=".json")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return adaptive.played_workdir(
        tmp_path_factory.mktemp("adaptive-xent") / "work",
        METRICS,
        lambda root: adaptive.write_params(root, BENCH, XENT, roster=BOTS),
    )


def test_a_round_is_played_then_a_rerun_plays_nothing(played: Path) -> None:
    ledger = adaptive.rounds(played, BENCH)
    assert [r["round"] for r in ledger] == [1, 2]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["games"] == []
    (table,) = ledger[0]["games"]
    assert sorted(table["seats"]) == sorted(XENT["players"]) and table["game"] == "condense"
    assert set(plays(played)) == {f"condense/{job}" for job in table["plays"]}
    assert ledger[1]["read_games"] == [table["id"]]
    moved = ledger[1]["standings"]
    assert all(moved[name]["games"] == 1 for name in XENT["players"])
    found = adaptive.metrics(played, BENCH)
    assert set(found) == set(XENT["players"])
    assert all(
        {"xent_score", "trueskill_mu", "opponent_win_rate", "opponent_win_rate_uniform", "opponent_win_rate_imputed"}
        <= set(row)
        for row in found.values()
    )
    adaptive.rerun_plays_nothing(played, BENCH, METRICS, ledger, plays)


def test_a_new_bot_is_placed_first_and_only_its_play_is_made(played: Path, tmp_path: Path) -> None:
    root = adaptive.copy_workdir(played, tmp_path / "work")
    before, old_rounds = plays(root), adaptive.rounds(root, BENCH)
    joined = json.loads(json.dumps(XENT))
    joined["players"].append(NEWCOMER["name"])
    adaptive.write_params(root, BENCH, joined, roster=[*BOTS, NEWCOMER])
    adaptive.run_pipeline(root, "run", "xent_rounds")  # the rounds only: the first test rates
    ledger = adaptive.rounds(root, BENCH)
    assert ledger[: len(old_rounds)] == old_rounds  # the earlier rounds stay as they were
    first_new = ledger[len(old_rounds)]
    assert first_new["placement"] == [NEWCOMER["name"]] and NEWCOMER["name"] in first_new["tables"][0]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["budget"]["since_round"] == first_new["round"]
    (table,) = first_new["games"]
    after = plays(root)
    assert {k: after[k] for k in before} == before  # no play made twice
    newcomer = table["plays"][table["seats"].index(NEWCOMER["name"])]
    assert set(after) - set(before) == {f"condense/{newcomer}"}  # the one map: its table-mate's score stands
