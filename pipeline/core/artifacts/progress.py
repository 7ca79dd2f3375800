"""Progress, at two scales: across a stage (games done of total, calls, cache hits, cost so far, time
left) and inside one job (moves done of moves planned, time left).

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

Inside a job, a game's length is its moves: the `play` verb of every benchmark (pipeline.core.run.verbs)
opens a `MoveProgress` for the process (`reporting_moves`); each game adds the moves its structure plans
as it starts (`expect_moves`; a shard of games opens its own with all of theirs from the start,
pipeline.core.run.shards), and the player interface (pipeline.core.models.players) counts every move
answered (`count_move`). A line `moves 37/120 (30%), 4m10s elapsed, ~9m21s left` goes to stderr (the
job's log under Snakemake or SLURM) at most every PIPELINE_PROGRESS_EVERY_S seconds (default 30), and a
last one when the job ends if any was printed: a job shorter than that (a bot-only shard) says nothing
more. Only stderr: no table, record or metrics file sees these counts. Without an open reporter (the run
plan, a library caller) counting is one context-variable lookup.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


# -- moves inside a job ------------------------------------------------------------------------
MOVES_EVERY_ENV = "PIPELINE_PROGRESS_EVERY_S"
MOVES_EVERY_S = 30.0


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def moves_every_s() -> float:
    """Seconds between two move lines: PIPELINE_PROGRESS_EVERY_S, else 30 (0: a line every move)."""
    value = os.environ.get(MOVES_EVERY_ENV, "")
    try:
        return max(0.0, float(value)) if value.strip() else MOVES_EVERY_S
    except ValueError:
        return MOVES_EVERY_S


class MoveProgress:
    """Moves done of moves planned in one job (a game, or a shard of games on one loop), with the
    time left at the pace so far. `planned`: a fixed total (a whole game known ahead); None: the sum
    of what the job's games declare as they start (`expect`)."""

    def __init__(
        self,
        say: Callable[[str], None] = _stderr,
        *,
        planned: int | None = None,
        every_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.say = say
        self.fixed = planned is not None
        self.planned = planned or 0
        self.done = 0
        self.every_s = moves_every_s() if every_s is None else every_s
        self.clock = clock
        self.started = self.last = clock()
        self.lines = 0

    def expect(self, moves: int) -> None:
        if not self.fixed:
            self.planned += max(0, moves)

    def moved(self) -> None:
        self.done += 1
        now = self.clock()
        if now - self.last >= self.every_s:
            self.last = now
            self.lines += 1
            self.say(self.line(now))

    def seconds_left(self, now: float) -> float | None:
        """At the pace so far; None before the first move or without a plan, 0 once past it."""
        if not self.done or not self.planned:
            return None
        return (now - self.started) / self.done * max(0, self.planned - self.done)

    def line(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = _duration(now - self.started)
        if not self.planned:
            return f"moves {self.done}, {elapsed} elapsed"
        shown = f"moves {self.done}/{self.planned} ({100 * self.done // self.planned}%), {elapsed} elapsed"
        left = self.seconds_left(now)
        if left is None:
            return f"{shown}, time left known after the first move"
        if self.done >= self.planned:  # re-asks, ties or longer games than the structure's count
            return f"{shown}, past the planned moves: nearly done"
        return f"{shown}, ~{_duration(left)} left"

    def close(self) -> None:
        """The last line, only when the job said anything before (a short job stays quiet)."""
        if self.lines:
            planned = f" ({self.planned} planned)" if self.planned else ""
            self.say(f"moves {self.done}{planned} played in {_duration(self.clock() - self.started)}")


_MOVES: ContextVar[MoveProgress | None] = ContextVar("pipeline_move_progress", default=None)


@contextmanager
def reporting_moves(
    say: Callable[[str], None] = _stderr, *, planned: int | None = None, every_s: float | None = None
) -> Iterator[MoveProgress]:
    """Count the moves played inside the block (and the tasks it starts) and report them on stderr."""
    progress = MoveProgress(say, planned=planned, every_s=every_s)
    token = _MOVES.set(progress)
    try:
        yield progress
    finally:
        _MOVES.reset(token)
        progress.close()


@contextmanager
def not_counting_moves() -> Iterator[None]:
    """A dry pass of a job's own code (the batch API's probe pass): its moves are not the job's."""
    token = _MOVES.set(None)
    try:
        yield
    finally:
        _MOVES.reset(token)


def expect_moves(moves: int) -> None:
    """Called by a game as it starts: the moves its structure plans (no-op without a reporter)."""
    progress = _MOVES.get()
    if progress is not None:
        progress.expect(moves)


def count_move() -> None:
    """Called by the player interface for every move answered (no-op without a reporter)."""
    progress = _MOVES.get()
    if progress is not None:
        progress.moved()
