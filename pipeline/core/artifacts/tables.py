"""Table declarations: a class per table, its columns as annotations with `Field`s, as pandera's
DataFrameModel declares them; pandera is imported only when a schema is asked for.

    class CallsSchema(StrictTable):
        job: str
        attempt: int = Field(ge=0)
        fault: str | None = Field(nullable=True, isin=[...])   # `| None`: the column may be absent

A column's annotation is read as pandera reads it, in whatever style the module wrote it: with or
without `from __future__ import annotations` (a string is resolved in the declaring module, as
`typing.get_type_hints` does), `str`, `int`, `float`, `bool` or a polars dtype (`pl.Int32`,
`pl.Date`, ...), `X | None` or `Optional[X]` for a column that may be absent, `Annotated[X,
Field(...)]` or `X = Field(...)` for its checks, pandera's `Series[X]`; `ClassVar`s are options,
not columns. Anything else stops the import with the schema, the field and what a column may be.

`to_schema()` builds the pandera DataFrameSchema, the same one pandera's own model gave (strict,
coerce, the same checks in the same order, the class's name). Why not subclass pandera's model:
importing pandera costs about 1 CPU-s, paid by every job process that reads or writes a table
(measured: `import pandera.polars` 1.0 CPU-s against 0.008 for this module and `schemas`), and
its validation about 33 ms for a 2,000-row, 16-column calls table against 1.5 ms here; a table
already of its declared types is checked exactly without pandera (`passes_unchanged`), and
pandera is imported only to cast a table or word its errors. A benchmark outside the package may
still declare pandera DataFrameModels: the table functions take either.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Union

import polars as pl

if TYPE_CHECKING:
    import pandera.polars as pa

#: a Python type written as a column's annotation -> its polars dtype (pandera's mapping)
DTYPES: dict[type, type[pl.DataType]] = {str: pl.String, int: pl.Int64, float: pl.Float64, bool: pl.Boolean}
#: what a column may be, for the error that names a field written otherwise
COLUMN_TYPES = (
    "str, int, float, bool or a polars dtype (pl.Int32, pl.Date, ...), `X | None` or Optional[X] for a "
    "column that may be absent, Annotated[X, Field(...)] or `X = Field(...)` for its checks"
)
#: the value checks, in the order pandera's Field builds them, with their statistic's name
CHECKS: tuple[tuple[str, str, str], ...] = (
    ("gt", "greater_than", "min_value"),
    ("ge", "greater_than_or_equal_to", "min_value"),
    ("lt", "less_than", "max_value"),
    ("le", "less_than_or_equal_to", "max_value"),
    ("isin", "isin", "allowed_values"),
    ("notin", "notin", "forbidden_values"),
)


@dataclass(frozen=True)
class FieldInfo:
    """What `Field` declares about a column."""

    nullable: bool = False
    unique: bool = False
    checks: tuple[tuple[str, str, Any], ...] = ()  # (pandera check name, statistic name, value)


def Field(
    *,
    nullable: bool = False,
    unique: bool = False,
    gt: Any = None,
    ge: Any = None,
    lt: Any = None,
    le: Any = None,
    isin: Any = None,
    notin: Any = None,
) -> Any:
    """A column's constraints, as pandera's `Field` takes them (typed Any: it stands where the
    annotation's value would be)."""
    given = {"gt": gt, "ge": ge, "lt": lt, "le": le, "isin": isin, "notin": notin}
    checks = tuple((name, stat, given[key]) for key, name, stat in CHECKS if given[key] is not None)
    return FieldInfo(nullable=nullable, unique=unique, checks=checks)


@dataclass(frozen=True)
class Column:
    """One declared column: its polars dtype, whether it must be present, and its constraints."""

    name: str
    dtype: type[pl.DataType]
    required: bool
    nullable: bool
    unique: bool
    checks: tuple[tuple[str, str, Any], ...]


class TableModel:
    """Base of a table declaration. Columns come from the class's annotations, base classes'
    first (as pandera orders them); the schema's options from `strict` and `coerce`."""

    strict: ClassVar[bool] = False
    coerce: ClassVar[bool] = False
    __columns__: ClassVar[dict[str, Column]] = {}
    __pandera__: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        columns: dict[str, Column] = {}
        for klass in reversed(cls.__mro__):
            for name, written in vars(klass).get("__annotations__", {}).items():
                if name.startswith("_"):
                    continue
                annotation = _resolved(klass, name, written)
                if annotation is ClassVar or typing.get_origin(annotation) is ClassVar:
                    continue
                columns[name] = _column(klass, name, written, annotation, vars(klass).get(name, FieldInfo()))
        cls.__columns__ = columns
        cls.__pandera__ = None

    @classmethod
    def validate(cls, frame: pl.DataFrame) -> pl.DataFrame:
        """`frame` checked as pandera's DataFrameModel.validate checks it (pandera's errors on a
        failure), pandera imported only to cast or to word the failure."""
        if passes_unchanged(cls.__columns__, cls.strict, frame):
            return frame
        return cls.to_schema().validate(frame)

    @classmethod
    def to_schema(cls) -> pa.DataFrameSchema:
        """The pandera schema of this table (pandera imported here, on first use)."""
        if cls.__dict__.get("__pandera__") is None:
            import pandera.polars as pa

            cls.__pandera__ = pa.DataFrameSchema(
                {
                    column.name: pa.Column(
                        column.dtype,
                        checks=[getattr(pa.Check, name)(value) for name, _, value in column.checks] or None,
                        nullable=column.nullable,
                        unique=column.unique,
                        required=column.required,
                    )
                    for column in cls.__columns__.values()
                },
                name=cls.__name__,
                strict=cls.strict,
                coerce=cls.coerce,
            )
        return cls.__pandera__


# A column check pandera would run, as the one polars expression pandera's polars backend builds
# for it (pandera/backends/polars/builtin_checks.py), keyed by the check's name
_CHECK_EXPRESSIONS: dict[str, Callable[[pl.Expr, Any], pl.Expr]] = {
    "greater_than_or_equal_to": lambda column, value: column.ge(value),
    "greater_than": lambda column, value: column.gt(value),
    "less_than_or_equal_to": lambda column, value: column.le(value),
    "less_than": lambda column, value: column.lt(value),
    "isin": lambda column, value: column.is_in(list(value)),
    "notin": lambda column, value: column.is_in(list(value)).not_(),
}
# dtypes whose equality is exact (no time unit, zone or inner type that a cast would change)
_PLAIN_DTYPES = (pl.String, pl.Int64, pl.Int32, pl.Float64, pl.Float32, pl.Boolean)


def passes_unchanged(columns: dict[str, Column], strict: bool | str, frame: pl.DataFrame) -> bool:
    """Whether pandera would pass `frame` and return it as it is: every column already of its
    declared dtype (so coercion changes nothing) and every check passing, with pandera's own
    expressions and null rules, in one polars pass (pandera's backend collects once per column and
    check: about 25 ms for an 11-column table, most of a small job's table I/O). False for
    anything it does not decide exactly: pandera then validates, casts and words the failures."""
    if strict == "filter" or (strict and not set(frame.columns) <= set(columns)):
        return False
    tests: list[pl.Expr] = []
    for name, column in columns.items():
        if name not in frame.columns:
            if column.required:
                return False
            continue
        actual = frame.schema[name]
        if not any(actual == plain for plain in _PLAIN_DTYPES) or actual != column.dtype:
            return False
        values = pl.col(name)
        if not column.nullable:  # pandera counts NaN as null in a float column
            present = values.is_not_null() & values.is_not_nan() if actual.is_float() else values.is_not_null()
            tests.append(present.all())
        if column.unique:
            tests.append(values.is_duplicated().any().not_())
        for check, _, value in column.checks:
            passed = _CHECK_EXPRESSIONS[check](values, value)
            tests.append((passed | passed.is_null()).all())  # pandera's ignore_na: a null passes
    if not tests:
        return True
    return all(frame.select([t.alias(f"_{i}") for i, t in enumerate(tests)]).row(0))


def _resolved(owner: type, name: str, written: Any) -> Any:
    """The annotation as an object: a string (deferred annotations, or one written in quotes) is
    evaluated in the module that declared `owner`, then the class, as `typing.get_type_hints` does."""
    if not isinstance(written, str):
        return written
    module = sys.modules.get(owner.__module__)
    namespace = {**(vars(module) if module is not None else {}), **vars(owner)}
    try:
        return eval(written, namespace)  # the declaring module's own annotation, as typing evaluates it
    except Exception as exc:  # noqa: BLE001 - any failure to resolve is the same error for the contributor
        raise TypeError(
            f"{owner.__name__}.{name}: annotation {written!r} cannot be resolved in module {owner.__module__} "
            f"({type(exc).__name__}: {exc}); import the names it uses at the module's top level"
        ) from None


def _unwrapped(annotation: Any) -> tuple[Any, bool, list[Any]]:
    """(the column's type, whether the column may be absent, Annotated's metadata) of an annotation."""
    required, metadata = True, list[Any]()
    while True:
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is Annotated:
            annotation, metadata = args[0], [*metadata, *args[1:]]
        elif origin in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
            annotation, required = next(a for a in args if a is not type(None)), False
        elif isinstance(origin, type) and origin.__name__ == "Series" and origin.__module__.startswith("pandera"):
            annotation = args[0]  # pandera's Series[X]: the column's type is X
        else:
            return annotation, required, metadata


def _dtype(annotation: Any) -> type[pl.DataType] | None:
    """The polars dtype a column's type stands for; None for anything a TableModel cannot hold (a
    nested dtype, one with parameters other than its defaults, a container, an unknown class)."""
    if isinstance(annotation, pl.DataType):  # an instance such as pl.Int64(): its class, if no more than that
        kind = type(annotation)
        try:
            annotation = kind if not kind.is_nested() and annotation == kind() else None
        except TypeError:  # a dtype that takes parameters (pl.Enum)
            return None
    if isinstance(annotation, type) and issubclass(annotation, pl.DataType):
        return None if annotation.is_nested() else annotation
    return DTYPES.get(annotation) if isinstance(annotation, type) else None


def _column(owner: type, name: str, written: Any, annotation: Any, declared: Any) -> Column:
    if not isinstance(declared, FieldInfo):
        raise TypeError(f"{owner.__name__}.{name}: a column's default must be Field(...), not {declared!r}")
    base, required, metadata = _unwrapped(annotation)
    fields = [item for item in metadata if isinstance(item, FieldInfo)]
    if len(fields) + (declared != FieldInfo()) > 1:
        raise TypeError(f"{owner.__name__}.{name}: Field(...) given twice (in Annotated and as the default)")
    dtype = _dtype(base)
    if dtype is None or len(fields) != len(metadata):
        shown = (
            written if isinstance(written, str) else written.__name__ if isinstance(written, type) else repr(written)
        )
        raise TypeError(
            f"{owner.__name__}.{name}: annotation {shown!r} is not a column type; a column is {COLUMN_TYPES}"
        )
    field = fields[0] if fields else declared
    return Column(name, dtype, required, field.nullable, field.unique, field.checks)


def declared_columns(schema: Any) -> dict[str, Column]:
    """Every column a schema declares, by name: a TableModel's own, or a pandera DataFrameModel's
    names, dtypes and presence (enough to build, widen or name a table; not to check it)."""
    if isinstance(schema, type) and issubclass(schema, TableModel):
        return schema.__columns__
    return {
        name: Column(
            name,
            column.dtype.type if column.dtype is not None else pl.String,
            column.required,
            column.nullable,
            column.unique,
            (),
        )
        for name, column in schema.to_schema().columns.items()
    }


def columns_of(schema: Any) -> dict[str, Column] | None:
    """The declared columns of a TableModel; of a pandera DataFrameModel (a benchmark outside the
    package may declare one) where every part of it is one a Column holds, else None."""
    if isinstance(schema, type) and issubclass(schema, TableModel):
        return schema.__columns__
    declared = schema.to_schema()
    if declared.checks or declared.unique or declared.ordered or declared.add_missing_columns:
        return None
    known = {name: stat for _, name, stat in CHECKS}
    columns = {}
    for name, column in declared.columns.items():
        if (
            column.regex
            or column.dtype is None
            or any(check.name not in known or check.element_wise or not check.ignore_na for check in column.checks)
        ):
            return None
        checks = tuple((c.name, known[c.name], c.statistics[known[c.name]]) for c in column.checks)
        columns[name] = Column(name, column.dtype.type, column.required, column.nullable, column.unique, checks)
    return columns


def is_strict(schema: Any) -> bool | str:
    """The schema's `strict` option (True: no undeclared column; "filter": they are dropped)."""
    if isinstance(schema, type) and issubclass(schema, TableModel):
        return schema.strict
    return schema.to_schema().strict
