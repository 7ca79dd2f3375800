"""The small demo (whoisspy + elimination, mock API models and bots) run three more ways and compared
with one clean local run: with 20% injected transport faults, through the cluster-generic executor
(each job its own process), and incrementally (a model added, then removed).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from tests.core.run.test_reliability_support import (
    ELIMINATION,
    MOCK_ROSTER,
    WHOISSPY,
    calls_of,
    game_records,
    game_targets,
    job_stats,
    ledger,
    make_project,
    mtimes,
    planned_jobs,
    result_tables,
    snakemake,
    write_models,
    write_yaml,
)

pytestmark = pytest.mark.slow
TARGETS = ("whoisspy_all", "elimination_all")
# the rating jobs of TARGETS: every table, rating and leaderboard (TARGETS add the plots drawn from them)
RATINGS = ("whoisspy_rate", "elimination_rate")
# the demo's ratings and leaderboards: what "the same results" means
RATING_FILES = (
    "whoisspy/ratings.parquet",
    "whoisspy/leaderboard.parquet",
    "whoisspy/games.parquet",
    "whoisspy/seats.parquet",
    "elimination/leaderboard.parquet",
    "elimination/tables/final_ranks.parquet",
    "elimination/metrics.json",
)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = make_project(tmp_path_factory.mktemp("clean") / "p")
    snakemake(project, "--cores", "2", *TARGETS)
    return project


def assert_same_results(project: Path, clean: Path, bench: str = "") -> None:
    assert game_records(project / "results" / bench) == game_records(clean / "results" / bench)
    ours, theirs = result_tables(project / "results" / bench), result_tables(clean / "results" / bench)
    assert sorted(ours) == sorted(theirs)
    for name, frame in theirs.items():
        assert ours[name].equals(frame), name


def test_twenty_percent_transport_faults_change_no_result(clean_run: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    faults = tmp_path / "faults.yaml"
    write_yaml(faults, {"seed": 3, "timeout": 0.07, "rate_limit": 0.07, "server": 0.06})
    # the games alone: the rating jobs are a deterministic function of them (compared below)
    snakemake(project, "--cores", "2", *game_targets(project), extra_env={"PIPELINE_FAULTS": str(faults)})
    assert game_records(project / "results") == game_records(clean_run / "results")

    calls = calls_of(project / "results")
    model_calls = calls.filter(pl.col("model").str.starts_with("openai/"))
    faulted = model_calls.filter(pl.col("fault").is_not_null())
    counts = dict(faulted.group_by("fault").len().iter_rows())
    print(f"\n20% transport faults: {faulted.height} of {model_calls.height} attempts faulted: {counts}")
    assert set(counts) == {"timeout", "rate_limit", "server"}
    assert 0.05 < faulted.height / model_calls.height < 0.45  # 20% of attempts, retries included
    # each classified as that transport error, retried, and never a move: the answered requests
    # are exactly the clean run's
    assert (faulted["error_kind"] == faulted["fault"]).all() and (faulted["tokens_out"] == 0).all()
    answered = model_calls.filter(pl.col("error_kind").is_null())
    clean_answered = calls_of(clean_run / "results").filter(
        pl.col("model").str.starts_with("openai/") & pl.col("error_kind").is_null()
    )
    assert sorted(answered["request_id"]) == sorted(clean_answered["request_id"])
    assert (faulted["roster_name"].is_in(["mock-a", "mock-b"])).all()  # bots never faulted


def test_the_cluster_generic_executor_gives_the_same_tables(clean_run: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    snakemake(project, "--profile", "profiles/cluster-generic", "--jobs", "2", "whoisspy_all")
    assert_same_results(project, clean_run, "whoisspy")
    # every job ran as its own background process, through the submit script
    exits = list((project / ".snakemake/local-cluster").glob("*.exit"))
    games = len(list((project / "results/whoisspy/games").glob("*.json")))
    assert len(exits) == games + 2  # each game, the rate job and the report job
    assert all(e.read_text().strip() == "0" for e in exits)


def test_adding_a_model_runs_only_its_jobs_and_removing_it_restores_the_ratings(
    clean_run: Path, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    shutil.copytree(clean_run, project, symlinks=True)
    results = project / "results"
    before_bytes = {name: (results / name).read_bytes() for name in RATING_FILES}
    before_games = {k: v for k, v in mtimes(results).items() if "/games/" in k}
    paid_before = len(ledger(project))
    assert planned_jobs(project, *TARGETS) == {}  # nothing to do on the clean run

    # add one model: to the roster, as a whoisspy player under test, in one new elimination lineup
    newcomer = {
        "name": "mock-c",
        "model": "openai/gpt-4o-mini",
        "extra": {"mock_response": "P4"},
        "sampling": {"max_tokens": 16},
    }
    write_models(project, [*MOCK_ROSTER, newcomer])
    write_yaml(project / "params/whoisspy.yaml", {**WHOISSPY, "players": [*WHOISSPY["players"], "mock-c"]})
    lineup = [
        "mock-c",
        "random-bot",
        "heuristic-bot",
        "random-bot",
        "heuristic-bot",
        "random-bot",
        "heuristic-bot",
        "mock-b",
    ]
    elimination = yaml.safe_load(yaml.safe_dump(ELIMINATION))
    elimination["schedule"]["lineups"].append(lineup)
    write_yaml(project / "params/elimination.yaml", elimination)

    planned = planned_jobs(project, *TARGETS)
    assert planned == {
        "whoisspy_play": 2,
        "whoisspy_rate": 1,
        "whoisspy_report": 1,
        "whoisspy_all": 1,
        "elimination_play": 1,
        "elimination_rate": 1,
        "elimination_report": 1,
        "elimination_all": 1,
    }, planned
    # the ratings of TARGETS built (what every check below reads): the same jobs, the plots left out
    done = snakemake(project, "--cores", "2", *RATINGS)
    assert job_stats(done.stdout + done.stderr) == {k: n for k, n in planned.items() if k.endswith(("_play", "_rate"))}
    after_games = {k: v for k, v in mtimes(results).items() if "/games/" in k}
    assert all(after_games[k] == v for k, v in before_games.items())  # no existing game replayed
    assert len(after_games) > len(before_games)
    new_requests = ledger(project)[paid_before:]
    assert new_requests and {r["roster_name"] for r in new_requests} <= {"mock-c", "mock-b"}
    new_games = {k.split("/")[2].split(".")[0] for k in after_games if k not in before_games}
    assert {r["job"].split("/")[-1] for r in new_requests} <= new_games  # only the new games asked anything
    ratings = pl.read_parquet(results / "whoisspy/ratings.parquet")
    assert "mock-c" in ratings["player"].to_list()  # refit with the newcomer
    assert "mock-c" in pl.read_parquet(results / "elimination/leaderboard.parquet")["model"].to_list()

    # remove it again: only the rating jobs rerun, and they give back the very same bytes
    write_models(project, MOCK_ROSTER)
    write_yaml(project / "params/whoisspy.yaml", WHOISSPY)
    write_yaml(project / "params/elimination.yaml", ELIMINATION)
    planned = planned_jobs(project, *TARGETS)
    assert planned == {
        "whoisspy_rate": 1,
        "whoisspy_report": 1,
        "whoisspy_all": 1,
        "elimination_rate": 1,
        "elimination_report": 1,
        "elimination_all": 1,
    }, planned
    done = snakemake(project, "--cores", "2", *RATINGS)
    assert job_stats(done.stdout + done.stderr) == {"whoisspy_rate": 1, "elimination_rate": 1}
    for name in RATING_FILES:
        assert (results / name).read_bytes() == before_bytes[name], name
    assert len(ledger(project)) == paid_before + len(new_requests)  # nothing was asked again
