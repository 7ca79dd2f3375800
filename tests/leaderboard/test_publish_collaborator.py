"""Publishing as a team does it, end to end: two versions of a small real run (`dvc repro` with mock
API models and bots) published to a local-directory DVC remote, then a fresh clone that gets the
site, the replays and a diff of the two tags from `dvc pull` alone, with no model call."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from tests.conftest import GIT_ENV
from tests.core.run.test_reliability_support import MOCK_ROSTER, PYTHON_BIN, env, make_project, write_models, write_yaml
from tests.leaderboard.test_leaderboard_browser import ARGS, CHROMIUM, Watched

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
KEY = "sk-fake-reliability-tests"  # the key env() exports: it must reach no artifact
BENCHMARKS_BY_NAME = ("whoisspy", "elimination")
PARALLEL = {"games_per_job": 64}  # API games many per job, as the repository's params/models.yaml plays them


def sh(cwd: Path, *cmd: str, ok: bool = True, **extra: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env(**GIT_ENV, **extra), capture_output=True, text=True, timeout=900)
    if ok:
        assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def pipeline(cwd: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    return sh(cwd, str(PYTHON_BIN / "python"), "-m", "pipeline", *args, ok=ok)


def dvc(cwd: Path, *args: str) -> str:
    return sh(cwd, str(PYTHON_BIN / "dvc"), *args).stdout


def small_dvc_yaml() -> dict[str, Any]:
    """The project's dvc.yaml with the stages of this small run only: two benchmarks and the leaderboard.
    The roster check is left out: nothing published reads it, publishing takes whatever stages dvc.yaml
    has, and the check would rerun (a Snakemake run and a job) at every roster change."""
    data = yaml.safe_load((REPO / "dvc.yaml").read_text())
    keep = (*BENCHMARKS_BY_NAME, "leaderboard")
    data["stages"] = {name: stage for name, stage in data["stages"].items() if name in keep}
    leaderboard = data["stages"]["leaderboard"]
    leaderboard["deps"] = [d for d in leaderboard["deps"] if not str(d).startswith(("results/skate", "results/xent"))]
    return data


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two published versions of a team's project; v1.1 adds a model and shares the response cache."""
    top = tmp_path_factory.mktemp("publish")
    # a repository of its own (git, dvc.yaml, two benchmarks' rules)
    project = make_project(top / "team", parallel=PARALLEL, copy=True)
    for bench in ("skate", "xent"):  # this small run plays two benchmarks; the leaderboard reads what exists
        (project / "pipeline" / bench / "rules.smk").unlink()
    write_yaml(project / "dvc.yaml", small_dvc_yaml())
    board = yaml.safe_load((REPO / "params" / "leaderboard.yaml").read_text())
    write_yaml(
        project / "params" / "leaderboard.yaml", {**board, "version": "1.0", "benchmarks": list(BENCHMARKS_BY_NAME)}
    )
    shutil.copy2(REPO / ".gitignore", project / ".gitignore")
    shutil.copy2(REPO / ".dvcignore", project / ".dvcignore")
    store = top / "dvc-store"
    sh(project, "git", "init", "-q", "-b", "main")
    dvc(project, "init", "-q")
    dvc(project, "remote", "add", "-d", "team", str(store))
    sh(project, "git", "add", "-A")
    sh(project, "git", "commit", "-q", "-m", "the project")

    dvc(project, "repro", "-q")
    first = pipeline(project, "publish")

    # version 2: a new model joins Who is Spy; its results are reproduced, then published as v1.1
    write_models(
        project,
        [
            *MOCK_ROSTER,
            {
                "name": "mock-c",
                "model": "openai/gpt-4o-mini",
                "extra": {"mock_response": "P4"},
                "sampling": {"max_tokens": 16},
            },
        ],
        parallel=PARALLEL,
    )
    spy = yaml.safe_load((project / "params" / "whoisspy.yaml").read_text())
    write_yaml(project / "params" / "whoisspy.yaml", {**spy, "players": [*spy["players"], "mock-c"]})
    refused = pipeline(project, "publish", ok=False)  # uncommitted params: refused, naming the files
    sh(project, "git", "commit", "-q", "-am", "mock-c plays Who is Spy")
    stale = pipeline(project, "publish", "--bump", "minor", ok=False)  # committed, but not yet run
    dvc(project, "repro", "-q")
    again = pipeline(project, "publish", ok=False)  # v1.0 is taken
    second = pipeline(project, "publish", "--bump", "minor", "--share-cache")
    return {
        "project": project,
        "store": store,
        "top": top,
        "first": first,
        "second": second,
        "refused": refused,
        "stale": stale,
        "again": again,
    }


def test_publish_commits_tags_and_pushes_each_version(published: dict[str, Any]) -> None:
    project = published["project"]
    assert "published leaderboard-v1.0" in published["first"].stdout
    assert "published leaderboard-v1.1" in published["second"].stdout
    assert "git clone --branch leaderboard-v1.1" in published["second"].stdout
    assert sh(project, "git", "tag", "--list").stdout.split() == ["leaderboard-v1.0", "leaderboard-v1.1"]
    assert sh(project, "git", "status", "--porcelain", "--untracked-files=no").stdout == ""
    tracked = sh(project, "git", "ls-files", "results").stdout.split()
    for name in ("leaderboard.json", "version.json", "CHANGELOG.md", "releases.json"):
        assert f"results/leaderboard/{name}" in tracked
    assert yaml.safe_load((project / "params/leaderboard.yaml").read_text())["version"] == "1.1"
    assert (published["store"] / "files" / "md5").is_dir()  # the DVC remote got the artifacts
    assert "results are not those of this commit's code and params" in published["stale"].stderr


def test_publish_refuses_a_dirty_tree_and_a_taken_version(published: dict[str, Any]) -> None:
    refused = published["refused"]
    assert refused.returncode == 2
    assert "params/models.yaml" in refused.stderr and "params/whoisspy.yaml" in refused.stderr
    assert "clean tree" in refused.stderr
    assert published["again"].returncode == 2 and "leaderboard-v1.0 is already published" in published["again"].stderr
    assert "--bump minor" in published["again"].stderr


def test_release_notes_say_what_changed(published: dict[str, Any]) -> None:
    folder = published["project"] / "results" / "leaderboard"
    releases = json.loads((folder / "releases.json").read_text())
    assert [r["tag"] for r in releases] == ["leaderboard-v1.1", "leaderboard-v1.0"]
    latest = releases[0]
    assert latest["bump"] == "minor" and latest["previous"] == "leaderboard-v1.0"
    assert [m["model"] for m in latest["models_added"]] == ["mock-c"]
    fields = {(c["file"], c["field"]) for c in latest["params_changed"]}
    assert ("params/whoisspy.yaml", "players") in fields
    changelog = (folder / "CHANGELOG.md").read_text()
    assert changelog.index("## v1.1") < changelog.index("## v1.0") and "Models added: mock-c" in changelog
    page = (folder / "site" / "releases.html").read_text()
    assert "mock-c" in page and "python -m pipeline site leaderboard-v1.0" in page


@pytest.fixture(scope="module")
def collaborator(published: dict[str, Any]) -> Path:
    """A fresh clone of v1.1 (the two commands publish printed), its artifacts pulled from the remote."""
    top, project = published["top"], published["project"]
    clone = top / "collaborator"
    sh(top, "git", "clone", "-q", "--branch", "leaderboard-v1.1", str(project), str(clone))
    assert not (clone / "results" / "leaderboard" / "site").exists()
    dvc(clone, "pull", "-q")
    return clone


def test_a_collaborator_clone_rebuilds_everything_from_the_remote(
    published: dict[str, Any], collaborator: Path
) -> None:
    top, clone = published["top"], collaborator
    site = clone / "results" / "leaderboard" / "site"
    assert (site / "index.html").exists() and "leaderboard v1.1" in (site / "index.html").read_text()
    replays = sorted((site / "whoisspy" / "games").glob("*.html")) + sorted(
        (site / "elimination" / "games").glob("*.html")
    )
    assert len(replays) >= 2
    # nothing to rerun: every stage's outputs are the published ones, so no model is called; Python's
    # compiled modules beside the code (written at a first import where bytecode is written) are no change
    cached = clone / "pipeline" / "core" / "__pycache__"
    cached.mkdir(exist_ok=True)
    (cached / "stage.cpython-311.pyc").write_bytes(b"compiled")
    assert "up to date" in dvc(clone, "status")
    diff = pipeline(clone, "diff", "leaderboard-v1.0", "leaderboard-v1.1")
    assert "mock-c" in diff.stdout.split("## Entered")[1].split("## Left")[0]
    # an earlier version's site, from its tag (its files come from the remote: this clone never had them)
    opened = pipeline(clone, "site", "leaderboard-v1.0", "--out", str(top / "v1.0-site"))
    index = Path(opened.stdout.strip().splitlines()[-1])
    assert index.exists() and "leaderboard v1.0" in index.read_text() and "mock-c" not in index.read_text()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (the Makefile installs it)")
def test_the_pulled_site_opens_in_chromium(collaborator: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package drives Chromium")
    site = collaborator / "results" / "leaderboard" / "site"
    replay = next((site / "whoisspy" / "games").glob("*.html"))
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        watched = Watched(browser)
        page = watched.open(site / "index.html")
        assert "leaderboard v1.1 · built from commit" in page.inner_text("header")
        page.click("text=releases")
        page.wait_for_load_state("load")
        assert page.url.endswith("releases.html") and "leaderboard-v1.1 (this site)" in page.inner_text("main")
        watched.open(replay)
        assert page.is_visible("text=Votes") and "Round 1" in page.inner_text("main")
        assert watched.errors == [] and watched.remote == []
        browser.close()


def test_the_shared_response_cache_re_derives_games_without_calls(published: dict[str, Any]) -> None:
    top = published["top"]
    clone = top / "collaborator-cache"
    sh(top, "git", "clone", "-q", "--branch", "leaderboard-v1.1", str(published["project"]), str(clone))
    dvc(clone, "pull", "-q")
    assert (clone / ".cache" / "responses").is_dir()
    games = clone / "results" / "whoisspy" / "games"
    before = game_records(games)
    ledger = clone / ".cache" / "responses" / "spend-ledger.jsonl"  # one line per paid call
    paid = ledger.read_bytes()
    shutil.rmtree(games)
    # no key at all: a call would fail; every answer must come from the shared cache
    sh(clone, str(PYTHON_BIN / "dvc"), "repro", "-q", "-f", "-s", "whoisspy", OPENAI_API_KEY="")
    assert game_records(games) == before and len(before) >= 2
    assert ledger.read_bytes() == paid and paid.count(b"\n") > 0  # nothing paid again
    calls = pl.read_parquet(clone / "results" / "whoisspy" / "calls.parquet")
    assert calls.filter(pl.col("cache_hit")).height > 0


def game_records(folder: Path) -> dict[str, Any]:
    """The games as played, less each move's latency (the machine's, not the game's)."""

    def played(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: played(v) for k, v in value.items() if k != "latency_s"}
        return [played(v) for v in value] if isinstance(value, list) else value

    return {p.name: played(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))}


def test_no_key_and_no_unshared_cache_leave_the_machine(published: dict[str, Any]) -> None:
    store, project = published["store"], published["project"]
    needle = KEY.encode()
    for path in store.rglob("*"):  # DVC keeps objects as they are (not compressed)
        if path.is_file():
            assert needle not in path.read_bytes(), path
    revisions = sh(project, "git", "rev-list", "--all").stdout.split()
    assert sh(project, "git", "grep", "-l", KEY, *revisions, ok=False).stdout == ""  # no commit holds it
    assert "response cache" in published["second"].stderr  # the warning of --share-cache
    # v1.0 did not share the cache: its commit tracks no pointer to it
    assert sh(project, "git", "ls-tree", "-r", "--name-only", "leaderboard-v1.0", "--", ".cache").stdout == ""
