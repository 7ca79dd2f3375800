"""The version stamp carried by every leaderboard file and page.

A stamp names the leaderboard version (params/leaderboard.yaml), the git commit of the workspace
(with "+dirty" when tracked code or params have uncommitted changes; untracked files, results/ and
dvc.lock are left out: a stray notes file changes nothing a run reads, and results are what it writes) and the content hash of every input file read.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import content_id


def git_commit(root: Path) -> str | None:
    """`<sha>` or `<sha>+dirty` of the git workspace at `root`; None outside git or without git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=20)
        if sha.returncode != 0:
            return None
        status = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":(exclude)results",
                ":(exclude)dvc.lock",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = sha.stdout.strip()
    return commit + ("+dirty" if status.returncode == 0 and status.stdout.strip() else "")


@dataclass(frozen=True)
class Stamp:
    version: str
    commit: str | None
    inputs: dict[str, str] = field(default_factory=dict)  # results-relative path -> sha256[:16]

    @property
    def inputs_id(self) -> str:
        return content_id(self.inputs)

    @property
    def commit_text(self) -> str:
        return (
            "no git"
            if self.commit is None
            else f"commit {self.commit[:12]}" + ("+dirty" if self.commit.endswith("+dirty") else "")
        )

    @property
    def short(self) -> str:
        """One line for the foot of every page and the head of leaderboard.md."""
        return f"leaderboard v{self.version} · {self.commit_text} · inputs {self.inputs_id} ({len(self.inputs)} files)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "leaderboard_version": self.version,
            "git_commit": self.commit,
            "inputs_id": self.inputs_id,
            "inputs": dict(sorted(self.inputs.items())),
        }
