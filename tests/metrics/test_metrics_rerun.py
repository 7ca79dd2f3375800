"""DVC metrics hold only what a rerun reproduces: the small demo (roster check, whoisspy, elimination,
mock API models and bots) run with `dvc repro`, its results thrown away and reproduced on the same
commit, leaves `dvc metrics diff` empty, and no metrics file carries a run-dependent figure."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.core.run.test_reliability_support import PYTHON_BIN, env, make_project

pytestmark = pytest.mark.slow
STAGES = ("roster", "whoisspy", "elimination")
RUN_DEPENDENT = ("latency", "elapsed", "seconds", "wall", "duration", "timestamp")
PARALLEL = {"games_per_job": 64}  # API games many per job, as the repository's params/models.yaml plays them


def sh(project: Path, *cmd: str) -> str:
    done = subprocess.run(cmd, cwd=project, env=env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def metric_keys(value: object) -> set[str]:
    if not isinstance(value, dict):
        return set()
    return set(value) | {k for v in value.values() for k in metric_keys(v)}


def test_a_rerun_of_the_same_commit_leaves_dvc_metrics_diff_empty(tmp_path: Path) -> None:
    # a repository copy: dvc.yaml's stages depend on the project's files
    project = make_project(tmp_path / "p", parallel=PARALLEL, copy=True)
    shutil.copy2(Path(__file__).resolve().parents[2] / "dvc.yaml", project / "dvc.yaml")
    sh(project, "git", "init", "-q")
    sh(project, "git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "empty")
    sh(project, str(PYTHON_BIN / "dvc"), "init", "-q")
    sh(project, str(PYTHON_BIN / "dvc"), "repro", "-q", *STAGES)
    metrics = sorted((project / "results").glob("*/metrics.json"))
    assert [m.parent.name for m in metrics] == sorted(STAGES)
    for path in metrics:
        keys = metric_keys(json.loads(path.read_text()))
        assert not [k for k in keys if any(word in k for word in RUN_DEPENDENT)], path
    sh(project, "git", "add", "-A")
    sh(project, "git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "first run")

    # the same commit again from nothing but the response cache (as on another machine with the cache)
    for stage in STAGES:
        shutil.rmtree(project / "results" / stage)
    shutil.rmtree(project / ".snakemake", ignore_errors=True)
    sh(project, str(PYTHON_BIN / "dvc"), "repro", "-q", *STAGES)
    assert sh(project, str(PYTHON_BIN / "dvc"), "metrics", "diff", "--json").strip() in ("{}", "")
