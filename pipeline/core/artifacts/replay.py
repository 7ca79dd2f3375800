"""Replays: one page per game, built from a benchmark's tables (read once, split by game).

A benchmark's `replay.py` builds a ReplaySet; the leaderboard renders it into the site."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from pipeline.core.artifacts.io import content_id

SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_key(text: str) -> str:
    """A file-name stem for an id; ids that needed changing get a hash so two never collide."""
    cleaned = SAFE.sub("_", text)[:80]
    return cleaned if cleaned == text and cleaned not in ("", ".", "..") else f"{cleaned}-{content_id(text, 8)}"


def seat_order(seat: str | None) -> tuple[int, str]:
    """P2 before P10."""
    seat = seat or ""
    digits = seat.lstrip("Pp")
    return (int(digits), seat) if digits.isdigit() else (10**6, seat)


def num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def by_game(frame: pl.DataFrame | None) -> dict[str, list[dict[str, Any]]]:
    """A table's rows grouped by their game_id (empty when the table is missing)."""
    if frame is None:
        return {}
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in frame.iter_rows(named=True):
        grouped[row["game_id"]].append(row)
    return grouped


@dataclass
class GamePage:
    """One replay page: its file stem, its row in the game list, and what its template shows."""

    key: str
    cells: list[str]
    title: str
    context: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplaySet:
    template: str  # the game page's jinja source; it extends the site's "base.html"
    columns: list[str]
    games_title: str
    pages: list[GamePage]
    note: str = ""
