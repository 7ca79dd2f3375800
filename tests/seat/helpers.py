"""A work directory whose roster has a person's seat, `alice` (`bot: human`), and the records a seat game writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

HUMAN = {"name": "alice", "bot": "human"}


def add_person(project: Path) -> Path:
    """The project's params/models.yaml with `alice` added; its path."""
    path = project / "params" / "models.yaml"
    data = yaml.safe_load(path.read_text())
    data["roster"].append(HUMAN)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def only_record(folder: Path) -> dict[str, Any] | list[Any]:
    """The one game record under `folder` (beside its calls table)."""
    records = sorted(folder.glob("*.json"))
    assert len(records) == 1, records
    assert records[0].with_suffix(".calls.parquet").is_file()
    found: dict[str, Any] | list[Any] = json.loads(records[0].read_text())
    return found


def spy_seat(record: dict[str, Any], name: str = "alice") -> str:
    """The seat label `name` sat in, in a Who is Spy record."""
    return next(p["seat"] for p in record["players"] if p["model"] == name)
