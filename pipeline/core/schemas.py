"""pandera schemas for every table that crosses a stage boundary, plus validated read/write.

Tables are validated when written and again when read, so a corrupted or hand-edited file stops
the next stage with a message naming the file and the column instead of a wrong result.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandera.polars as pa
import polars as pl

from pipeline.core.io import write_parquet_atomic


class TableError(ValueError):
    """A table that does not match its schema; the message names the file."""


class StrictTable(pa.DataFrameModel):
    """Base of every table schema: no unknown columns, values coerced to the declared types."""

    class Config:
        strict = True
        coerce = True


class CallsSchema(StrictTable):
    """One row per model request attempt (or bot move) of a job."""

    job: str
    roster_name: str
    model: str
    request_id: str
    attempt: int = pa.Field(ge=0)
    tokens_in: int = pa.Field(ge=0)
    tokens_out: int = pa.Field(ge=0)
    cost_usd: float = pa.Field(ge=0, nullable=True)
    latency_s: float = pa.Field(ge=0)
    cache_hit: bool
    error_kind: str = pa.Field(
        nullable=True,
        isin=["timeout", "rate_limit", "server", "connection", "auth", "bad_request", "empty"],
    )


CALLS_DTYPES: dict[str, Any] = {
    "job": pl.Utf8,
    "roster_name": pl.Utf8,
    "model": pl.Utf8,
    "request_id": pl.Utf8,
    "attempt": pl.Int64,
    "tokens_in": pl.Int64,
    "tokens_out": pl.Int64,
    "cost_usd": pl.Float64,
    "latency_s": pl.Float64,
    "cache_hit": pl.Boolean,
    "error_kind": pl.Utf8,
}


def calls_frame(rows: Sequence[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=CALLS_DTYPES, orient="row")


class RosterCheckSchema(StrictTable):
    """The roster stage's answer for each roster entry."""

    name: str = pa.Field(unique=True)
    model: str
    kind: str = pa.Field(isin=["model", "bot"])
    reachable: bool
    reply: str
    latency_s: float = pa.Field(ge=0)
    tokens_in: int = pa.Field(ge=0)
    tokens_out: int = pa.Field(ge=0)
    cost_usd: float = pa.Field(ge=0, nullable=True)
    error: str = pa.Field(nullable=True)


class RatingsSchema(StrictTable):
    """Multi-pass TrueSkill result per player."""

    player: str = pa.Field(unique=True)
    mu: float
    sigma: float = pa.Field(ge=0)
    mu_sd: float = pa.Field(ge=0)
    events: int = pa.Field(ge=0)
    passes: int = pa.Field(ge=1)


def _check(frame: pl.DataFrame, schema: type[pa.DataFrameModel], path: str | os.PathLike[str]) -> pl.DataFrame:
    try:
        return schema.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as exc:
        problems = [_describe(err) for err in exc.schema_errors]
    except pa.errors.SchemaError as exc:
        problems = [_describe(exc)]
    raise TableError(f"{path}: does not match {schema.__name__}:\n" + "\n".join(problems))


def _describe(err: pa.errors.SchemaError) -> str:
    column = getattr(err, "column_name", None)
    where = f"column {column!r}" if column else "table"
    return f"  - {where}: {' '.join(str(err).split())[:300]}"


def write_table(
    path: str | os.PathLike[str],
    frame: pl.DataFrame,
    schema: type[pa.DataFrameModel],
    sort_by: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Validate, optionally sort (for byte-identical files), and write parquet atomically."""
    checked = _check(frame, schema, path)
    if sort_by:
        checked = checked.sort(list(sort_by), maintain_order=True)
    write_parquet_atomic(path, checked)
    return checked


def read_table(path: str | os.PathLike[str], schema: type[pa.DataFrameModel]) -> pl.DataFrame:
    if not Path(path).exists():
        raise TableError(f"{path}: missing (the stage that writes it has not run)")
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a corrupt file
        raise TableError(f"{path}: unreadable parquet ({exc}); delete it and rerun its stage") from None
    return _check(frame, schema, path)
