"""pandera schemas for every table that crosses a stage boundary, plus validated read/write.

Tables are validated when written and again when read, so a corrupted or hand-edited file stops
the next stage with a message naming the file and the column instead of a wrong result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandera.polars as pa
import polars as pl

from pipeline.core.artifacts.io import write_parquet_atomic


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
    fault: str | None = pa.Field(
        nullable=True,
        isin=["timeout", "rate_limit", "server", "empty", "malformed", "overlong"],
    )
    # true: answered through the provider's batch API (pipeline.core.models.batch); null: sent directly
    batch: bool | None = pa.Field(nullable=True)
    # hidden reasoning tokens inside tokens_out (null: the provider reported none)
    tokens_reasoning: int | None = pa.Field(nullable=True, ge=0)
    # why the reply ended ("length": the token cap cut it); null for errors and bots
    finish_reason: str | None = pa.Field(nullable=True)
    # parameters the provider refused for this model, dropped and sent again (comma-separated)
    dropped_params: str | None = pa.Field(nullable=True)


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
    # how the entry's reply budgets are set (pipeline.core.models.reply_budgets.describe): chat or reasoning model
    budgets: str
    # the reply followed the check's instruction (models.check.expect); null for bots, unreachable
    # entries and a check without `expect`
    follows: bool = pa.Field(nullable=True)
    status: str = pa.Field(isin=["ok", "warn", "fail"])
    reason: str = pa.Field(nullable=True)  # why the entry is not ok (null when it is)


class RatingsSchema(StrictTable):
    """Multi-pass TrueSkill result per player."""

    player: str = pa.Field(unique=True)
    mu: float
    sigma: float = pa.Field(ge=0)
    mu_sd: float = pa.Field(ge=0)
    events: int = pa.Field(ge=0)
    passes: int = pa.Field(ge=1)


class RatingSummarySchema(StrictTable):
    """`rating.rating_summary`: multi-pass TrueSkill with bootstrap intervals for mu and the rank
    (mu_lo/mu_hi null without resamples). `settled` is `rating.interval_settled(events, resamples)`;
    an unsettled player's rank interval is the whole field (1..players). Benchmarks extend it."""

    player: str
    mu: float
    sigma: float = pa.Field(ge=0)
    mu_sd: float = pa.Field(ge=0)
    mu_lo: float = pa.Field(nullable=True)
    mu_hi: float = pa.Field(nullable=True)
    rank: int = pa.Field(ge=1)
    rank_lo: int = pa.Field(ge=1)
    rank_hi: int = pa.Field(ge=1)
    events: int = pa.Field(ge=0)
    resamples: int = pa.Field(ge=0)  # bootstrap resamples behind the intervals (0: none)
    settled: bool  # enough games and resamples for the intervals to say something


def _check(frame: pl.DataFrame, schema: type[pa.DataFrameModel], path: str | os.PathLike[str]) -> pl.DataFrame:
    # a missing column is named here: pandera's coercion would stop on it with a bare polars error
    missing = [
        f"  - column {name!r}: missing (expected a column of {column.dtype})"
        for name, column in schema.to_schema().columns.items()
        if column.required and name not in frame.columns
    ]
    if missing:
        raise TableError(f"{path}: does not match {schema.__name__}:\n" + "\n".join(missing))
    return _validate(schema.to_schema(), frame, schema.__name__, path)


# A column check pandera would run, as the one polars expression pandera's polars backend builds
# for it (pandera/backends/polars/builtin_checks.py), keyed by the check's name
_CHECK_EXPRESSIONS: dict[str, Callable[[pl.Expr, dict[str, Any]], pl.Expr]] = {
    "greater_than_or_equal_to": lambda column, stats: column.ge(stats["min_value"]),
    "greater_than": lambda column, stats: column.gt(stats["min_value"]),
    "less_than_or_equal_to": lambda column, stats: column.le(stats["max_value"]),
    "less_than": lambda column, stats: column.lt(stats["max_value"]),
    "isin": lambda column, stats: column.is_in(list(stats["allowed_values"])),
    "notin": lambda column, stats: column.is_in(list(stats["forbidden_values"])).not_(),
}
# dtypes whose equality is exact (no time unit, zone or inner type that a cast would change)
_PLAIN_DTYPES = (pl.String, pl.Int64, pl.Int32, pl.Float64, pl.Float32, pl.Boolean)


def _passes_unchanged(schema: pa.DataFrameSchema, frame: pl.DataFrame) -> bool:
    """Whether pandera would pass `frame` and return it as it is: every column already of its
    declared dtype (so coercion changes nothing) and every check passing. Evaluated in one polars
    pass with pandera's own expressions and null rules; pandera's backend collects once per column
    and check (about 25 ms for an 11-column table, most of a small job's table I/O). False for
    anything it does not decide exactly (a cast, a dataframe-level check, an unknown check): pandera
    then validates, coerces and names the failures, as before."""
    if schema.checks or schema.unique or schema.ordered or schema.add_missing_columns or schema.strict == "filter":
        return False
    if schema.strict and not set(frame.columns) <= set(schema.columns):
        return False
    tests: list[pl.Expr] = []
    for name, column in schema.columns.items():
        if column.regex or column.dtype is None:
            return False
        if name not in frame.columns:
            if column.required:
                return False
            continue
        declared, actual = column.dtype.type, frame.schema[name]
        if not any(actual == plain for plain in _PLAIN_DTYPES) or actual != declared:
            return False
        values = pl.col(name)
        if not column.nullable:  # pandera counts NaN as null in a float column
            present = values.is_not_null() & values.is_not_nan() if actual.is_float() else values.is_not_null()
            tests.append(present.all())
        if column.unique:
            tests.append(values.is_duplicated().any().not_())
        for check in column.checks:
            build = _CHECK_EXPRESSIONS.get(check.name)
            if build is None or check.element_wise:
                return False
            passed = build(values, check.statistics)
            # pandera: with ignore_na a null outcome passes, without it fails
            tests.append((passed | passed.is_null()).all() if check.ignore_na else passed.fill_null(False).all())
    if not tests:
        return True
    return all(frame.select([t.alias(f"_{i}") for i, t in enumerate(tests)]).row(0))


def _validate(schema: pa.DataFrameSchema, frame: pl.DataFrame, name: str, path: str | os.PathLike[str]) -> pl.DataFrame:
    if _passes_unchanged(schema, frame):
        return frame
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
    schema: type[pa.DataFrameModel],
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


def empty_table(schema: type[pa.DataFrameModel]) -> pl.DataFrame:
    """No rows, the schema's columns and dtypes."""
    return pl.DataFrame(schema={name: column.dtype.type for name, column in schema.to_schema().columns.items()})


def _read_parquet(path: str | os.PathLike[str]) -> pl.DataFrame:
    if not Path(path).exists():
        raise TableError(f"{path}: missing (the stage that writes it has not run)")
    try:
        return pl.read_parquet(Path(path))
    except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a corrupt file
        raise TableError(f"{path}: unreadable parquet ({exc}); delete it and rerun its stage") from None


def read_table(path: str | os.PathLike[str], schema: type[pa.DataFrameModel]) -> pl.DataFrame:
    return _check(_add_optional_columns(_read_parquet(path), schema), schema, path)


def read_columns(path: str | os.PathLike[str], schema: type[pa.DataFrameModel], columns: Sequence[str]) -> pl.DataFrame:
    """Some columns of another stage's table, each checked against that table's schema: for readers
    (the leaderboard) that need a few columns of many tables and must not depend on the rest."""
    frame = _read_parquet(path)
    full = schema.to_schema()
    unknown = [c for c in columns if c not in full.columns]
    if unknown:
        raise ValueError(f"{schema.__name__} has no column(s) {unknown}")
    missing = [
        f"  - column {c!r}: missing (expected a column of {full.columns[c].dtype})"
        for c in columns
        if c not in frame.columns
    ]
    if missing:
        raise TableError(f"{path}: does not match {schema.__name__}:\n" + "\n".join(missing))
    return _validate(full.select_columns(list(columns)), frame.select(list(columns)), schema.__name__, path)


def _add_optional_columns(frame: pl.DataFrame, schema: type[pa.DataFrameModel]) -> pl.DataFrame:
    """Optional columns a table was written without (it predates them) come back as nulls, so
    old and new tables of one schema stack."""
    columns = schema.to_schema().columns
    missing = {
        name: pl.lit(None, dtype=column.dtype.type if column.dtype is not None else pl.Utf8).alias(name)
        for name, column in columns.items()
        if not column.required and name not in frame.columns
    }
    if not missing:
        return frame
    frame = frame.with_columns(list(missing.values()))
    declared = [name for name in columns if name in frame.columns]
    return frame.select(declared + [c for c in frame.columns if c not in declared])
