"""The SLURM path for real: a one-node cluster from Debian's packages (tests/slurm_cluster.py) runs
the small Who is Spy demo through `snakemake --profile profiles/slurm whoisspy_all`, every job an
sbatch job. One of its game jobs is cancelled with `scancel` while it runs: the profile's `retries`
submits it again and the run finishes, with the results of a local run byte for byte.

Skipped, with the reason, where SLURM cannot run: not root, the packages missing (`make test`
installs them as root), or a daemon that does not come up (its log tail is in the reason).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.core.models.roster import load_models
from pipeline.whoisspy.config import load_whoisspy
from pipeline.whoisspy.schedule import build_schedule
from tests.core.run.test_reliability_support import (
    env,
    game_records,
    make_project,
    result_tables,
    snakemake,
    snakemake_cmd,
)
from tests.slurm_cluster import Cluster, SlurmUnavailable, local_slurm, missing_reason

pytestmark = pytest.mark.slow
TARGET = "whoisspy_all"
# the plugin's first status check comes 40 s after a submission (its default, for busy clusters)
FAST_STATUS = ("--slurm-init-seconds-before-status-checks", "2")
# results that do not measure the clock, compared byte for byte (the rest without their clock columns)
SAME_BYTES = (
    "metrics.json",
    "games.parquet",
    "seats.parquet",
    "votes.parquet",
    "ratings.parquet",
    "leaderboard.parquet",
    "variants.parquet",
)
# the game to cancel waits this long with its record written to a temp file, not yet renamed (in
# each attempt): the cancel lands mid-run, before the job could finish
PAUSE_S = 8


@dataclass
class SlurmRun:
    project: Path
    output: str
    jobs: list[dict[str, str]]  # the run's sbatch jobs in sacct (id, state, exit, comment)
    victim: str  # the game whose job was cancelled
    cancelled: str  # the job id cancelled


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with ExitStack() as stack:
        try:
            running = stack.enter_context(local_slurm())
        except SlurmUnavailable as reason:
            pytest.skip(f"no local SLURM cluster: {reason}")
        yield running


def game_ids(project: Path) -> list[str]:
    params = load_whoisspy(project / "params/whoisspy.yaml")
    return [g.game_id for g in build_schedule(params, load_models(project / "params/models.yaml"))]


def slurm_env(cluster: Cluster, **extra: str) -> dict[str, str]:
    """The test runs' environment (the venv's python first on PATH) plus the cluster's."""
    return {**cluster.environment(env()["PATH"]), **extra}


def jobs_of(cluster: Cluster, game_id: str) -> list[dict[str, str]]:
    # the plugin's comment: rule_<rule>_wildcards_<the wildcards' values>
    return [job for job in cluster.jobs() if job["comment"].endswith(f"_wildcards_{game_id}")]


@dataclass
class Run:
    """Snakemake in the background (its own process group), its output in a file."""

    project: Path
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, project: Path, *args: str, extra_env: dict[str, str] | None = None) -> Run:
        with (project / "snakemake.out").open("wb") as out:
            process = subprocess.Popen(
                snakemake_cmd(project, *args),
                cwd=project,
                env=env(**(extra_env or {})),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return cls(project, process)

    @property
    def output(self) -> str:
        return (self.project / "snakemake.out").read_text(errors="replace")

    def finish(self, timeout: float = 400) -> str:
        self.process.wait(timeout=timeout)
        assert self.process.returncode == 0, f"snakemake failed in {self.project}:\n{self.output[-6000:]}"
        return self.output

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The same demo run locally (`--cores 2`), beside the SLURM run (which mostly waits)."""
    run = Run.start(make_project(tmp_path_factory.mktemp("local") / "p"), "--cores", "2", TARGET)
    yield run
    run.stop()


@pytest.fixture(scope="module")
def slurm_run(cluster: Cluster, local_run: Run, tmp_path_factory: pytest.TempPathFactory) -> SlurmRun:
    # (the cluster first: where it cannot start, no local run starts either)
    project = make_project(tmp_path_factory.mktemp("slurm-run") / "p")
    victim = game_ids(project)[0]
    games = project / "results/whoisspy/games"
    started = time.monotonic()
    run = Run.start(
        project,
        "--profile",
        "profiles/slurm",
        *FAST_STATUS,
        TARGET,
        extra_env=slurm_env(cluster, PIPELINE_PAUSE_BEFORE_RENAME=f"{victim}.json:{PAUSE_S}"),
    )
    try:
        # the game's job runs on the node, and its record sits complete in a temp file
        running: list[dict[str, str]] = []
        deadline = time.monotonic() + 240
        while not running or not any(games.glob(f".{victim}.json.*.tmp")):
            assert run.process.poll() is None, f"the run ended before the cancel:\n{run.output[-6000:]}"
            assert time.monotonic() < deadline, f"game {victim} was never seen mid-run: {cluster.jobs()}"
            running = running or [job for job in jobs_of(cluster, victim) if job["state"] == "RUNNING"]
            time.sleep(0.2)
        cancelled = running[0]["id"]
        cluster.run("scancel", cancelled)
        # the plugin sees the job failed, Snakemake submits it again (retries: 1), the run goes on
        output = run.finish()
    finally:
        run.stop()  # only a run that failed the test is still alive here
    print(f"\n{TARGET} through SLURM, one job cancelled and rerun: {time.monotonic() - started:.0f} s")
    # the run's jobs as slurmdbd recorded them (it may take a moment to hear of the last end):
    # those the log says it submitted
    submitted = {line.split("SLURM jobid ", 1)[1].split()[0] for line in output.splitlines() if "SLURM jobid " in line}
    deadline = time.monotonic() + 30
    while True:
        jobs = [job for job in cluster.accounting() if job["id"] in submitted]
        if all(job["state"] not in ("PENDING", "RUNNING") for job in jobs) or time.monotonic() > deadline:
            return SlurmRun(project, output, jobs, victim, cancelled)
        time.sleep(0.5)


def same_bytes(results: Path) -> dict[str, bytes]:
    names = [*SAME_BYTES, *(f"plots/{p.name}" for p in (results / "plots").iterdir())]
    return {name: (results / name).read_bytes() for name in sorted(names)}


def test_every_job_ran_through_sbatch_with_the_local_results(slurm_run: SlurmRun, local_run: Run) -> None:
    local_run.finish()
    ours, theirs = slurm_run.project / "results/whoisspy", local_run.project / "results/whoisspy"
    assert same_bytes(ours) == same_bytes(theirs)
    assert game_records(ours) == game_records(theirs)
    tables, local_tables = result_tables(ours), result_tables(theirs)
    assert sorted(tables) == sorted(local_tables)
    for name, frame in local_tables.items():
        assert tables[name].equals(frame), name

    # each game, the rating and the report were sbatch jobs (the target is a local rule), and
    # slurmdbd recorded every one but the cancelled attempt as completed
    done = [job for job in slurm_run.jobs if job["id"] != slurm_run.cancelled]
    rules = sorted(job["comment"].split("_wildcards_")[0] for job in done)
    expected = ["rule_whoisspy_play"] * len(game_ids(slurm_run.project)) + [
        "rule_whoisspy_rate",
        "rule_whoisspy_report",
    ]
    assert rules == sorted(expected), slurm_run.jobs
    assert {(job["state"], job["exit"]) for job in done} == {("COMPLETED", "0:0")}, slurm_run.jobs


def test_a_job_cancelled_with_scancel_is_rerun_and_finishes(slurm_run: SlurmRun) -> None:
    attempts = sorted(
        (job for job in slurm_run.jobs if job["comment"].endswith(f"_wildcards_{slurm_run.victim}")),
        key=lambda job: int(job["id"]),
    )
    # cancelled, then submitted again, and completed
    assert [(job["id"], job["state"].split()[0]) for job in attempts] == [
        (slurm_run.cancelled, "CANCELLED"),
        (attempts[-1]["id"], "COMPLETED"),
    ], slurm_run.jobs
    games = slurm_run.project / "results/whoisspy/games"
    assert (games / f"{slurm_run.victim}.json").exists()
    assert not list(games.glob(".*.tmp"))  # the temp file of the cancelled attempt is gone
    # and the same command again has nothing left to do
    again = snakemake(slurm_run.project, "--profile", "profiles/slurm", "-n", TARGET)
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]


def test_the_skip_reason_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "need root" in str(missing_reason())
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda name: None if name in ("slurmdbd", "munged") else "/usr/bin/" + name)
    assert missing_reason() == (
        "SLURM is not installed (munged, slurmdbd missing): "
        "`apt-get install slurm-wlm slurmdbd munge mariadb-server` (or `make slurm`)"
    )
