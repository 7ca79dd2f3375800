"""Tables are declared as TableModels and checked in one polars pass where that decides exactly
what pandera would: every schema of the package, on valid tables and on tables broken each way a
schema forbids, gives the same written bytes, the same returned frame and the same error message
as pandera's own validation, and the one-pass check takes the valid ones (it is the speed-up, not
a detour). A declaration gives the pandera schema pandera's own model gives; a pandera model
declared outside the package still works; a job that reads and writes valid tables never imports
pandera (about 1 CPU-s a process)."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import pipeline
from pipeline.core.artifacts import schemas
from pipeline.core.artifacts.schemas import TableError, read_table, write_table
from pipeline.core.artifacts.tables import Field, TableModel, declared_columns


def every_schema() -> list[Any]:
    for module in pkgutil.walk_packages(pipeline.__path__, "pipeline."):
        if module.name.endswith("schemas"):
            importlib.import_module(module.name)

    def below(cls: type) -> Iterator[type]:
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)

    found = {cls for cls in below(TableModel) if cls.__module__.startswith("pipeline.")}
    return sorted((cls for cls in found if declared_columns(cls)), key=lambda cls: cls.__qualname__)


SCHEMAS = every_schema()


def stat(column: Any, name: str, key: str) -> Any:
    return next((check.statistics[key] for check in column.checks if check.name == name), None)


def valid_value(column: Any, row: int, rng: random.Random) -> Any:
    allowed = stat(column, "isin", "allowed_values")
    if allowed is not None:
        return sorted(allowed, key=str)[row % len(allowed)] if not column.unique else None
    dtype = column.dtype.type
    if dtype == pl.Boolean:
        return rng.random() < 0.5
    if dtype == pl.String:
        return f"v{row}" if column.unique else rng.choice(["a", "b", "c d"])
    low = stat(column, "greater_than_or_equal_to", "min_value")
    above = stat(column, "greater_than", "min_value")
    high = stat(column, "less_than_or_equal_to", "max_value")
    low = low if low is not None else (above + 1 if above is not None else -5)
    high = high if high is not None else low + 100
    if dtype == pl.Int64:
        return low + row if column.unique else rng.randint(int(low), int(high))
    return low + row * 1e-3 if column.unique else rng.uniform(low, high)


def valid_table(schema: Any, rows: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    columns = schema.to_schema().columns
    data = {}
    for name, column in columns.items():
        values = [valid_value(column, row, rng) for row in range(rows)]
        if column.nullable and rows:
            values[rng.randrange(rows)] = None
        data[name] = values
    return pl.DataFrame(data, schema={name: column.dtype.type for name, column in columns.items()})


def broken_tables(schema: Any, table: pl.DataFrame) -> Iterator[tuple[str, pl.DataFrame]]:
    """One table per way the schema forbids a value, and per way pandera would have to coerce."""
    for name, column in schema.to_schema().columns.items():
        values = pl.col(name)
        first = pl.int_range(pl.len()) == 0
        dtype = column.dtype.type
        if not column.nullable:
            yield f"{name}: null", table.with_columns(pl.when(first).then(None).otherwise(values).alias(name))
            if dtype == pl.Float64:
                yield (
                    f"{name}: NaN",
                    table.with_columns(pl.when(first).then(float("nan")).otherwise(values).alias(name)),
                )
        if column.unique and table.height > 1:
            yield (
                f"{name}: duplicate",
                table.with_columns(pl.when(first).then(values.gather(1)).otherwise(values).alias(name)),
            )
        low = stat(column, "greater_than_or_equal_to", "min_value")
        if low is not None:
            yield (
                f"{name}: below",
                table.with_columns(pl.when(first).then(low - 1).otherwise(values).cast(dtype).alias(name)),
            )
        high = stat(column, "less_than_or_equal_to", "max_value")
        if high is not None:
            yield (
                f"{name}: above",
                table.with_columns(pl.when(first).then(high + 1).otherwise(values).cast(dtype).alias(name)),
            )
        if stat(column, "isin", "allowed_values") is not None:
            yield (
                f"{name}: not allowed",
                table.with_columns(pl.when(first).then(pl.lit("no such")).otherwise(values).alias(name)),
            )
        if dtype == pl.Int64:
            yield f"{name}: Int32 (coerced)", table.with_columns(values.cast(pl.Int32))
        if dtype == pl.Float64:
            yield f"{name}: Int64 (coerced)", table.with_columns(values.fill_nan(0).fill_null(0).round().cast(pl.Int64))
            yield f"{name}: NaN where null is allowed", table.with_columns(values.fill_null(float("nan")))
    yield "extra column", table.with_columns(pl.lit(1).alias("not_in_the_schema"))


def outcome(schema: Any, table: pl.DataFrame, path: Path) -> tuple[str, bytes, list[pl.DataFrame]]:
    """What a user sees: the error message, or the bytes written and the frames returned by the
    write and by reading it back."""
    path.unlink(missing_ok=True)
    try:
        written = write_table(path, table, schema)
    except TableError as exc:
        return str(exc), b"", []
    return "written", path.read_bytes(), [written, read_table(path, schema)]


def same(ours: tuple[str, bytes, list[pl.DataFrame]], theirs: tuple[str, bytes, list[pl.DataFrame]]) -> bool:
    frames = zip(ours[2], theirs[2], strict=True)  # NaN equals NaN here, as in the bytes
    return ours[:2] == theirs[:2] and all(a.schema == b.schema and a.equals(b) for a, b in frames)


def kinds_of_break(schema: Any) -> dict[str, tuple[str, pl.DataFrame]]:
    """Each way to break `schema`'s table, once (on the first column it applies to)."""
    kinds: dict[str, tuple[str, pl.DataFrame]] = {}
    for label, table in broken_tables(schema, valid_table(schema, 5, 4)):
        kinds.setdefault(label.split(": ", 1)[-1], (label, table))
    return kinds


def covering(candidates: list[Any]) -> list[Any]:
    """Few schemas that between them can be broken every way any schema can (pandera takes about
    30 ms a table, so every schema broken every way would cost a minute of CPU)."""
    chosen: list[Any] = []
    seen: set[str] = set()
    for schema in sorted(candidates, key=lambda cls: -len(kinds_of_break(cls))):
        new = set(kinds_of_break(schema)) - seen
        if new:
            chosen.append(schema)
            seen |= new
    return chosen


def recorded(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The one-pass check's answers, in order, while it keeps deciding."""
    decided: list[bool] = []
    real = schemas.passes_unchanged
    monkeypatch.setattr(schemas, "passes_unchanged", lambda *args: decided.append(real(*args)) or decided[-1])
    return decided


def pandera_only(
    monkeypatch: pytest.MonkeyPatch, schema: Any, table: pl.DataFrame, tmp_path: Path
) -> tuple[str, bytes, list[pl.DataFrame]]:
    """The outcome with every table left to pandera, as before the one pass."""
    with monkeypatch.context() as patch:
        patch.setattr(schemas, "passes_unchanged", lambda *args: False)
        return outcome(schema, table, tmp_path / "table.parquet")


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda cls: cls.__qualname__)
def test_every_schemas_valid_tables_take_one_pass_and_come_out_as_pandera_passes_them(
    schema: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided = recorded(monkeypatch)
    for rows, seed in ((0, 0), (7, 2)):
        table = valid_table(schema, rows, seed)
        ours = outcome(schema, table, tmp_path / "table.parquet")
        assert decided[-2:] == [True, True]  # the write's check and the read's: the one pass
        assert ours[2][0].equals(table) and ours[2][0].schema == table.schema
        assert same(ours, pandera_only(monkeypatch, schema, table, tmp_path))


@pytest.mark.parametrize("schema", covering(SCHEMAS), ids=lambda cls: cls.__qualname__)
def test_broken_and_coerced_tables_get_panderas_errors_and_casts(
    schema: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided = recorded(monkeypatch)
    for label, table in kinds_of_break(schema).values():
        ours = outcome(schema, table, tmp_path / "table.parquet")
        assert same(ours, pandera_only(monkeypatch, schema, table, tmp_path)), label
        if "coerced" in label:  # a cast is pandera's to make
            assert ours[0] == "written" and not decided[-2], label
        elif "allowed" not in label:  # a forbidden value: pandera's message names it
            assert ours[0] != "written", label


def test_a_large_table_is_written_the_same_however_it_was_built(tmp_path: Path) -> None:
    """Row groups follow a frame's chunks: the bytes must not depend on how the rows were stacked."""
    schema = min(SCHEMAS, key=lambda cls: len(cls.to_schema().columns))
    part = pl.concat([valid_table(schema, 100, 5)] * 1_500, rechunk=True)
    stacked = part.vstack(part).vstack(part)
    assert stacked.n_chunks() == 3 and stacked.height == 450_000
    write_table(tmp_path / "stacked.parquet", stacked, schema)
    write_table(tmp_path / "one.parquet", stacked.rechunk(), schema)
    assert (tmp_path / "stacked.parquet").read_bytes() == (tmp_path / "one.parquet").read_bytes()


@functools.cache
def pandera_calls() -> Any:
    """A table declared the pandera way, as a benchmark outside the package may declare one (built
    on first use: importing pandera at collection would cost every test worker about 1 CPU-s)."""
    import pandera.polars as pa

    class PanderaCalls(pa.DataFrameModel):
        class Config:
            strict = True
            coerce = True

        request_id: str = pa.Field(unique=True)
        attempt: int = pa.Field(ge=0)
        cost_usd: float = pa.Field(ge=0, nullable=True)
        error_kind: str = pa.Field(nullable=True, isin=["timeout", "server"])
        fault: str | None = pa.Field(nullable=True)

    return PanderaCalls


class DeclaredCalls(schemas.StrictTable):
    """The same table declared as the package declares its tables."""

    request_id: str = Field(unique=True)
    attempt: int = Field(ge=0)
    cost_usd: float = Field(ge=0, nullable=True)
    error_kind: str = Field(nullable=True, isin=["timeout", "server"])
    fault: str | None = Field(nullable=True)


def test_a_declaration_gives_the_schema_panderas_own_model_gives() -> None:
    def described(schema: Any) -> list[Any]:
        built = schema.to_schema()
        columns = [
            (name, str(c.dtype), c.nullable, c.unique, c.required, [(k.name, k.statistics, k.error) for k in c.checks])
            for name, c in built.columns.items()
        ]
        return [built.strict, built.coerce, columns]

    assert described(DeclaredCalls) == described(pandera_calls())


@pytest.mark.parametrize("kind", ["pandera model", "declared"])
def test_either_kind_of_schema_reads_writes_and_refuses_alike(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = pandera_calls() if kind == "pandera model" else DeclaredCalls
    table = pl.DataFrame(
        {"request_id": ["a", "b"], "attempt": [0, 1], "cost_usd": [None, 0.5], "error_kind": ["server", None]}
    )
    ours = outcome(schema, table, tmp_path / "table.parquet")
    assert ours[0] == "written" and ours[2][1].columns == [*table.columns, "fault"]  # the optional column read back
    assert same(ours, pandera_only(monkeypatch, schema, table, tmp_path))
    for broken in (
        table.with_columns(pl.lit(-1).alias("attempt")),
        table.with_columns(pl.lit("a").alias("request_id")),
    ):
        message = outcome(schema, broken, tmp_path / "table.parquet")[0]
        assert f"does not match {schema.__name__}" in message
        assert same(
            outcome(schema, broken, tmp_path / "table.parquet"), pandera_only(monkeypatch, schema, broken, tmp_path)
        )


def test_a_job_reading_and_writing_valid_tables_never_imports_pandera(tmp_path: Path) -> None:
    program = f"""
import sys
import polars as pl
from pipeline.core.artifacts import CallsSchema, calls_frame, read_table, write_table
import pipeline.elimination.schemas, pipeline.skate.schemas, pipeline.whoisspy.schemas, pipeline.xent.schemas
row = dict(job="j", roster_name="m", model="m", request_id="r", attempt=0, tokens_in=1, tokens_out=1,
           cost_usd=0.0, latency_s=0.1, cache_hit=False, error_kind=None)
write_table({str(tmp_path / "calls.parquet")!r}, calls_frame([row]), CallsSchema)
read_table({str(tmp_path / "calls.parquet")!r}, CallsSchema)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("pandera", "pandas")))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
