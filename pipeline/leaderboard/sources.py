"""What the leaderboard reads from the benchmarks' rooms, and the content hash of each file read.

Every room is optional: a missing metrics.json skips the benchmark, a missing table skips its
replays. The hashes go into the version stamp, so a page says exactly which inputs made it.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandera.polars as pa
import polars as pl

from pipeline.core.schemas import read_columns

# the files of each room the leaderboard reads (relative to results/<room>/)
ROOM_FILES: dict[str, tuple[str, ...]] = {
    "skate": ("metrics.json", "questions.parquet", "pcorrect.parquet"),
    "xent": ("metrics.json", "moves.parquet", "rewards.parquet", "token_xents.parquet", "scores.parquet"),
    "elimination": (
        "metrics.json", "tables/games.parquet", "tables/seats.parquet", "tables/messages.parquet",
        "tables/votes.parquet", "tables/eliminations.parquet", "tables/pairs.parquet",
        "tables/final_ranks.parquet",
    ),
    "whoisspy": ("metrics.json", "games.parquet", "seats.parquet", "speeches.parquet", "votes.parquet"),
}


def room_schema(room: str, relative: str) -> type[pa.DataFrameModel]:
    """The pandera schema the room writes `relative` with: every table read here is checked."""
    module = importlib.import_module(f"pipeline.{room}.schemas")
    name = {
        ("skate", "questions.parquet"): "QuestionsSchema",
        ("skate", "pcorrect.parquet"): "PCorrectSchema",
        ("xent", "moves.parquet"): "MovesSchema",
        ("xent", "rewards.parquet"): "RewardsSchema",
        ("xent", "token_xents.parquet"): "TokenXentsSchema",
        ("xent", "scores.parquet"): "ScoresSchema",
        ("elimination", "tables/games.parquet"): "GamesSchema",
        ("elimination", "tables/seats.parquet"): "SeatsSchema",
        ("elimination", "tables/messages.parquet"): "MessagesSchema",
        ("elimination", "tables/votes.parquet"): "VotesSchema",
        ("elimination", "tables/eliminations.parquet"): "EliminationsSchema",
        ("elimination", "tables/pairs.parquet"): "PairsSchema",
        ("elimination", "tables/final_ranks.parquet"): "FinalRanksSchema",
        ("whoisspy", "games.parquet"): "GamesSchema",
        ("whoisspy", "seats.parquet"): "SeatsSchema",
        ("whoisspy", "speeches.parquet"): "SpeechesSchema",
        ("whoisspy", "votes.parquet"): "VotesSchema",
    }[(room, relative)]
    return getattr(module, name)


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


@dataclass
class RoomInputs:
    """One benchmark's files under results/<room>/ and what was read from them."""

    name: str
    folder: Path
    metrics: dict[str, dict[str, Any]] | None
    hashes: dict[str, str] = field(default_factory=dict)  # path relative to results/ -> sha256[:16]

    def path(self, relative: str) -> Path | None:
        target = self.folder / relative
        if target.exists():
            self.hashes.setdefault(f"{self.name}/{relative}", file_hash(target))
            return target
        return None

    def table(self, relative: str, columns: list[str]) -> pl.DataFrame | None:
        """These columns of the table, checked against the room's schema (a mismatch stops with
        a TableError naming the file and column); None when the room has not written the file."""
        path = self.path(relative)
        if path is None:
            return None
        return read_columns(path, room_schema(self.name, relative), columns)

    def plot_files(self) -> list[Path]:
        """The room's own plots as SVG (copied into the site; their Vega-inlined HTML twins weigh about
        1 MB each, so the site links its own interactive charts only), hashed as inputs."""
        folder = self.folder / "plots"
        if not folder.is_dir():
            return []
        found = sorted(p for p in folder.iterdir() if p.suffix == ".svg" and p.is_file())
        for plot in found:
            self.path(f"plots/{plot.name}")
        return found


def hash_inputs(room: RoomInputs) -> None:
    """Hash every file the leaderboard may read, so the stamp does not depend on what a run rendered."""
    for relative in ROOM_FILES[room.name]:
        room.path(relative)
    room.plot_files()
    maps = room.folder / "maps"
    if maps.is_dir():
        for program in sorted(maps.rglob("*.xgl")):
            room.path(str(program.relative_to(room.folder)))


def load_room(results: Path, name: str) -> RoomInputs:
    folder = results / name
    room = RoomInputs(name=name, folder=folder, metrics=None)
    metrics_path = room.path("metrics.json")
    if metrics_path is not None:
        data = json.loads(metrics_path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            room.metrics = {str(k): v for k, v in data.items() if isinstance(v, dict)}
    return room


def load_rooms(results: Path, names: list[str]) -> dict[str, RoomInputs]:
    """The rooms among `names` whose metrics.json exists, in the given order."""
    rooms = {}
    for name in names:
        room = load_room(results, name)
        if room.metrics is not None:
            hash_inputs(room)
            rooms[name] = room
    return rooms
