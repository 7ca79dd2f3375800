"""What the leaderboard reads from the benchmarks' results folders: each registered benchmark's
metrics.json and declared tables (pipeline/core/registry.py), hashed into the version stamp."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.core.registry import Benchmark, benchmark
from pipeline.core.room import RoomInputs


def hash_inputs(room: RoomInputs, bench: Benchmark) -> None:
    """Hash every file the leaderboard may read, so the stamp does not depend on what a run rendered."""
    room.path("metrics.json")
    for relative in bench.tables:
        room.path(relative)
    room.plot_files()
    for pattern in bench.extra_inputs:
        for found in sorted(room.folder.glob(pattern)):
            if found.is_file():
                room.path(found.relative_to(room.folder).as_posix())


def load_room(results: Path, bench: Benchmark) -> RoomInputs:
    room = RoomInputs(name=bench.name, folder=results / bench.name, metrics=None, tables=bench.tables)
    metrics_path = room.path("metrics.json")
    if metrics_path is not None:
        data = json.loads(metrics_path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            room.metrics = {str(k): v for k, v in data.items() if isinstance(v, dict)}
    return room


def load_rooms(results: Path, names: list[str]) -> dict[str, RoomInputs]:
    """The benchmarks among `names` whose metrics.json exists, in the given order."""
    rooms = {}
    for name in names:
        bench = benchmark(name)
        room = load_room(results, bench)
        if room.metrics is not None:
            hash_inputs(room, bench)
            rooms[name] = room
    return rooms
