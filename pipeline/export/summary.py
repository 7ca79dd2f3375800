"""What an export wrote: per benchmark its tables, and the leaderboard version the results belong to."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl


@dataclass(frozen=True)
class LeaderboardStamp:
    """The leaderboard version the results belong to (results/leaderboard/version.json)."""

    version: str | None = None
    commit: str | None = None
    inputs_id: str | None = None

    @property
    def line(self) -> str:
        if self.version is None:
            return "no leaderboard built from these results (results/leaderboard/version.json is missing)"
        commit = (
            "no git"
            if self.commit is None
            else f"commit {self.commit[:12]}" + ("+dirty" if self.commit.endswith("+dirty") else "")
        )
        return f"leaderboard v{self.version} · {commit} · inputs {self.inputs_id}"


@dataclass
class ExportedBenchmark:
    name: str
    title: str
    about: str  # what a row is, from the benchmark's dataset module
    games: pl.DataFrame
    calls: pl.DataFrame | None


@dataclass
class ExportSummary:
    out: Path
    stamp: LeaderboardStamp
    benchmarks: list[ExportedBenchmark] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "name: why"


def read_stamp(results: Path) -> LeaderboardStamp:
    path = results / "leaderboard" / "version.json"
    if not path.exists():
        return LeaderboardStamp()
    data = json.loads(path.read_text(encoding="utf-8"))
    return LeaderboardStamp(data.get("leaderboard_version"), data.get("git_commit"), data.get("inputs_id"))
