"""`python -m pipeline publish` on a small git + DVC project (fixture results, no DVC stages): what
it refuses and why, what a published version carries (tag, release notes, the site's version line),
and how versions follow each other. The end-to-end run with a remote is test_publish_collaborator.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import main
from tests.conftest import GIT_ENV
from tests.leaderboard.test_leaderboard_helpers import build_results

REPO = Path(__file__).resolve().parents[2]
DVC = Path(sys.executable).with_name("dvc")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def committed_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project, built and committed once per module (the results, `git init` and `dvc init`:
    about a CPU-second); each test gets a copy of it, `.git` and `.dvc` included."""
    root = tmp_path_factory.mktemp("template") / "team"
    with pytest.MonkeyPatch.context() as env:
        for name, value in GIT_ENV.items():
            env.setenv(name, value)
        (root / "params").mkdir(parents=True)
        shutil.copy2(REPO / "params" / "leaderboard.yaml", root / "params" / "leaderboard.yaml")
        shutil.copy2(REPO / ".gitignore", root / ".gitignore")
        (root / "pipeline" / "whoisspy").mkdir(parents=True)
        (root / "pipeline" / "whoisspy" / "rules.py").write_text("RULES = 1\n")
        build_results(root / "results")
        git(root, "init", "-q", "-b", "main")
        subprocess.run([str(DVC), "init", "-q"], cwd=root, check=True)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "project")
    return root


@pytest.fixture
def project(committed_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    root = shutil.copytree(committed_project, tmp_path / "team", symlinks=True)
    monkeypatch.chdir(root)
    return root


def publish(*args: str) -> int:
    return main(["publish", *args])


def test_first_version_is_tagged_with_notes_and_the_site_shows_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code_commit = git(project, "rev-parse", "HEAD")
    assert publish() == 0
    out = capsys.readouterr()
    assert "published leaderboard-v1.0" in out.out and "no DVC remote is configured" in out.err
    assert f"git clone --branch leaderboard-v1.0 {project} team-leaderboard-v1.0" in out.out
    # nothing pushed (no --git-push, no remote): the commands are said to wait for the pushes
    assert "Nothing is shared yet. A collaborator can get this version after you run: git push origin HEAD" in out.out
    assert "dvc push (to a DVC remote" in out.out
    assert git(project, "tag", "--list") == "leaderboard-v1.0"
    assert git(project, "status", "--porcelain") == ""
    changelog = git(project, "show", "leaderboard-v1.0:results/leaderboard/CHANGELOG.md")
    assert "## v1.0 · leaderboard-v1.0" in changelog and "First published version." in changelog
    assert f"Built from commit {code_commit[:12]}" in changelog
    site = project / "results" / "leaderboard" / "site"
    index = (site / "index.html").read_text()
    assert f"leaderboard v1.0 · built from commit {code_commit[:12]}" in index and 'href="releases.html"' in index
    replay = next((site / "elimination" / "games").glob("*.html")).read_text()
    assert 'href="../../releases.html"' in replay
    releases = (site / "releases.html").read_text()
    assert "leaderboard-v1.0 (this site)" in releases and "not published yet" not in releases
    assert json.loads((site / "releases.json").read_text())[0]["tag"] == "leaderboard-v1.0"


def test_versions_follow_each_other_and_a_taken_number_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert publish() == 0
    capsys.readouterr()
    assert publish() == 2
    err = capsys.readouterr().err
    assert "leaderboard-v1.0 is already published" in err and "--bump minor" in err and "--bump major" in err

    # a benchmark's code changes, published as a minor version: the notes warn it may be a major one
    (project / "pipeline" / "whoisspy" / "rules.py").write_text("RULES = 2\n")
    git(project, "commit", "-qam", "whoisspy scoring")
    assert publish("--bump", "minor") == 0
    assert "1.1" in (project / "params" / "leaderboard.yaml").read_text()
    record = json.loads((project / "results" / "leaderboard" / "releases.json").read_text())[0]
    assert (
        record["tag"] == "leaderboard-v1.1" and record["bump"] == "minor" and record["previous"] == "leaderboard-v1.0"
    )
    assert record["code_changed"] == {"whoisspy": 1}
    assert any("should be a MAJOR version" in w for w in record["warnings"])
    assert record["params_changed"] == []  # the version field has its own line

    assert publish("--bump", "major") == 0
    records = json.loads((project / "results" / "leaderboard" / "releases.json").read_text())
    assert [r["tag"] for r in records] == ["leaderboard-v2.0", "leaderboard-v1.1", "leaderboard-v1.0"]
    assert records[0]["comparable"] is False and records[0]["warnings"] == []
    assert "not comparable with v1.1" in (project / "results" / "leaderboard" / "CHANGELOG.md").read_text()
    assert git(project, "tag", "--list").split() == ["leaderboard-v1.0", "leaderboard-v1.1", "leaderboard-v2.0"]
    assert "Built from commit" in git(project, "tag", "-n20", "--list", "leaderboard-v2.0")


def test_a_first_publish_that_bumps_says_what_the_version_was(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 45: `publish --no-push --bump minor` on a project never published printed "version 1.0 ->
    1.1" and then "First published version." as if nothing had been there before."""
    assert publish("--no-push", "--bump", "minor") == 0
    out = capsys.readouterr()
    assert "version 1.0 -> 1.1" in out.err
    said = "First published version; --bump minor raised the version from 1.0 to 1.1"
    assert said in out.out
    record = json.loads((project / "results" / "leaderboard" / "releases.json").read_text())[0]
    assert (record["bump"], record["bumped_from"], record["previous"]) == ("first", "1.0", None)
    assert said in (project / "results" / "leaderboard" / "CHANGELOG.md").read_text()

    # the next bump names the version it follows, as before
    (project / "pipeline" / "whoisspy" / "rules.py").write_text("RULES = 2\n")
    git(project, "commit", "-qam", "whoisspy scoring")
    assert publish("--no-push", "--bump", "minor") == 0
    out = capsys.readouterr().out
    assert "published leaderboard-v1.2" in out and "Minor version after v1.1:" in out
    assert "First published" not in out


def test_a_dirty_tree_is_refused_naming_the_files(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = git(project, "rev-parse", "HEAD")
    (project / "params" / "leaderboard.yaml").write_text(
        (project / "params" / "leaderboard.yaml").read_text() + "\n# edit\n"
    )
    (project / "pipeline" / "whoisspy" / "new_rule.py").write_text("X = 1\n")
    (project / "notes.txt").write_text("a stray file changes nothing a run reads\n")
    assert publish() == 2
    err = capsys.readouterr().err
    assert "clean tree" in err and "params/leaderboard.yaml" in err
    assert "pipeline/whoisspy/new_rule.py (untracked)" in err and "notes.txt" not in err
    assert git(project, "rev-parse", "HEAD") == head and git(project, "tag", "--list") == ""


def test_a_key_in_an_artifact_stops_everything(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    leaked = project / "results" / "whoisspy" / "games" / "leak.json"
    leaked.parent.mkdir(parents=True, exist_ok=True)
    leaked.write_text('{"header": "x-api-key: sk-ant-test-0123456789"}')
    head = git(project, "rev-parse", "HEAD")
    assert publish() == 2
    err = capsys.readouterr().err
    assert "results/whoisspy/games/leak.json contains the value of $ANTHROPIC_API_KEY" in err
    assert "Nothing was pushed, committed or tagged" in err
    assert git(project, "rev-parse", "HEAD") == head and git(project, "tag", "--list") == ""


def test_credentials_in_the_tracked_dvc_config_are_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = project / ".dvc" / "config"
    config.write_text(
        config.read_text() + "['remote \"s3store\"']\n    url = s3://bucket/x\n    secret_access_key = abc123abc123\n"
    )
    git(project, "commit", "-qam", "a remote, with its secret")
    assert publish() == 2
    err = capsys.readouterr().err
    assert "secret_access_key" in err and "dvc remote modify --local" in err


def test_a_named_remote_must_exist_and_site_names_the_published_tags(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert publish("--remote", "nowhere") == 2
    assert "no DVC remote named 'nowhere'" in capsys.readouterr().err
    assert publish() == 0
    capsys.readouterr()
    assert main(["site", "leaderboard-v9.9"]) == 2
    assert "published versions: leaderboard-v1.0" in capsys.readouterr().err
