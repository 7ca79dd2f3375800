"""The publish stamp says +dirty only when tracked code or params changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.leaderboard.stamp import git_commit


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_dirty_only_for_tracked_changes(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.com")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "models.yaml").write_text("roster: []\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "metrics.json").write_text("{}\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "init")

    clean = git_commit(tmp_path)
    assert clean is not None and not clean.endswith("+dirty")

    (tmp_path / "notes.txt").write_text("a stray file\n")  # untracked: not a change to what runs
    (tmp_path / "results" / "metrics.json").write_text('{"a": 1}\n')  # what a run writes
    assert git_commit(tmp_path) == clean

    (tmp_path / "params" / "models.yaml").write_text("roster: [x]\n")
    assert git_commit(tmp_path) == clean + "+dirty"
