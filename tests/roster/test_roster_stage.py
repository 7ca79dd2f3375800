"""The roster stage end to end: real Snakemake (Python API), real DVC, real CLI, no network."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.artifacts.schemas import CallsSchema, RosterCheckSchema, read_table
from pipeline.testing.project import run_workflow
from tests.conftest import REPO, write_roster

pytestmark = pytest.mark.slow
SECRET = "sk-test-DO-NOT-LEAK-8f3a1c"
FAST_ROSTER = [
    {"name": "random-bot", "bot": "random"},
    # an API model answered at litellm's provider boundary, with a (fake) key in the environment
    {"name": "gpt-mini", "model": "openai/gpt-4o-mini", "extra": {"mock_response": "Blue."}},
    # answers, but not what the check's instruction asked for
    {
        "name": "rambler",
        "model": "openai/gpt-4o-mini",
        "extra": {"mock_response": "Sure! The word you asked for is blue."},
    },
    {"name": "no-key", "model": "anthropic/claude-3-5-haiku-20241022"},
]


def run_snakemake(workdir: Path, targets: set[str]) -> None:
    """The repository's workflow in `workdir` (the `project` fixture's work directory), in this process."""
    run_workflow(workdir, targets)


@pytest.fixture
def env_with_secret(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def test_roster_stage_through_the_snakemake_api(project: Path, env_with_secret) -> None:
    write_roster(project, FAST_ROSTER)
    cwd = os.getcwd()
    try:
        run_snakemake(project, {"roster_all"})
    finally:
        os.chdir(cwd)
    check = read_table(project / "results/roster/check.parquet", RosterCheckSchema)
    rows = {r["name"]: r for r in check.iter_rows(named=True)}
    assert rows["random-bot"]["reachable"] and rows["random-bot"]["kind"] == "bot"
    assert rows["gpt-mini"]["reachable"] and rows["gpt-mini"]["reply"] == "Blue."
    assert rows["gpt-mini"]["follows"] and rows["gpt-mini"]["status"] == "ok" and rows["gpt-mini"]["reason"] is None
    assert rows["gpt-mini"]["cost_usd"] > 0
    assert rows["rambler"]["reachable"] and rows["rambler"]["follows"] is False
    assert (
        rows["rambler"]["status"] == "warn" and "does not follow the check's instruction" in rows["rambler"]["reason"]
    )
    assert rows["random-bot"]["status"] == "ok" and rows["random-bot"]["follows"] is None  # bots are not asked to
    assert not rows["no-key"]["reachable"] and "ANTHROPIC_API_KEY" in rows["no-key"]["error"]
    assert rows["no-key"]["status"] == "fail" and "ANTHROPIC_API_KEY" in rows["no-key"]["reason"]
    metrics = json.loads((project / "results/roster/metrics.json").read_text())
    assert metrics["gpt-mini"]["reachable"] is True and metrics["no-key"]["reachable"] is False
    assert metrics["gpt-mini"]["follows"] is True and metrics["rambler"]["follows"] is False
    calls = read_table(project / "results/roster/calls.parquet", CallsSchema)
    assert set(calls["roster_name"]) == {"random-bot", "gpt-mini", "rambler"}  # no-key never sent a request

    # the key was in the environment the whole time: it must be in no artifact
    for file in [*project.joinpath("results").rglob("*"), *project.joinpath(".cache").rglob("*")]:
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file


def test_dvc_repro_runs_the_stage_once_then_is_up_to_date(project_copy: Path, env_with_secret) -> None:
    project = project_copy  # dvc.yaml's stages depend on the project's files: a repository copy
    write_roster(project, FAST_ROSTER[:2])
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def sh(*cmd: str) -> str:
        done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    sh("git", "init", "-q")
    sh("dvc", "init", "-q")
    first = sh("dvc", "repro", "roster")
    assert "roster_check" in first
    stamp = (project / "results/roster/check.parquet").stat().st_mtime_ns
    second = sh("dvc", "repro", "roster")
    assert "didn't change, skipping" in second or "up to date" in second
    assert (project / "results/roster/check.parquet").stat().st_mtime_ns == stamp
    shown = subprocess.run(
        ["dvc", "metrics", "show", "--json", "results/roster/metrics.json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    metrics = json.loads(shown.stdout)
    assert "random-bot" in json.dumps(metrics), metrics
    assert (project / "dvc.lock").exists()
    for file in project.joinpath("results").rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file


def test_cli_help_and_ask(tmp_path: Path, env_with_secret) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pipeline", *args], cwd=REPO, capture_output=True, text=True, timeout=300
        )

    help_text = run("--help").stdout
    assert "ask" in help_text and "roster" in help_text
    # the embedded chat model of the shipped roster, by its roster name: words, not dashes
    asked = run("ask", "smollm2-135m", "Name a colour.", "--max-tokens", "8", "--temperature", "0", "--json")
    assert asked.returncode == 0, asked.stderr
    reply = json.loads(asked.stdout)
    assert reply["model"] == "local/smollm2-135m" and reply["tokens_out"] >= 1 and reply["cost_usd"] == 0.0
    assert re.search(r"\b(red|blue|green|yellow|orange|purple|pink|black|white|brown)\b", reply["text"].lower()), reply
    missing = run("ask", "anthropic/claude-3-5-haiku-20241022", "hi")
    assert missing.returncode == 2 and "ANTHROPIC_API_KEY" in missing.stderr
    unknown = run("ask", "nonsense", "hi")
    assert unknown.returncode == 2 and "neither a roster name" in unknown.stderr


def test_the_check_marks_a_base_model_that_does_not_answer(tmp_path: Path) -> None:
    """The issue: the base gemma-3-270m in its chat format answered with dashes and was `[ok]`."""
    from pipeline.core.models.gateway import Gateway
    from pipeline.roster.check import run_roster_check
    from tests.conftest import models_params

    models = models_params(
        [
            {"name": "smollm2-135m", "model": "local/smollm2-135m"},
            {"name": "gemma-base", "model": "local/gemma-3-270m"},
        ],
        gateway={"cache_dir": str(tmp_path / "cache")},
    )
    rows = {
        r["name"]: r
        for r in run_roster_check(models, tmp_path / "out", Gateway(models, job="roster")).iter_rows(named=True)
    }
    assert rows["smollm2-135m"]["reply"].strip(" .").lower() == "blue", rows["smollm2-135m"]
    assert rows["smollm2-135m"]["status"] == "ok" and rows["smollm2-135m"]["follows"]
    assert rows["gemma-base"]["reachable"] and rows["gemma-base"]["status"] == "warn"
    assert "asked for the single word 'blue'" in rows["gemma-base"]["reason"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("blue", True),
        ("Blue.", True),
        ("**blue**", True),
        ("'blue'\n", True),
        ("blue sky", False),
        ("The word is blue.", False),
        ("", False),
        ("- - - -", False),
    ],
)
def test_a_reply_follows_when_it_is_the_word_asked_for(reply: str, expected: bool) -> None:
    from pipeline.roster.check import follows

    assert follows(reply, "blue") is expected


def test_an_own_check_prompt_without_expect_checks_no_word() -> None:
    from pipeline.core.models.roster import CheckSettings

    assert CheckSettings().expect == "blue"
    assert CheckSettings(prompt="Say hi").expect is None
    assert CheckSettings(prompt="Say hi", expect="hi").expect == "hi"
