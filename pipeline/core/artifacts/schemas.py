"""pandera schemas for every table that crosses a stage boundary, plus validated read/write.

Tables are validated when written and again when read, so a corrupted or hand-edited file stops
the next stage with a message naming the file and the column instead of a wrong result. Tables are
declared as `TableModel`s (`tables.py`): pandera's schema is built, and pandera imported, only where
a table must be cast or its errors worded; a table already of its declared types is checked in one
polars pass that decides exactly what pandera would.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.core.artifacts.io import write_parquet_atomic
from pipeline.core.artifacts.tables import Field, TableModel, columns_of, declared_columns, is_strict, passes_unchanged

if TYPE_CHECKING:
    import pandera.polars as pa

#: a table's schema: a TableModel, or a pandera DataFrameModel declared outside the package
Schema = type[TableModel] | type["pa.DataFrameModel"]


class TableError(ValueError):
    """A table that does not match its schema; the message names the file."""


class StrictTable(TableModel):
    """Base of every table schema: no unknown columns, values coerced to the declared types."""

    strict = True
    coerce = True


#: the events a benchmark's own rating rates, written by its rate stage (core.rating.joint reads them)
EVENTS_FILE = "rating_events.parquet"


class RatingEventsSchema(StrictTable):
    """The events a benchmark's TrueSkill rates: one row per player of an event."""

    game: str  # the game the event came from: the unit a bootstrap resamples
    event: int = Field(ge=0)  # the event's position in the benchmark's rating order
    player: str
    side: int = Field(ge=0)  # players of one side (a team) share it; a free-for-all seat is its own side
    rank: int = Field(ge=1)  # the side's place, 1 = best; equal ranks tie


class CallsSchema(StrictTable):
    """One row per model request attempt (or bot move) of a job."""

    job: str
    roster_name: str
    model: str
    request_id: str
    attempt: int = Field(ge=0)
    tokens_in: int = Field(ge=0)
    tokens_out: int = Field(ge=0)
    cost_usd: float = Field(ge=0, nullable=True)
    latency_s: float = Field(ge=0)
    cache_hit: bool
    error_kind: str = Field(
        nullable=True,
        isin=[
            "timeout",
            "rate_limit",
            "server",
            "connection",
            "connection_closed",
            "malformed_body",
            "empty_choices",
            "auth",
            "bad_request",
            "empty",
        ],  # pipeline.core.models.errors.ERROR_KINDS
    )
    # the injected fault of this attempt (pipeline.core.models.faults), null for none. Optional so calls
    # tables written before the column existed still read (read_table adds it as nulls).
    fault: str | None = Field(
        nullable=True,
        isin=["timeout", "rate_limit", "server", "empty", "malformed", "overlong"],
    )
    # true: answered through the provider's batch API (pipeline.core.models.batch); null: sent directly
    batch: bool | None = Field(nullable=True)
    # hidden reasoning tokens inside tokens_out (null: the provider reported none)
    tokens_reasoning: int | None = Field(nullable=True, ge=0)
    # why the reply ended ("length": the token cap cut it); null for errors and bots
    finish_reason: str | None = Field(nullable=True)
    # parameters the provider refused for this model, dropped and sent again (comma-separated)
    dropped_params: str | None = Field(nullable=True)


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
    "fault": pl.Utf8,
    "batch": pl.Boolean,
    "tokens_reasoning": pl.Int64,
    "finish_reason": pl.Utf8,
    "dropped_params": pl.Utf8,
}


def calls_frame(rows: Sequence[dict[str, Any]]) -> pl.DataFrame:
    optional = {"fault": None, "batch": None, "tokens_reasoning": None, "finish_reason": None, "dropped_params": None}
    return pl.DataFrame([{**optional, **row} for row in rows], schema=CALLS_DTYPES, orient="row")


class RosterCheckSchema(StrictTable):
    """The roster stage's answer for each roster entry."""

    name: str = Field(unique=True)
    model: str
    kind: str = Field(isin=["model", "bot"])
    reachable: bool
    reply: str
    latency_s: float = Field(ge=0)
    tokens_in: int = Field(ge=0)
    tokens_out: int = Field(ge=0)
    cost_usd: float = Field(ge=0, nullable=True)
    error: str = Field(nullable=True)
    # how the entry's reply budgets are set (pipeline.core.models.reply_budgets.describe): chat or reasoning model
    budgets: str
    # the reply followed the check's instruction (models.check.expect); null for bots, unreachable
    # entries and a check without `expect`
    follows: bool = Field(nullable=True)
    # budgeted as a reasoning model (declared, litellm's map, or seen in its replies); null for bots
    reasoning: bool = Field(nullable=True)
    status: str = Field(isin=["ok", "warn", "fail"])
    reason: str = Field(nullable=True)  # why the entry is not ok (null when it is)


class RatingsSchema(StrictTable):
    """Multi-pass TrueSkill result per player."""

    player: str = Field(unique=True)
    mu: float
    sigma: float = Field(ge=0)
    mu_sd: float = Field(ge=0)
    events: int = Field(ge=0)
    passes: int = Field(ge=1)


class RatingSummarySchema(StrictTable):
    """`rating.rating_summary`: multi-pass TrueSkill with bootstrap intervals for mu and the rank
    (mu_lo/mu_hi null without resamples). `settled` is `rating.interval_settled(events, resamples)`;
    an unsettled player's rank interval is the whole field (1..players). Benchmarks extend it."""

    player: str
    mu: float
    sigma: float = Field(ge=0)
    mu_sd: float = Field(ge=0)
    mu_lo: float = Field(nullable=True)
    mu_hi: float = Field(nullable=True)
    rank: int = Field(ge=1)
    rank_lo: int = Field(ge=1)
    rank_hi: int = Field(ge=1)
    events: int = Field(ge=0)
    resamples: int = Field(ge=0)  # bootstrap resamples behind the intervals (0: none)
    settled: bool  # enough games and resamples for the intervals to say something


def _check(frame: pl.DataFrame, schema: Schema, path: str | os.PathLike[str]) -> pl.DataFrame:
    # a missing column is named here: pandera's coercion would stop on it with a bare polars error
    missing = [
        f"  - column {name!r}: missing (expected a column of {column.dtype})"
        for name, column in declared_columns(schema).items()
        if column.required and name not in frame.columns
    ]
    if missing:
        raise TableError(f"{path}: does not match {schema.__name__}:\n" + "\n".join(missing))
    return _validated(frame, schema, path)


def _validated(
    frame: pl.DataFrame, schema: Schema, path: str | os.PathLike[str], only: Sequence[str] | None = None
) -> pl.DataFrame:
    """`frame` checked against `schema` (or its columns `only`): in one pass where that decides
    exactly, else by pandera."""
    exact = columns_of(schema)
    if exact is not None:
        checked = exact if only is None else {c: exact[c] for c in only}
        if passes_unchanged(checked, is_strict(schema), frame):
            return frame
    pandera_schema = schema.to_schema() if only is None else schema.to_schema().select_columns(list(only))
    return _validate(pandera_schema, frame, schema.__name__, path)


def _validate(schema: pa.DataFrameSchema, frame: pl.DataFrame, name: str, path: str | os.PathLike[str]) -> pl.DataFrame:
    import pandera.polars as pa

    try:
        return schema.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as exc:
        problems = [_describe(err) for err in exc.schema_errors]
    except pa.errors.SchemaError as exc:
        problems = [_describe(exc)]
    except pl.exceptions.PolarsError as exc:  # e.g. a value that cannot be coerced at all
        problems = [f"  - table: {' '.join(str(exc).split())[:300]}"]
    raise TableError(f"{path}: does not match {name}:\n" + "\n".join(problems))


def _describe(err: pa.errors.SchemaError) -> str:
    column = getattr(err, "column_name", None)
    where = f"column {column!r}" if column else "table"
    return f"  - {where}: {' '.join(str(err).split())[:300]}"


def write_table(
    path: str | os.PathLike[str],
    frame: pl.DataFrame,
    schema: Schema,
    sort_by: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Validate, optionally sort (for byte-identical files), and write parquet atomically. A frame
    built from no rows at all (no columns either) is written as the schema's empty table."""
    if frame.width == 0 and frame.height == 0:
        frame = empty_table(schema)
    checked = _check(frame, schema, path)
    if sort_by:
        checked = checked.sort(list(sort_by), maintain_order=True)
    write_parquet_atomic(path, checked)
    return checked


def empty_table(schema: Schema) -> pl.DataFrame:
    """No rows, the schema's columns and dtypes."""
    return pl.DataFrame(schema={name: column.dtype for name, column in declared_columns(schema).items()})


def _read_parquet(path: str | os.PathLike[str]) -> pl.DataFrame:
    if not Path(path).exists():
        raise TableError(f"{path}: missing (the stage that writes it has not run)")
    try:
        return pl.read_parquet(Path(path))
    except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a corrupt file
        raise TableError(f"{path}: unreadable parquet ({exc}); delete it and rerun its stage") from None


def read_table(path: str | os.PathLike[str], schema: Schema) -> pl.DataFrame:
    return _check(_add_optional_columns(_read_parquet(path), schema), schema, path)


def read_columns(path: str | os.PathLike[str], schema: Schema, columns: Sequence[str]) -> pl.DataFrame:
    """Some columns of another stage's table, each checked against that table's schema: for readers
    (the leaderboard) that need a few columns of many tables and must not depend on the rest."""
    frame = _read_parquet(path)
    declared = declared_columns(schema)
    unknown = [c for c in columns if c not in declared]
    if unknown:
        raise ValueError(f"{schema.__name__} has no column(s) {unknown}")
    missing = [
        f"  - column {c!r}: missing (expected a column of {declared[c].dtype})"
        for c in columns
        if c not in frame.columns
    ]
    if missing:
        raise TableError(f"{path}: does not match {schema.__name__}:\n" + "\n".join(missing))
    return _validated(frame.select(list(columns)), schema, path, only=columns)


def _add_optional_columns(frame: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    """Optional columns a table was written without (it predates them) come back as nulls, so
    old and new tables of one schema stack."""
    columns = declared_columns(schema)
    missing = {
        name: pl.lit(None, dtype=column.dtype).alias(name)
        for name, column in columns.items()
        if not column.required and name not in frame.columns
    }
    if not missing:
        return frame
    frame = frame.with_columns(list(missing.values()))
    declared = [name for name in columns if name in frame.columns]
    return frame.select(declared + [c for c in frame.columns if c not in declared])
