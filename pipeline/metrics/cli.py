"""`python -m pipeline metrics`: every benchmark's metrics, readable in a terminal."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def _cmd_metrics(args: argparse.Namespace) -> int:
    from pipeline.core.artifacts import ParamsError
    from pipeline.metrics.view import read_metrics, render

    root = Path(args.root)
    if not (root / "dvc.yaml").exists():
        raise ParamsError(f"no dvc.yaml in {root.resolve()}: run this in the project's root (or pass --root)")
    files = read_metrics(root, args.names)
    if not files:
        raise ParamsError(f"no metrics file in dvc.yaml matches {' '.join(args.names)!r}")
    if args.json:
        print(json.dumps({f.path: f.data for f in files}, indent=1, ensure_ascii=False))
        return 0
    width = args.width or shutil.get_terminal_size((100, 24)).columns
    print("\n\n".join(render(f, width) for f in files))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    metrics = commands.add_parser(
        "metrics",
        help="every metrics file dvc.yaml declares, as tables of models by metrics that fit the terminal",
        description="Readable `dvc metrics show`: one table per file, models by metrics, cut into blocks of "
        "columns that fit the width. Compare versions with `dvc metrics diff` or "
        "`python -m pipeline diff REV_A REV_B`.",
    )
    metrics.add_argument("names", nargs="*", help="only stages or paths containing these words (e.g. skate)")
    metrics.add_argument("--root", default=".", help="project root holding dvc.yaml")
    metrics.add_argument("--width", type=int, default=None, help="columns to fit (default: the terminal's)")
    metrics.add_argument("--json", action="store_true", help="the files as one JSON object")
    metrics.set_defaults(func=_cmd_metrics)
