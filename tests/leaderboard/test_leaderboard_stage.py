"""The `leaderboard_build` rule through Snakemake: it takes the benchmarks' outputs as inputs, writes every
leaderboard file, and is up to date on a second run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.testing.project import snakemake_command
from tests.leaderboard.test_leaderboard_helpers import build_results

pytestmark = pytest.mark.slow
TRIGGERS = ["--rerun-triggers", "code", "input", "params", "software-env"]


def snakemake(project: Path, *args: str) -> str:
    done = subprocess.run(
        snakemake_command(project, *TRIGGERS, *args), cwd=project, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def test_publish_rule_lists_the_benchmarks_outputs_as_inputs(project: Path) -> None:
    out = snakemake(project, "-n", "--cores", "1", "leaderboard_all")
    publish = out.split("rule leaderboard_build:")[1].split("rule ")[0]
    inputs = publish.split("input:")[1].split("\n")[0]
    for bench in ("elimination", "whoisspy", "skate"):
        assert f"results/{bench}/metrics.json" in inputs, bench
    assert "results/skate/pcorrect.parquet" in inputs and "results/elimination/tables/messages.parquet" in inputs
    assert "params/leaderboard.yaml" in inputs


def test_publish_rule_writes_the_leaderboard_then_is_up_to_date(
    project_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # only the roster and the leaderboard rules: the benchmarks' results come from the fixture, their
    # rules are left out (they stay registered, so the leaderboard reads their results)
    project = project_copy
    monkeypatch.setenv("PIPELINE_LEAVE_OUT", "skate,xent,elimination,whoisspy")
    build_results(project / "results")
    snakemake(project, "--cores", "1", "leaderboard_all", "--allowed-rules", "leaderboard_build", "leaderboard_all")
    folder = project / "results" / "leaderboard"
    board = json.loads((folder / "leaderboard.json").read_text())
    assert board["alpha"]["combined_rank"] == 1
    assert json.loads((folder / "version.json").read_text())["leaderboard_version"] == "1.0"
    assert (folder / "site" / "elimination" / "games" / "e1.html").exists()
    assert "site/index.html" in (folder / "logs" / "build.log").read_text()
    assert "Nothing to be done" in snakemake(
        project, "--cores", "1", "leaderboard_all", "--allowed-rules", "leaderboard_build", "leaderboard_all"
    )
