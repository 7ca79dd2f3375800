"""The plan's "why" of a replayed game names what changed (issue 45): Snakemake plans a game whose roster
entry or params changed as a new job (its content id is new, its output missing); the plan says which
entry or params field changed since the benchmark last ran (pipeline.core.run.replays)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.core.run.plan import CallEstimate, PlannedJob
from pipeline.core.run.replays import RAN_WITH, explain_new_jobs, record_run
from pipeline.testing.project import run_workflow
from tests.conftest import GIT_ENV, write_roster

ROSTER = [
    {"name": "graded-50", "bot": "graded", "bot_options": {"skill": 0.5}},
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
]
WHOISSPY = {
    "players": ["graded-50"],
    "fill": ["heuristic-bot", "random-bot"],
    "games_per_role": 1,
    "variants": ["baseline"],
    "rating": {"passes": 2, "bootstrap_resamples": 5},
}


def write(project: Path, roster: list[dict], whoisspy: dict) -> None:
    (project / "params").mkdir(parents=True, exist_ok=True)
    (project / "params/models.yaml").write_text(yaml.safe_dump({"roster": roster}, sort_keys=False))
    (project / "params/whoisspy.yaml").write_text(yaml.safe_dump(whoisspy, sort_keys=False))


def new_game(seats: list[str]) -> list[tuple[str, PlannedJob, CallEstimate]]:
    job = PlannedJob("whoisspy_play", "Missing output files: results/whoisspy/games/0123456789abcdef.json")
    return [("whoisspy", job, CallEstimate(name, "whoisspy/game", 0, 0, 0, 0)) for name in seats]


def whys(planned: list[tuple[str, PlannedJob, CallEstimate]]) -> set[str]:
    return {job.why for _, job, _ in planned}


def test_a_new_job_names_the_roster_entry_and_the_params_field_that_changed(tmp_path: Path) -> None:
    write(tmp_path, ROSTER, WHOISSPY)
    assert whys(explain_new_jobs(new_game(["graded-50", "random-bot"]), root=tmp_path)) == {"new job"}  # no record
    record_run(["whoisspy_all"], root=tmp_path)  # as a successful run of the benchmark does
    assert set(json.loads((tmp_path / "results/plan" / RAN_WITH).read_text())) == {"whoisspy"}
    assert whys(explain_new_jobs(new_game(["graded-50"]), root=tmp_path)) == {"new job"}  # nothing changed

    roster = [{**ROSTER[0], "bot_options": {"skill": 0.6}}, *ROSTER[1:], {"name": "gpt", "model": "openai/gpt-4o"}]
    write(tmp_path, roster, {**WHOISSPY, "players": ["graded-50", "gpt"], "games_per_role": 2})
    planned = explain_new_jobs(new_game(["graded-50", "random-bot"]), root=tmp_path)
    assert whys(planned) == {
        "new job: roster entry 'graded-50' changed (bot_options.skill); "
        "params/whoisspy.yaml changed (games_per_role, players)"
    }
    assert whys(explain_new_jobs(new_game(["gpt", "random-bot"]), root=tmp_path)) == {
        "new job: roster entry 'gpt' is new; params/whoisspy.yaml changed (games_per_role, players)"
    }
    rate = PlannedJob("whoisspy_rate", "Set of input files has changed since last execution")
    assert whys(explain_new_jobs([("whoisspy", rate, CallEstimate("-", "x", 0, 0, 0, 0))], root=tmp_path)) == {
        "changed input"  # only new jobs are explained: Snakemake's own reasons stay as they are
    }


def test_without_a_recorded_run_the_committed_params_are_the_last_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    write(tmp_path, ROSTER, WHOISSPY)
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "demo"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    write(tmp_path, [{**ROSTER[0], "bot_options": {"skill": 0.6}}, *ROSTER[1:]], WHOISSPY)
    assert whys(explain_new_jobs(new_game(["graded-50", "heuristic-bot"]), root=tmp_path)) == {
        "new job: roster entry 'graded-50' changed (bot_options.skill)"
    }


@pytest.mark.slow  # a real Who is Spy run of two bot games, then the plan's dry run
def test_the_plan_of_a_replayed_game_names_the_changed_entry(project: Path) -> None:
    write_roster(project, ROSTER)
    (project / "params/whoisspy.yaml").write_text(yaml.safe_dump(WHOISSPY, sort_keys=False))
    cwd = os.getcwd()
    try:
        run_workflow(project, {"whoisspy_all"})  # its end records what Who is Spy ran with
    finally:
        os.chdir(cwd)
    assert (project / "results/plan" / RAN_WITH).is_file()

    write_roster(project, [{**ROSTER[0], "bot_options": {"skill": 0.6}}, *ROSTER[1:]])  # graded-50's games replay
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "plan", "whoisspy_all", "--json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {r["model"]: r for r in json.loads(done.stdout)["rows"] if r["benchmark"] == "whoisspy"}
    # Snakemake's reason is a missing output (the games' ids are new); the plan says why they are
    said = "new job: roster entry 'graded-50' changed (bot_options.skill)"
    assert rows["graded-50"]["why"] == f"{said} {rows['graded-50']['jobs']}"
    assert rows["random-bot"]["why"] == rows["graded-50"]["why"]  # the same games, seen from another seat
