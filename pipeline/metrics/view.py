"""Every DVC metrics file as a table a terminal can show.

`dvc metrics show` prints one row per file with one column per flattened key, so a
`{model: {metric: value}}` file of six models and thirty metrics becomes one row thousands of
characters wide. Here each file is a table of models by metrics, cut into blocks
of columns that fit the width (models run down the page, or metrics when there are more of
them); any other shape is listed as `key: value` lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class MetricsFile:
    path: str  # relative to the project root, as dvc.yaml names it
    stage: str
    data: Any  # the parsed JSON, or None when the file is missing


def declared_metrics(root: Path) -> list[tuple[str, str]]:
    """(stage, path) of every metrics file dvc.yaml declares, in its order."""
    spec = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8")) or {}
    found: list[tuple[str, str]] = []
    for stage, body in (spec.get("stages") or {}).items():
        for item in (body or {}).get("metrics") or []:
            path = next(iter(item)) if isinstance(item, Mapping) else str(item)
            found.append((stage, path))
    return found


def read_metrics(root: Path, names: Sequence[str] = ()) -> list[MetricsFile]:
    """The declared metrics files whose stage or path contains one of `names` (all when empty)."""
    files = []
    for stage, path in declared_metrics(root):
        if names and not any(name in stage or name in path for name in names):
            continue
        target = root / path
        data = json.loads(target.read_text(encoding="utf-8")) if target.exists() else None
        files.append(MetricsFile(path, stage, data))
    return files


def _is_per_model(data: Any) -> bool:
    return isinstance(data, Mapping) and bool(data) and all(isinstance(v, Mapping) for v in data.values())


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _flatten(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield from _flatten(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, data


def _blocks(header: list[str], rows: list[list[str]], width: int) -> Iterator[tuple[list[str], list[list[str]]]]:
    """The table cut into column blocks that fit `width`, each repeating the first column."""
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]
    start = 1
    while start < len(header):
        used, stop = widths[0], start
        while stop < len(header) and (stop == start or used + 2 + widths[stop] <= width):
            used += 2 + widths[stop]
            stop += 1
        keep = [0, *range(start, stop)]
        yield (
            [header[i].ljust(widths[i]) for i in keep],
            [[row[i].ljust(widths[i]) if i == 0 else row[i].rjust(widths[i]) for i in keep] for row in rows],
        )
        start = stop


def render(file: MetricsFile, width: int = 100) -> str:
    lines = [f"{file.path}  (stage {file.stage})"]
    if file.data is None:
        lines.append("  not written yet: run `dvc repro` or `python -m pipeline run`")
    elif _is_per_model(file.data):
        metrics = sorted({key for values in file.data.values() for key in values})
        models = list(file.data)
        if len(models) < len(metrics):  # the longer list runs down the page: fewer, longer blocks
            header = ["metric", *models]
            rows = [[m, *(_cell(file.data[model].get(m)) for model in models)] for m in metrics]
        else:
            header = ["model", *metrics]
            rows = [[str(model), *(_cell(file.data[model].get(m)) for m in metrics)] for model in models]
        for block_header, block_rows in _blocks(header, rows, width - 2):
            lines.append("")
            lines.append("  " + "  ".join(block_header).rstrip())
            lines.extend("  " + "  ".join(row).rstrip() for row in block_rows)
    else:
        pairs = list(_flatten(file.data))
        name_width = max((len(k) for k, _ in pairs), default=0)
        lines.extend(f"  {key.ljust(name_width)}  {_cell(value)}" for key, value in pairs)
    return "\n".join(lines)
