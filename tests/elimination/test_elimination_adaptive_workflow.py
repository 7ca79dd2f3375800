"""The adaptive Elimination schedule through the real workflow: `python -m pipeline run elimination_all`
in a work directory (the repository's Snakefile, real Snakemake, real games between graded bots).

The first run plays rounds until a budget stops them, then rates; a second run plays nothing; a bot
added to the pool gets a round of its own first and only new games; the plan shows the expected games.
Small on purpose (9 bots, 4 seats, 2 tables a round, one round a stretch, 4 rating passes): each test
takes about 5 to 25 s on 2 idle cores.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.testing import adaptive

pytestmark = pytest.mark.slow

BENCH = "elimination"
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


def game_folders(root: Path) -> dict[str, int]:
    """Each played game's folder and its calls table's modification time (a replay would change it)."""
    return adaptive.stamps(adaptive.results(root, BENCH) / "games", "*", inner="calls.parquet")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return adaptive.played_workdir(
        tmp_path_factory.mktemp("adaptive") / "work",
        "elimination_all",
        lambda root: adaptive.write_params(root, BENCH, ELIMINATION, roster=BOTS),
    )


def test_rounds_are_played_then_a_rerun_plays_nothing(played: Path) -> None:
    ledger = adaptive.rounds(played, BENCH)
    assert [r["round"] for r in ledger] == [1, 2]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["games"] == []
    chosen = [g["id"] for r in ledger for g in r["games"]]
    assert len(chosen) == 2 and sorted(game_folders(played)) == sorted(chosen)
    assert sorted(ledger[1]["read_games"]) == sorted(g["id"] for g in ledger[0]["games"])
    found = adaptive.metrics(played, BENCH)
    seated = {name for r in ledger for table in r["tables"] for name in table}
    assert set(found) == seated
    assert all("opponent_win_rate_uniform" in row and "opponent_win_rate" in row for row in found.values())
    adaptive.rerun_plays_nothing(played, BENCH, "elimination_all", ledger, game_folders)


def test_a_new_bot_gets_its_games_first_and_nothing_is_replayed(played: Path, tmp_path: Path) -> None:
    root = adaptive.copy_workdir(played, tmp_path / "work")
    before, old_rounds = game_folders(root), adaptive.rounds(root, BENCH)
    joined = json.loads(json.dumps(ELIMINATION))
    joined["schedule"]["players"].append(NEWCOMER["name"])
    adaptive.write_params(root, BENCH, joined, roster=[*BOTS, NEWCOMER])
    adaptive.run_pipeline(root, "run", "elimination_all")
    ledger = adaptive.rounds(root, BENCH)
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
    assert NEWCOMER["name"] in adaptive.metrics(root, BENCH)


def test_the_plan_shows_the_rounds_and_the_games_to_come(played: Path, tmp_path: Path) -> None:
    root = adaptive.copy_workdir(played, tmp_path / "work")
    more = json.loads(json.dumps(ELIMINATION))
    more["schedule"]["adaptive"]["max_rounds"] = 4  # a raised budget: the stopped rounds go on
    adaptive.write_params(root, BENCH, more, roster=BOTS)
    shown = adaptive.run_pipeline(root, "plan", "elimination_all")
    line = next(x for x in shown.stdout.splitlines() if x.startswith("adaptive elimination:"))
    assert "2 round(s), 2 game(s) chosen (2 finished, 0 to play)" in line
    assert "expected further games to the stopping rule" in line
    saved = json.loads((root / "results" / "plan" / "plan.json").read_text())["adaptive"][0]
    assert 0 < saved["further_mean"] <= saved["further_high"] <= 6  # 3 more rounds of 2 games at most
    assert saved["cost_per_game"] == 0.0  # bots cost nothing
