"""Typed game records: the file a benchmark's play step writes for each game (or job) and its rate
step reads back, as one frozen pydantic model per benchmark.

`write_record` writes a record as `write_json_atomic` writes a dict (indent 2, sorted keys, UTF-8,
a trailing newline), so a typed record gives the same bytes as the dict it replaces; `read_record`
reads one back and stops with a `RecordError` that names the file and every failing field, as
`read_table` does for tables.

A record keeps the file's shape exactly: a field that some files leave out is optional with a
default, and it is written only when it was set (read from a file, or passed by the code that built
the record), so reading a file and writing it back gives the same bytes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.core.artifacts.io import write_json_atomic


class RecordError(ValueError):
    """A record file that cannot be read as its model; the message names the file and the fields."""


class GameRecord(BaseModel):
    """Base of every typed record: immutable, and no key the model does not declare."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object its file holds (fields left unset are left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


R = TypeVar("R", bound=BaseModel)


def record_json(record: BaseModel) -> dict[str, Any]:
    """A record (any pydantic model) as its JSON object: fields left unset are left out."""
    if isinstance(record, GameRecord):
        return record.to_json()
    return record.model_dump(mode="json", by_alias=True, exclude_unset=True)


def write_record(path: str | os.PathLike[str], record: BaseModel) -> None:
    """Atomically write a record as pretty, key-sorted JSON (the bytes of `write_json_atomic`)."""
    write_json_atomic(path, record_json(record))


def describe_errors(exc: ValidationError, limit: int = 20) -> list[str]:
    """One line per failing field: its dotted path, what pydantic says and the value it got."""
    lines = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(part) for part in err["loc"]) or "(record)"
        value = repr(err.get("input"))
        value = value if len(value) <= 80 else value[:77] + "..."
        lines.append(f"  - {where}: {err['msg']} (got {value})")
    if exc.error_count() > limit:
        lines.append(f"  - ... and {exc.error_count() - limit} more")
    return lines


def parse_record(data: Any, model: type[R], source: str | os.PathLike[str]) -> R:
    """Validate an already-parsed JSON value as `model`; a `RecordError` names `source` and the fields."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RecordError(f"{source}: does not match {model.__name__}:\n" + "\n".join(describe_errors(exc))) from None


def read_record(path: str | os.PathLike[str], model: type[R]) -> R:
    """Read one record file as `model`; a missing, unreadable or malformed file is a `RecordError`
    that names the file (and, for a malformed one, each failing field)."""
    file = Path(path)
    if not file.exists():
        raise RecordError(f"{file}: missing (the play step that writes it has not run)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{file}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise RecordError(f"{file}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return parse_record(data, model, file)
