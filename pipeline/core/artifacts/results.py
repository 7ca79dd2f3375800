"""A benchmark's results folder as the leaderboard reads it: its metrics (the metrics record,
metrics_record.py), its declared tables (checked against the benchmark's pandera schemas) and the
content hash of every file read.

Every file is optional: a missing metrics.json skips the benchmark, a missing table skips its
replays. The hashes go into the leaderboard's version stamp, so a page says which inputs made it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.core.artifacts.metrics_record import MetricsRecord
from pipeline.core.artifacts.schemas import Schema, read_columns


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


@dataclass
class BenchmarkResults:
    """One benchmark's files under results/<name>/ and what was read from them."""

    name: str
    folder: Path
    metrics: MetricsRecord | None  # None: the benchmark has not written its metrics.json
    # the tables the leaderboard may read (path relative to the folder -> the schema it was written with)
    tables: Mapping[str, Schema] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)  # path relative to results/ -> sha256[:16]

    def path(self, relative: str) -> Path | None:
        target = self.folder / relative
        if target.exists():
            self.hashes.setdefault(f"{self.name}/{relative}", file_hash(target))
            return target
        return None

    def table(self, relative: str, columns: list[str]) -> pl.DataFrame | None:
        """These columns of a declared table, checked against its schema (a mismatch stops with a
        TableError naming the file and column); None when the benchmark has not written the file."""
        if relative not in self.tables:
            raise KeyError(
                f"{self.name}: {relative} is not among the benchmark's declared tables {sorted(self.tables)}"
            )
        path = self.path(relative)
        if path is None:
            return None
        return read_columns(path, self.tables[relative], columns)

    def plot_files(self) -> list[Path]:
        """The benchmark's own plots as SVG (copied into the site; their Vega-inlined HTML twins weigh about
        1 MB each, so the site links its own interactive charts only), hashed as inputs."""
        folder = self.folder / "plots"
        if not folder.is_dir():
            return []
        found = sorted(p for p in folder.iterdir() if p.suffix == ".svg" and p.is_file())
        for plot in found:
            self.path(f"plots/{plot.name}")
        return found
