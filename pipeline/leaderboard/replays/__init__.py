"""Replays: one page per game, built from a benchmark's tables (read once, split by game)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.io import content_id

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


@dataclass
class GamePage:
    """One replay page: its file stem, its row in the game list, and what its template shows."""

    key: str
    cells: list[str]
    title: str
    context: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplaySet:
    template: str
    columns: list[str]
    games_title: str
    pages: list[GamePage]
    note: str = ""
