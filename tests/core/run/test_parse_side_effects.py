"""Parsing the workflow has no side effects: `snakemake -n` and `--list-rules` on a fresh copy write
nothing outside .snakemake (the games to watch are written when a run starts, by its onstart hook)
and print no warning of ours (params that cannot be scheduled stop their targets instead)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.artifacts.progress import PROGRESS_ENV
from pipeline.testing.project import snakemake_command


def files(root: Path) -> dict[str, int]:
    """Every file outside .snakemake, with its modification time."""
    return {
        str(p.relative_to(root)): p.stat().st_mtime_ns
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != ".snakemake"
    }


@pytest.mark.slow  # two Snakemake parses of the whole demo
def test_parsing_the_workflow_writes_nothing_and_warns_of_nothing(project: Path) -> None:
    progress = project / "progress-dir"
    progress.mkdir()
    before = files(project)
    env = {
        **os.environ,
        PROGRESS_ENV: str(progress),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for args in (["--list-rules"], ["-n", "--cores", "1"]):
        done = subprocess.run(
            snakemake_command(project, *args), cwd=project, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        ours = [
            line
            for line in done.stderr.splitlines()
            if "warning" in line.lower()
            or "scheduled" in line
            or line.startswith(("skate:", "xent:", "elimination:", "whoisspy:"))
        ]
        assert ours == [], ours
    assert files(project) == before
    assert list(progress.iterdir()) == []  # the progress plan files wait for a real run's onstart


def test_announced_games_are_written_only_when_the_run_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.core.artifacts import progress

    monkeypatch.setenv(PROGRESS_ENV, str(tmp_path))
    monkeypatch.setattr(progress, "_ANNOUNCED", {})
    progress.announce_games("coinflip", ["b.json", "a.json"])
    assert list(tmp_path.iterdir()) == []
    progress.write_announced()
    assert (tmp_path / "plan-coinflip.json").read_text().count("a.json") == 1
