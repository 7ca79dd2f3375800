"""Progress across a stage: games done of total, calls, cache hits, cost so far, time left.

A stage is one Snakemake run of many job processes, so progress is pooled through small files in
a folder that `python -m pipeline run` creates and names in PIPELINE_PROGRESS_DIR:
- each benchmark's rules name, while Snakemake parses them, the files whose presence means a game
  is done (`announce_games`, kept in memory: parsing writes nothing); the run's onstart hook writes
  them, one plan file per benchmark (`write_announced`);
- every gateway counts its calls, cache hits and cost into one file per process (`count_call`,
  flushed at most every second and at exit);
- the run command sums them (`stage_progress`) and prints a line every few seconds, but only
  when its stderr is a terminal: logs stay quiet.
Without PIPELINE_PROGRESS_DIR (a plain `snakemake` run, tests) nothing is written.
"""

from __future__ import annotations

import atexit
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.io import write_json_atomic

PROGRESS_ENV = "PIPELINE_PROGRESS_DIR"
_FLUSH_S = 1.0


def _folder() -> Path | None:
    value = os.environ.get(PROGRESS_ENV)
    return Path(value) if value else None


_ANNOUNCED: dict[str, list[str]] = {}


def announce_games(bench: str, done_paths: list[str]) -> None:
    """Called by a benchmark's rules: the files that mark each scheduled game as done (kept until the run
    starts: a parse, a dry run or a job's own parse writes nothing)."""
    _ANNOUNCED[bench] = sorted(done_paths)


def write_announced() -> None:
    """Called when a run starts (the Snakefile's onstart): one plan file per announcing benchmark."""
    folder = _folder()
    if folder is None:
        return
    for bench, done_paths in sorted(_ANNOUNCED.items()):
        write_json_atomic(folder / f"plan-{bench}.json", {"benchmark": bench, "done_paths": done_paths})


@dataclass
class _Counts:
    calls: int = 0
    cache_hits: int = 0
    cost_usd: float = 0.0
    flushed: float = 0.0
    registered: bool = False


_COUNTS = _Counts()


def count_call(*, cache_hit: bool, cost_usd: float | None) -> None:
    """Called by the gateway for every answered call of this process."""
    folder = _folder()
    if folder is None:
        return
    _COUNTS.calls += 1
    _COUNTS.cache_hits += int(cache_hit)
    _COUNTS.cost_usd += float(cost_usd or 0.0)
    if not _COUNTS.registered:
        _COUNTS.registered = True
        atexit.register(_flush, folder)
    if time.monotonic() - _COUNTS.flushed >= _FLUSH_S:
        _flush(folder)


def _flush(folder: Path) -> None:
    _COUNTS.flushed = time.monotonic()
    write_json_atomic(
        folder / f"calls-{os.getpid()}.json",
        {"calls": _COUNTS.calls, "cache_hits": _COUNTS.cache_hits, "cost_usd": _COUNTS.cost_usd},
    )


@dataclass(frozen=True)
class StageProgress:
    games_done: int
    games_total: int
    calls: int
    cache_hits: int
    cost_usd: float
    seconds: float
    seconds_left: float | None

    def line(self, label: str) -> str:
        left = "--" if self.seconds_left is None else _duration(self.seconds_left)
        return (
            f"[{label}] games {self.games_done}/{self.games_total} | calls {self.calls} "
            f"(cache hits {self.cache_hits}) | cost ${self.cost_usd:.4f} | "
            f"elapsed {_duration(self.seconds)} | left {left}"
        )


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def stage_progress(
    folder: Path,
    benches: list[str] | None,
    started: float,
    baseline: tuple[int, float] | None = None,
    root: Path = Path("."),
) -> StageProgress:
    """Sum the plan and call files of a run (benchmarks: the benchmarks its targets name; None: all).
    `baseline`: (games done, monotonic time) when first looked at, for the time left."""
    done = total = 0
    for plan in sorted(folder.glob("plan-*.json")):
        data = _read(plan)
        if data is None or (benches is not None and data.get("benchmark") not in benches):
            continue
        paths = data.get("done_paths", [])
        total += len(paths)
        done += sum((root / p).exists() for p in paths)
    calls = hits = 0
    cost = 0.0
    for counts in folder.glob("calls-*.json"):
        data = _read(counts) or {}
        calls += int(data.get("calls", 0))
        hits += int(data.get("cache_hits", 0))
        cost += float(data.get("cost_usd", 0.0))
    now = time.monotonic()
    done_then, then = baseline if baseline is not None else (done, now)
    played = done - done_then
    left = (total - done) * (now - then) / played if played > 0 else None
    elapsed = now - started
    return StageProgress(done, total, calls, hits, cost, elapsed, left)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
