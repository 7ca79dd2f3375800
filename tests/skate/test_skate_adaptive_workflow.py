"""The adaptive SKATE schedule through the real workflow: `python -m pipeline run` in a work directory
(the repository's Snakefile, real Snakemake, real jobs between bots: the setter bot's programs run in
the sandbox, the answerers answer from their distributions).

The first run plays one round (the setter's question, one table of both answerers) until the round
budget stops the rounds; a second run plays nothing; a bot added to the pool sits at the very next
round's table, only that round's jobs are played, and the game is rated. Small on purpose (two
answerers, one table a round, one round a stretch, 2 rating passes, no bootstrap, no plots): bots
spend no tokens, so the time is Snakemake's starts and the jobs' imports (the second round's
uniqueness check loads the embedding model once).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.testing import adaptive

pytestmark = pytest.mark.slow

BENCH = "skate"
BOTS: list[dict[str, Any]] = [{"name": "setter-bot", "bot": "setter"}, {"name": "oracle-bot", "bot": "oracle"}]
NEWCOMER = {"name": "poor-bot", "bot": "noisy", "bot_options": {"accuracy": 0.2}}
# the rounds alone, then the rated tables once (not skate_all: the report's plots and the analyses would
# add jobs and test nothing here)
ROUNDS = "skate_rounds"
RATED = "results/skate/pcorrect.parquet"


def write_skate(root: Path, bots: list[dict[str, Any]]) -> None:
    skate = adaptive.read_params(root, BENCH)
    skate.update(players=["setter-bot"], answer_only=[b["name"] for b in bots[1:]], attempts=1, strategy="no_info")
    skate["ranking"].update(passes=2, bootstrap_resamples=0)
    skate["analyses"] = {"strategies": []}
    skate["adaptive"] = {"enabled": True, "seats": 2, "tables_per_round": 1, "max_rounds": 1, "seed": 1}
    adaptive.write_params(root, BENCH, skate, roster=bots)


def jobs(root: Path) -> dict[str, int]:
    """Every played job's calls table and its modification time (a replay would change it)."""
    return adaptive.stamps(adaptive.results(root, BENCH), "*/*.calls.parquet")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return adaptive.played_workdir(
        tmp_path_factory.mktemp("adaptive-skate") / "work", ROUNDS, lambda root: write_skate(root, BOTS)
    )


def test_a_round_is_played_then_a_rerun_plays_nothing(played: Path) -> None:
    ledger = adaptive.rounds(played, BENCH)
    assert [r["round"] for r in ledger] == [1, 2]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["games"] == []
    (game,) = ledger[0]["games"]
    assert sorted(game["seats"]) == ["oracle-bot", "setter-bot"] and game["round"] == 1
    assert ledger[1]["read_games"] == [game["id"]]
    parts = {f"generate/{j}.calls.parquet" for j in game["generate_jobs"]}
    parts |= {f"answers/{j}.calls.parquet" for j in game["answer_jobs"]}
    assert set(jobs(played)) == parts  # the round's setting and its table's answers, nothing else
    moved = ledger[1]["standings"]
    assert all(s["games"] == 1 for s in moved.values())  # one question: one comparison each
    adaptive.rerun_plays_nothing(played, BENCH, ROUNDS, ledger, jobs)


def test_a_new_bot_is_placed_first_and_nothing_is_replayed(played: Path, tmp_path: Path) -> None:
    root = adaptive.copy_workdir(played, tmp_path / "work")
    before, old_rounds = jobs(root), adaptive.rounds(root, BENCH)
    write_skate(root, [*BOTS, NEWCOMER])
    adaptive.run_pipeline(root, "run", RATED)
    ledger = adaptive.rounds(root, BENCH)
    assert ledger[: len(old_rounds)] == old_rounds  # the earlier rounds stay as they were
    first_new = ledger[len(old_rounds)]
    assert first_new["placement"] == [NEWCOMER["name"]] and NEWCOMER["name"] in first_new["tables"][0]
    assert ledger[-1]["stop"] == "max_rounds" and ledger[-1]["budget"]["since_round"] == first_new["round"]
    after = jobs(root)
    assert {k: after[k] for k in before} == before  # no job played twice
    (game,) = first_new["games"]
    assert game["round"] == 2  # a new round of the game: the setter set again, the table answered it
    new = {f"generate/{j}.calls.parquet" for j in game["generate_jobs"]}
    assert set(after) - set(before) == new | {f"answers/{j}.calls.parquet" for j in game["answer_jobs"]}
    pcorrect = pl.read_parquet(root / RATED)  # every answer of both rounds, rated
    assert pcorrect.select("round", "answerer").sort("round", "answerer").rows() == [
        (1, "oracle-bot"),
        (1, "setter-bot"),
        *sorted((2, name) for name in game["seats"]),
    ]
