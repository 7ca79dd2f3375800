"""Table declarations: a class per table, its columns as annotations with `Field`s, as pandera's
DataFrameModel declares them; pandera is imported only when a schema is asked for.

    class CallsSchema(StrictTable):
        job: str
        attempt: int = Field(ge=0)
        fault: str | None = Field(nullable=True, isin=[...])   # `| None`: the column may be absent

`to_schema()` builds the pandera DataFrameSchema, the same one pandera's own model gave (strict,
coerce, the same checks in the same order, the class's name). Why not subclass pandera's model:
importing pandera costs about 1 CPU-s, paid by every job process that reads or writes a table,
while a table that is already of its declared types is checked exactly without pandera
(`passes_unchanged`); pandera is then imported only to cast a table or word its errors.
A benchmark outside the package may still declare pandera DataFrameModels: the table functions
take either.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl

if TYPE_CHECKING:
    import pandera.polars as pa

#: annotation (as written under `from __future__ import annotations`) -> polars dtype
DTYPES: dict[str, type[pl.DataType]] = {"str": pl.String, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}
_OPTIONAL = re.compile(r"^(?:(\w+) \| None|None \| (\w+)|Optional\[(\w+)\])$")
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
                annotation = annotation_text(written)
                if name.startswith("_") or annotation.startswith("ClassVar"):
                    continue
                columns[name] = _column(klass, name, annotation, vars(klass).get(name, FieldInfo()))
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


def annotation_text(annotation: Any) -> str:
    """An annotation as `from __future__ import annotations` writes it (`int | None`), whether the
    module deferred its annotations or not: a contributor's schema module may do either."""
    if isinstance(annotation, str):
        return annotation
    if annotation is ClassVar or typing.get_origin(annotation) is ClassVar:
        return "ClassVar"
    args = typing.get_args(annotation)
    if len(args) == 2 and type(None) in args:  # `X | None` and `Optional[X]`
        other = next(a for a in args if a is not type(None))
        return f"{annotation_text(other)} | None"
    return annotation.__name__ if isinstance(annotation, type) else repr(annotation)


def _column(owner: type, name: str, annotation: str, declared: Any) -> Column:
    if not isinstance(declared, FieldInfo):
        raise TypeError(f"{owner.__name__}.{name}: a column's default must be Field(...), not {declared!r}")
    optional = _OPTIONAL.match(annotation.strip())
    base = next(group for group in optional.groups() if group) if optional else annotation.strip()
    if base not in DTYPES:
        raise TypeError(f"{owner.__name__}.{name}: annotation {annotation!r}; a column is one of {sorted(DTYPES)}")
    return Column(name, DTYPES[base], optional is None, declared.nullable, declared.unique, declared.checks)


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
