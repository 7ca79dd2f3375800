"""A benchmark's games as rows of the published dataset (`python -m pipeline export`).

Each benchmark declares `dataset` on its registry entry: a function of its results folder that
returns one `DatasetGame` per game, in the benchmark's own terms of seats, moves and results. The
export (pipeline/export) adds what every benchmark shares (the model string behind each roster
name, from the calls tables; the leaderboard version), removes secrets, and writes Parquet.

Light on purpose: every job process imports the benchmarks' declarations, and so this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts.schemas import EVENTS_FILE


@dataclass(frozen=True)
class DatasetSeat:
    """Who sat in a seat: `seat` is the game's own label (P1, setter, a player's name)."""

    seat: str
    player: str  # the roster name
    role: str | None = None  # a role the game gave the seat (spy, setter, black), if any


@dataclass(frozen=True)
class DatasetMove:
    """One thing a seat did, in game order: what it replied and what the game took from it."""

    kind: str  # the benchmark's name for the move: speech, vote, private, question, answer, move, ...
    seat: str | None  # None: a move no seat made (none of the benchmarks writes one today)
    round: int | None = None
    reply: str | None = None  # the text the player sent (a bot's text too)
    move: str | None = None  # the move the game read from it: a vote's target, a letter, a program
    details: Mapping[str, Any] | None = None  # the benchmark's other fields of the move


@dataclass(frozen=True)
class DatasetResult:
    """How a seat came out of the game."""

    seat: str
    score: float | None = None  # the benchmark's score of the seat (points, bits, p(correct))
    rank: int | None = None  # its place, 1 = best, where the game ranks seats
    won: bool | None = None  # where the game has winners
    details: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class DatasetGame:
    """One game: its settings, seats, moves and outcome, and the jobs whose calls it made."""

    game_id: str
    seats: tuple[DatasetSeat, ...]
    moves: tuple[DatasetMove, ...]
    results: tuple[DatasetResult, ...]
    params: Mapping[str, Any] = field(default_factory=dict)  # what the game was set up with
    variant: str | None = None
    winner: str | None = None
    end_reason: str | None = None
    rated: bool = False  # the leaderboard's rating counts it
    jobs: tuple[str, ...] = ()  # the calls tables' `job` values of the jobs that played it


#: what a benchmark's `dataset` function returns
DatasetRows = Iterable[DatasetGame]


def details(**fields: Any) -> dict[str, Any] | None:
    """The fields that are set (not None), or None when none is: a move's or result's `details`."""
    kept = {name: value for name, value in fields.items() if value is not None}
    return kept or None


def rated_games(folder: Path) -> set[str]:
    """The `game` values of the benchmark's rating events (empty before its rate step ran)."""
    path = folder / EVENTS_FILE
    if not path.exists():
        return set()
    return set(pl.read_parquet(path, columns=["game"])["game"].to_list())
