"""The adaptive Who is Spy schedule through the real workflow: `python -m pipeline run` in a work directory (the repository's Snakefile, real Snakemake, real games between bots).

The first run plays a round of one table until the round budget stops the rounds, then rates; a second
run plays nothing; a bot added to the pool gets a seat in the very next round and only new games are
played. Small on purpose (6 bots, one table a round, one round a stretch, 2 rating passes and no
bootstrap): bots spend no tokens, so the time is Snakemake's starts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.testing import adaptive

pytestmark = pytest.mark.slow

BENCH = "whoisspy"
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


def games(root: Path) -> dict[str, int]:
    """Each played game's record and its modification time (a replay would change it)."""
    return adaptive.stamps(adaptive.results(root, BENCH) / "games", "*.json", strip=".json")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return adaptive.played_workdir(
        tmp_path_factory.mktemp("adaptive-spy") / "work",
        METRICS,
        lambda root: adaptive.write_params(root, BENCH, WHOISSPY, roster=BOTS),
    )


def test_a_round_is_played_then_a_rerun_plays_nothing(played: Path) -> None:
    ledger = adaptive.rounds(played, BENCH)
    assert [r["round"] for r in ledger] == [1, 2]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["games"] == []
    (game,) = ledger[0]["games"]
    assert sorted(game["seats"]) == sorted(WHOISSPY["players"]) and list(games(played)) == [game["id"]]
    assert ledger[1]["read_games"] == [game["id"]]
    spy = game["seats"][game["spy_seat"]]
    moved = ledger[1]["standings"]
    assert moved[spy]["games"] == 1 and moved[spy]["mu"] != ledger[0]["standings"][spy]["mu"]
    found = adaptive.metrics(played, BENCH)
    assert set(found) == set(WHOISSPY["players"])
    assert all(
        {"opponent_win_rate", "opponent_win_rate_uniform", "opponent_win_rate_imputed"} <= set(row)
        for row in found.values()
    )
    adaptive.rerun_plays_nothing(played, BENCH, METRICS, ledger, games)


def test_a_new_bot_is_placed_first_and_nothing_is_replayed(played: Path, tmp_path: Path) -> None:
    root = adaptive.copy_workdir(played, tmp_path / "work")
    before, old_rounds = games(root), adaptive.rounds(root, BENCH)
    joined = json.loads(json.dumps(WHOISSPY))
    joined["players"].append(NEWCOMER["name"])
    adaptive.write_params(root, BENCH, joined, roster=[*BOTS, NEWCOMER])
    adaptive.run_pipeline(root, "run", METRICS)
    ledger = adaptive.rounds(root, BENCH)
    assert ledger[: len(old_rounds)] == old_rounds  # the earlier rounds stay as they were
    first_new = ledger[len(old_rounds)]
    assert first_new["placement"] == [NEWCOMER["name"]] and NEWCOMER["name"] in first_new["tables"][0]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["budget"]["since_round"] == first_new["round"]
    after = games(root)
    assert {k: after[k] for k in before} == before  # no game played twice
    assert set(after) - set(before) == {g["id"] for g in first_new["games"]}
    assert NEWCOMER["name"] in adaptive.metrics(root, BENCH)
