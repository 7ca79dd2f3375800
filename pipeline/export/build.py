"""`python -m pipeline export --out DIR`: every benchmark's games as a Parquet dataset with its card.

For each registered benchmark that declares `dataset` and has results, DIR/<benchmark>/games.parquet
(one row per game: seats, moves, results, columns of ExportGamesSchema) and, when the benchmark wrote
a calls table, DIR/<benchmark>/calls.parquet (one row per model call); DIR/README.md is the card.
The same results give the same bytes: rows sorted, columns in a fixed order, no time but the
leaderboard stamp's. Every string is scrubbed of secrets (export/scrub.py). The folder is built
beside DIR and swapped in whole, so a reader never sees half an export, and a rerun leaves no file
of an earlier one.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts import InputError, canonical_json, read_table, write_table, write_text_atomic
from pipeline.core.artifacts.dataset import DatasetGame
from pipeline.core.artifacts.schemas import CallsSchema
from pipeline.core.run.registry import Benchmark, benchmarks
from pipeline.export.card import CARD, MARKER, render_card
from pipeline.export.schemas import ExportCallsSchema, ExportGamesSchema, games_dtypes
from pipeline.export.scrub import Secrets, collect_secrets
from pipeline.export.summary import ExportedBenchmark, ExportSummary, LeaderboardStamp, read_stamp


class ExportError(InputError):
    """An export that cannot be written as asked; shown as is."""


def export_dataset(
    results: Path, out: Path, models: Path | None = None, names: Sequence[str] | None = None
) -> ExportSummary:
    """Export the games under `results` (every benchmark, or those in `names`) to `out`."""
    declared = [b for b in benchmarks() if names is None or b.name in names]
    unknown = sorted(set(names or ()) - {b.name for b in declared})
    if unknown:
        raise InputError(
            f"export: no benchmark named {', '.join(unknown)}; registered: {[b.name for b in benchmarks()]}"
        )
    if not results.is_dir():
        raise InputError(f"export: --results {results} is no directory; name the folder holding results/<benchmark>/")
    _check_replaceable(out)
    secrets = collect_secrets(models)
    summary = ExportSummary(out=out, stamp=read_stamp(results))
    for bench in declared:
        folder = results / bench.name
        if bench.dataset is None:
            summary.skipped.append(f"{bench.name}: declares no dataset")
        elif not folder.is_dir():
            summary.skipped.append(f"{bench.name}: no results under {folder}")
        else:
            summary.benchmarks.append(_export_benchmark(bench, folder, summary.stamp, secrets))
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=_parent(out)))
    staging.chmod(0o755)  # mkdtemp makes 0700; a dataset is meant to be shared
    try:
        for exported in summary.benchmarks:
            _write_benchmark(staging / exported.name, exported)
        write_text_atomic(staging / CARD, render_card(summary, staging))
        _check_written(staging, secrets)
        _swap_in(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return summary


def _parent(out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    return out.parent


def _check_replaceable(out: Path) -> None:
    """`out` may be new, empty, or an earlier export (its card has the marker line); anything else
    is someone's folder, which an export must not replace."""
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(f"export: {out} is a file; name a folder for the dataset")
    card = out / CARD
    if any(out.iterdir()) and not (card.is_file() and MARKER in card.read_text(encoding="utf-8").split("\n")):
        raise InputError(
            f"export: {out} holds files that are no earlier export (no README.md with the export's marker "
            "line); name a new or empty folder"
        )


def _swap_in(staging: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{staging.name.rsplit('.', 1)[-1]}")
        out.rename(old)
    staging.rename(out)
    if old is not None:
        shutil.rmtree(old)


def _export_benchmark(bench: Benchmark, folder: Path, stamp: LeaderboardStamp, secrets: Secrets) -> ExportedBenchmark:
    assert bench.dataset is not None
    games = sorted(bench.dataset(folder), key=lambda g: g.game_id)
    calls = _calls(folder / "calls.parquet", bench.name, secrets)
    models = _models_by_job(calls)
    rows = [_game_row(bench.name, game, models, stamp.version, secrets) for game in games]
    frame = pl.DataFrame(rows, schema=games_dtypes(), orient="row")
    return ExportedBenchmark(bench.name, bench.title, _about(bench), frame, calls)


def _about(bench: Benchmark) -> str:
    """The first paragraph of the docstring of the module that defines the benchmark's `dataset`."""
    import inspect

    module = inspect.getmodule(bench.dataset)
    text = inspect.cleandoc(module.__doc__ or "") if module is not None else ""
    return " ".join(text.split("\n\n")[0].split())


def _calls(path: Path, benchmark: str, secrets: Secrets) -> pl.DataFrame | None:
    if not path.exists():
        return None
    calls = read_table(path, CallsSchema)
    text = [name for name, dtype in calls.schema.items() if dtype == pl.String]
    scrubbed = calls.with_columns(secrets.scrub_column(pl.col(name)) for name in text)
    ordered = scrubbed.select(pl.lit(benchmark).alias("benchmark"), *calls.columns)
    return ordered.sort(["job", "roster_name", "request_id", "attempt"], maintain_order=True)


def _models_by_job(calls: pl.DataFrame | None) -> dict[str, dict[str, set[str]]]:
    """job -> roster name -> the model strings its calls in that job went to."""
    found: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    if calls is not None:
        for job, name, model in calls.select("job", "roster_name", "model").unique().iter_rows():
            found[job][name].add(model)
    return found


def _model(player: str, jobs: Sequence[str], models: dict[str, dict[str, set[str]]]) -> str | None:
    """The model behind `player` in these jobs; else in any job of the benchmark; None when no call
    of the player was recorded. Several (the roster entry changed between jobs): joined with ' | '."""
    used = set().union(*(models[job].get(player, set()) for job in jobs if job in models))
    if not used:
        used = set().union(*(by_name.get(player, set()) for by_name in models.values()))
    return " | ".join(sorted(used)) or None


def _game_row(
    benchmark: str, game: DatasetGame, models: dict[str, dict[str, set[str]]], version: str | None, secrets: Secrets
) -> dict[str, Any]:
    """The game as a row of games.parquet, every string scrubbed (before `params` and `details`
    become JSON text, so a secret is found as it was written, not as JSON escapes it)."""
    player_of = {seat.seat: seat.player for seat in game.seats}
    row = {
        "benchmark": benchmark,
        "game_id": game.game_id,
        "variant": game.variant,
        "params": game.params,
        "seats": [
            {"seat": s.seat, "player": s.player, "model": _model(s.player, game.jobs, models), "role": s.role}
            for s in game.seats
        ],
        "moves": [
            {
                "index": index,
                "round": m.round,
                "seat": m.seat,
                "player": player_of.get(m.seat or ""),
                "kind": m.kind,
                "reply": m.reply,
                "move": m.move,
                "details": m.details,
            }
            for index, m in enumerate(game.moves)
        ],
        "results": [
            {
                "seat": r.seat,
                "player": player_of.get(r.seat),
                "score": r.score,
                "rank": r.rank,
                "won": r.won,
                "details": r.details,
            }
            for r in game.results
        ],
        "winner": game.winner,
        "end_reason": game.end_reason,
        "rated": game.rated,
        "jobs": sorted(game.jobs),
        "leaderboard_version": version,
    }
    scrubbed: dict[str, Any] = secrets.scrub_any(row)
    scrubbed["params"] = canonical_json(scrubbed["params"])
    for item in (*scrubbed["moves"], *scrubbed["results"]):
        item["details"] = None if item["details"] is None else canonical_json(item["details"])
    return scrubbed


def _write_benchmark(folder: Path, exported: ExportedBenchmark) -> None:
    exported.games = write_table(folder / "games.parquet", exported.games, ExportGamesSchema)
    if exported.calls is not None:
        exported.calls = write_table(folder / "calls.parquet", exported.calls, ExportCallsSchema)


def _check_written(staging: Path, secrets: Secrets) -> None:
    """A last look at every file's bytes (the card and any plain text; Parquet pages are
    compressed, so its strings were scrubbed before writing)."""
    for path in sorted(p for p in staging.rglob("*") if p.is_file()):
        if secrets.found_in(path.read_bytes()):
            raise ExportError(f"export: {path.name} would hold a secret value; the output was left as it was")
