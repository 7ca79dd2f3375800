"""`python -m pipeline export`: the games of every benchmark as a Parquet dataset with its card."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_export(args: argparse.Namespace) -> int:
    from pipeline.export.build import export_dataset

    done = export_dataset(Path(args.results), Path(args.out), Path(args.models), args.benchmark or None)
    for bench in done.benchmarks:
        calls = f", {bench.calls.height} calls" if bench.calls is not None else ""
        print(f"{bench.name}: {bench.games.height} games{calls}", file=sys.stderr)
    for skipped in done.skipped:
        print(f"skipped {skipped}", file=sys.stderr)
    print(f"{done.stamp.line}; card: {done.out / 'README.md'}", file=sys.stderr)
    print(done.out.resolve())
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    export = commands.add_parser(
        "export",
        help="write every benchmark's games (one row per game: seats, moves, outcome) and model calls as "
        "Parquet, with a dataset card (README.md); secrets removed",
    )
    export.add_argument("--out", required=True, help="the dataset folder: new, empty, or an earlier export")
    export.add_argument("--results", default="results", help="folder holding results/<benchmark>/")
    export.add_argument(
        "--models",
        default="params/models.yaml",
        help="the roster whose keys' variables and `extra` values (api_base, headers) are removed",
    )
    export.add_argument("--benchmark", action="append", metavar="NAME", help="export only this benchmark (repeatable)")
    export.set_defaults(func=_cmd_export)
