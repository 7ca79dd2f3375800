"""The dataset card (README.md) of an export: what each file holds, field by field, the counts, the
leaderboard version, the licence note and how to load it. Its YAML header names one configuration
per file, so `datasets.load_dataset(DIR, NAME)` finds them. No date and no path outside the folder:
the same export gives the same card."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
from polars.datatypes import DataTypeClass

from pipeline.export.schemas import CALLS_DESCRIPTIONS, DESCRIPTIONS, calls_dtypes, games_dtypes

if TYPE_CHECKING:
    from pipeline.export.summary import ExportedBenchmark, ExportSummary

CARD = "README.md"
#: the line after the card's header: what marks a folder as an export this command may replace
MARKER = "<!-- written by `python -m pipeline export`: rerun it to update; edits here are overwritten -->"
LICENCE = (
    "The code that played these games is under the project's licence (MIT, the repository's LICENSE). "
    "The games' text is the output of the players named in `seats.model`: language models, whose "
    "providers' terms of use apply to their output, and the project's scripted bots (`bot/NAME`). The "
    "export adds no licence of its own; read the providers' terms before training a model on the text."
)


def render_card(summary: ExportSummary, folder: Path) -> str:
    lines = [*_header(summary), MARKER, ""]  # the header first: Hugging Face reads it only there
    lines += [f"# Games of the tournament pipeline: {summary.stamp.line}", ""]
    lines += [
        "Every game the pipeline played, one row per game with its seats, every move in game order and "
        "the outcome, and one row per model call. Written by `python -m pipeline export` from the "
        "results folder; the same results give byte-identical files.",
        "",
        "## Files",
        "",
        "| file | rows | bytes | what |",
        "|---|---|---|---|",
    ]
    for bench in summary.benchmarks:
        lines.append(
            _file_line(folder, f"{bench.name}/games.parquet", bench.games.height, f"{bench.title}: one row per game")
        )
        if bench.calls is not None:
            lines.append(
                _file_line(
                    folder, f"{bench.name}/calls.parquet", bench.calls.height, "one row per model call or bot move"
                )
            )
    if summary.skipped:
        lines += ["", "Not exported: " + "; ".join(summary.skipped) + "."]
    lines += ["", "## The benchmarks", ""]
    for bench in summary.benchmarks:
        lines += _benchmark_section(bench)
    lines += ["## Fields of `<benchmark>/games.parquet`", "", *_fields(games_dtypes(), DESCRIPTIONS), ""]
    lines += ["## Fields of `<benchmark>/calls.parquet`", "", *_fields(calls_dtypes(), CALLS_DESCRIPTIONS), ""]
    lines += _loading(summary)
    lines += [
        "## Secrets",
        "",
        "Every string was scrubbed before writing: the values of the environment's key variables "
        "(names holding KEY, TOKEN, SECRET or PASSWORD, and each roster entry's `api_key_env`), every "
        "string of a roster entry's `extra` (api_base, headers) and anything shaped like a credential "
        "(`Authorization: ...`, `Bearer ...`, `sk-...`) read `[redacted]`. The roster's own entries are "
        "not exported: a seat names its roster name and model string only. Prompts are not part of the "
        "results, so they are not here either: the game's rules and a seat's moves say what it was shown.",
        "",
        "## Licence",
        "",
        LICENCE,
        "",
    ]
    return "\n".join(lines)


def _header(summary: ExportSummary) -> list[str]:
    """The Hugging Face card header: one configuration per file."""
    lines = ["---", "pretty_name: Tournament pipeline games", "license: other", "configs:"]
    for bench in summary.benchmarks:
        parts = [("", "games")] + ([("_calls", "calls")] if bench.calls is not None else [])
        for suffix, table in parts:
            lines += [
                f"- config_name: {bench.name}{suffix}",
                "  data_files:",
                "  - split: train",
                f"    path: {bench.name}/{table}.parquet",
            ]
    return [*lines, "---"]


def _file_line(folder: Path, relative: str, rows: int, what: str) -> str:
    return f"| `{relative}` | {rows} | {(folder / relative).stat().st_size} | {what} |"


def _benchmark_section(bench: ExportedBenchmark) -> list[str]:
    games = bench.games
    moves = games.select(pl.col("moves").explode()).unnest("moves").drop_nulls("kind")
    kinds = Counter(moves["kind"].to_list())
    rated = int(games["rated"].sum()) if games.height else 0
    lines = [
        f"### {bench.title} (`{bench.name}/`)",
        "",
        bench.about,
        "",
        f"{games.height} games ({rated} rated by the leaderboard), {moves.height} moves"
        + (f" ({', '.join(f'{kind} {n}' for kind, n in sorted(kinds.items()))})" if kinds else "")
        + (f", {bench.calls.height} calls" if bench.calls is not None else "")
        + ".",
        "",
    ]
    return lines


def _fields(schema: dict[str, pl.DataType], descriptions: dict[str, str]) -> list[str]:
    lines = ["| field | type | meaning |", "|---|---|---|"]
    for name, dtype in schema.items():
        lines.append(f"| `{name}` | {_type_name(dtype)} | {descriptions.get(name, '')} |")
        inner = dtype.inner if isinstance(dtype, pl.List) else None
        if isinstance(inner, pl.Struct):
            for item in inner.fields:
                lines.append(
                    f"| `{name}[].{item.name}` | {_type_name(item.dtype)} | {descriptions.get(f'{name}.{item.name}', '')} |"
                )
    return lines


def _type_name(dtype: pl.DataType | DataTypeClass) -> str:
    if isinstance(dtype, pl.List):
        inner = dtype.inner
        return "list of struct" if isinstance(inner, pl.Struct) else f"list of {_type_name(inner)}"
    names = {pl.String: "string", pl.Int64: "int64", pl.Float64: "float64", pl.Boolean: "bool"}
    return next((text for kind, text in names.items() if dtype == kind), str(dtype))


def _loading(summary: ExportSummary) -> list[str]:
    first = summary.benchmarks[0].name if summary.benchmarks else "whoisspy"
    return [
        "## Loading",
        "",
        "Paths are relative to this folder. With polars:",
        "",
        "```python",
        "import polars as pl",
        "",
        f'games = pl.read_parquet("{first}/games.parquet")',
        'moves = games.select("game_id", "moves").explode("moves").unnest("moves")  # one row per move',
        'results = games.select("game_id", "results").explode("results").unnest("results")',
        'every_game = pl.read_parquet("*/games.parquet")  # the games files share their columns',
        "```",
        "",
        "With Hugging Face `datasets` (each file is a configuration of the header above):",
        "",
        "```python",
        "import os",
        "from datasets import load_dataset",
        "",
        f'games = load_dataset("parquet", data_files="{first}/games.parquet", split="train")',
        'every_game = load_dataset("parquet", data_files="*/games.parquet", split="train")',
        f'games = load_dataset(os.getcwd(), "{first}", split="train")  # by configuration name (a path, not ".")',
        "```",
        "",
        "`params` and every `details` are JSON text: `json.loads` them, or decode a column whole with polars "
        '(`moves["details"].str.json_decode()`).',
        "",
    ]
