"""Atomic writes (pipeline.core.artifacts.io): a killed writer's temp file is removed by the next
process that writes into the same folder, a live writer's is left alone, and the folder is looked
through once per process, not at every write (a shard's games folder holds thousands of files)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.artifacts import io
from pipeline.core.artifacts.io import write_json_atomic


def temp_of(folder: Path, name: str, pid: int) -> Path:
    """A temp file as a writer with this pid names it."""
    temp = folder / f".{name}.{io._HOST}-{pid}.abc123.tmp"
    temp.write_text("half a file")
    return temp


def test_a_killed_writers_temp_goes_at_the_next_write_and_a_live_ones_stays(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    killed = temp_of(tmp_path, "game.json", dead_pid)
    other = temp_of(tmp_path, "other.calls.parquet", dead_pid)  # another file's temp: swept too
    live = temp_of(tmp_path, "game.json", os.getppid())  # a writer still running

    write_json_atomic(tmp_path / "game.json", {"done": True})
    assert not killed.exists() and not other.exists()
    assert live.exists()
    assert (tmp_path / "game.json").read_text() == '{\n  "done": true\n}\n'


def test_the_folder_is_looked_through_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[str] = []
    real = os.scandir

    def counting(path: str | os.PathLike[str]) -> object:
        scans.append(str(path))
        return real(path)

    monkeypatch.setattr(io.os, "scandir", counting)
    for i in range(50):
        write_json_atomic(tmp_path / f"{i}.json", {"i": i})
    assert scans == [str(tmp_path)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{i}.json" for i in range(50))
