"""Crash and resume: a real Snakemake run killed with SIGKILL (with every job it started) in the
middle of games and in the middle of writes; the documented resume completes it without replaying
a finished game, without re-sending an answered request, and without taking a partial file as done.

Resume after a crash (README):
    snakemake --unlock <targets>          # the killed run's lock is stale
    snakemake --rerun-incomplete --rerun-triggers code input params software-env --cores 2 <targets>
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.artifacts.schemas import CallsSchema, read_table
from pipeline.core.models.roster import load_models
from pipeline.whoisspy.config import load_whoisspy
from pipeline.whoisspy.schedule import build_schedule
from pipeline.whoisspy.schemas import GamesSchema
from tests.core.run.test_reliability_support import (
    calls_of,
    job_stats,
    kill_when,
    ledger,
    make_project,
    mtimes,
    snakemake,
    snakemake_done,
    start_snakemake,
)

pytestmark = pytest.mark.slow
RESUME = ("--rerun-incomplete", "--cores", "2", "whoisspy_all")


def game_ids(project: Path) -> list[str]:
    params = load_whoisspy(project / "params/whoisspy.yaml")
    return [g.game_id for g in build_schedule(params, load_models(project / "params/models.yaml"))]


def jobs_run(done: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """The jobs per rule a finished Snakemake run started with (the table it prints before its first job)."""
    return job_stats(done.stdout + done.stderr)


def check_no_request_sent_twice(project: Path) -> list[dict]:
    """The ledger has one line per request a provider answered: no key may appear twice."""
    sent = ledger(project)
    repeats = {k: n for k, n in Counter(r["key"] for r in sent).items() if n > 1}
    assert not repeats, f"requests answered twice: {repeats}"
    return sent


def test_kill_mid_write_then_resume(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    games = project / "results/whoisspy/games"
    cache = project / ".cache/responses"
    first, second = game_ids(project)

    # 1. killed while the first response-cache entry sits complete in its segment, not yet indexed
    # (only the response cache pauses: the run plan's own files are written first)
    run = start_snakemake(
        project, "--cores", "1", "whoisspy_all", extra_env={"PIPELINE_PAUSE_BEFORE_RENAME": ".cache/responses/:120"}
    )
    kill_when(run, lambda: any(p.stat().st_size for p in cache.glob("answers/*.jsonl")))
    assert not (cache / "answers/index").exists()  # no entry taken as written
    assert not list(games.glob("*.json"))
    assert ledger(project) == []  # the ledger line follows the cache write: nothing counted as answered

    # 2. killed while the second game's record is being renamed into place (its calls table is done)
    snakemake(project, "--unlock", "whoisspy_all")
    run = start_snakemake(
        project,
        "--cores",
        "2",
        f"results/whoisspy/games/{first}.json",
        f"results/whoisspy/games/{second}.json",
        extra_env={"PIPELINE_PAUSE_BEFORE_RENAME": f"{second}.json:120"},
    )
    kill_when(
        run,
        lambda: (
            snakemake_done(project, f"results/whoisspy/games/{first}.json") and any(games.glob(f".{second}.json.*.tmp"))
        ),
    )
    assert (games / f"{first}.json").exists() and not (games / f"{second}.json").exists()
    assert (games / f"{second}.calls.parquet").exists()  # an output of a job that never finished
    answered_before = {r["key"] for r in ledger(project)}
    assert answered_before
    before = mtimes(games)

    # 3. the documented resume, its first step: the killed run's lock is stale
    snakemake(project, "--unlock", "whoisspy_all")
    # Snakemake itself refuses to take the killed job's existing output as done (seen without the
    # workflow profile, whose rerun-incomplete would rerun it at once: the next step)
    refused = snakemake(project, "--cores", "1", "--workflow-profile", "none", "whoisspy_all", check=False)
    assert refused.returncode != 0 and "IncompleteFilesException" in refused.stdout + refused.stderr
    assert f"{second}.calls.parquet" in refused.stdout + refused.stderr

    # the documented resume's second step: only the interrupted game is played again, from the cache
    resumed = snakemake(project, *RESUME)
    assert jobs_run(resumed) == {
        "whoisspy_play": 1,
        "whoisspy_rate": 1,
        "whoisspy_report": 1,
        "whoisspy_all": 1,
    }
    after = mtimes(games)
    assert after[f"{first}.json"] == before[f"{first}.json"]  # the finished game was not replayed
    assert after[f"{second}.calls.parquet"] != before[f"{second}.calls.parquet"]
    replayed = read_table(games / f"{second}.calls.parquet", CallsSchema).filter(pl.col("roster_name") == "mock-a")
    assert replayed.height > 0 and replayed["cache_hit"].all()  # every answer came from the cache
    check_no_request_sent_twice(project)
    assert read_table(project / "results/whoisspy/games.parquet", GamesSchema).height == 2
    for path in games.glob("*.json"):
        json.loads(path.read_text())  # every record whole
    # the killed writers' temp files went away when their files were written again
    assert not list(games.glob(".*.tmp"))

    # a table corrupted on disk afterwards stops the next stage with a message naming the file
    torn = games / f"{first}.calls.parquet"
    torn.write_bytes(torn.read_bytes()[:200])
    failed = snakemake(project, "--cores", "1", "--forcerun", "whoisspy_rate", "--", "whoisspy_all", check=False)
    assert failed.returncode != 0 and "Error in rule whoisspy_rate" in failed.stdout + failed.stderr
    log = (project / "results/whoisspy/logs/rate.log").read_text()
    assert f"results/whoisspy/games/{first}.calls.parquet: unreadable parquet" in log
    assert not (project / "results/whoisspy/games.parquet").exists()  # the failed job left no table


def test_kill_mid_game_with_the_embedded_model_then_resume(tmp_path: Path) -> None:
    # the embedded model of the demo roster (params/models.yaml), the smaller of the two local models:
    # a job that loads it costs less CPU than one that loads local/gemma-3-270m
    roster = [
        {
            "name": "smollm2-135m",
            "model": "local/smollm2-135m",
            "sampling": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 4},
        },
        {"name": "random-bot", "bot": "random"},
        {"name": "heuristic-bot", "bot": "heuristic"},
    ]
    whoisspy = {
        "players": ["smollm2-135m"],
        "fill": ["heuristic-bot", "random-bot"],
        "games_per_role": 1,
        "variants": ["baseline"],
        "replies": {"speech_max_tokens": 4, "vote_max_tokens": 3},
        "rules": {"time_limit_s": 600, "rounds": 1},
    }
    project = make_project(tmp_path / "p", roster=roster, whoisspy=whoisspy)
    games = project / "results/whoisspy/games"
    ids = game_ids(project)
    targets = [f"results/whoisspy/games/{i}.json" for i in ids]  # the games (the rate job is tested above)

    def mid_game() -> bool:
        """One game finished, and the model already answered in a game that has not."""
        done = {i for i in ids if snakemake_done(project, f"results/whoisspy/games/{i}.json")}
        return bool(done) and any(r["job"].split("/")[-1] not in done for r in ledger(project))

    run = start_snakemake(project, "--cores", "1", *targets)
    kill_when(run, mid_game)
    finished = {i for i in ids if snakemake_done(project, f"results/whoisspy/games/{i}.json")}
    assert len(finished) == 1
    interrupted = next(i for i in ids if i not in finished)
    answered = [r["key"] for r in ledger(project) if r["job"].endswith(interrupted)]
    assert answered
    stamps = mtimes(games)

    snakemake(project, "--unlock", *targets)
    resumed = snakemake(project, "--rerun-incomplete", "--cores", "2", *targets)
    assert jobs_run(resumed) == {"whoisspy_play": 1}  # the interrupted game alone
    sent = check_no_request_sent_twice(project)
    assert all(mtimes(games)[f"{g}.json"] == stamps[f"{g}.json"] for g in finished)
    calls = read_table(games / f"{interrupted}.calls.parquet", CallsSchema).filter(
        pl.col("roster_name") == "smollm2-135m"
    )
    # the answers given before the kill came from the cache: exactly that many cache hits
    assert calls["cache_hit"].sum() == len(answered)
    # every answer of this game is in its table once as paid, whichever run paid it: the killed
    # run's were journaled as they came (pipeline.core.models.journal); the one the kill may have caught
    # between its ledger line and its journal line is in the cache and the ledger, not in the table
    paid = {r["key"][:16] for r in sent if r["job"].endswith(interrupted)}
    fresh = calls.filter(~pl.col("cache_hit"))["request_id"]
    assert set(fresh) <= paid and fresh.n_unique() == fresh.len() >= len(paid) - 1
    assert set(calls_of(project / "results/whoisspy")["job"]) == {f"whoisspy/{g}" for g in ids}
    for game in ids:
        assert json.loads((games / f"{game}.json").read_text())["events"][-1]["type"] == "end"
