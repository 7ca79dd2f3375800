"""Tables from no rows: a stage whose games produced no row of a kind (e.g. no vote was cast) still
writes that table with its schema's columns, and readers read it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.artifacts.schemas import TableError, read_table, write_table
from pipeline.whoisspy.schemas import VotesSchema


def test_a_table_of_no_rows_is_written_with_the_schema_columns(tmp_path: Path) -> None:
    path = tmp_path / "votes.parquet"
    written = write_table(path, pl.DataFrame([]), VotesSchema, sort_by=["game_id", "round", "voter"])
    assert written.height == 0 and written.columns[:3] == ["game_id", "variant", "round"]
    back = read_table(path, VotesSchema)
    assert back.schema == written.schema and back["correct"].dtype == pl.Boolean


def test_a_results_table_reads_with_pandas_and_pyarrow(tmp_path: Path) -> None:
    """A user's `pandas.read_parquet` on any results table works (pyarrow is a dependency)."""
    import pandas as pd

    from pipeline.core.artifacts.schemas import EVENTS_FILE, RatingEventsSchema

    frame = pl.DataFrame({"game": ["g1", "g1"], "event": [0, 0], "player": ["a", "b"], "side": [0, 1], "rank": [1, 2]})
    write_table(tmp_path / EVENTS_FILE, frame, RatingEventsSchema)
    loaded = pd.read_parquet(tmp_path / EVENTS_FILE)
    assert loaded.to_dict("list") == frame.to_dict(as_series=False)


#: one table, `Moves`, declared in each annotation style a contributor may write: every one must give the
#: same columns (game: a string; score: a float >= 0; note and seat: may be absent, may be null)
STYLES = {
    "deferred": (
        "from __future__ import annotations\n"
        "from typing import ClassVar, Optional\n"
        "from pipeline.core.artifacts.tables import Field, TableModel\n"
        "class Moves(TableModel):\n"
        "    strict: ClassVar[bool] = True\n"
        "    game: str\n"
        "    score: float = Field(ge=0)\n"
        "    note: str | None = Field(nullable=True)\n"
        "    seat: Optional[int] = Field(nullable=True)\n"
    ),
    "eager": (
        "from typing import ClassVar, Optional, Union\n"
        "from pipeline.core.artifacts.tables import Field, TableModel\n"
        "class Moves(TableModel):\n"
        "    strict: ClassVar[bool] = True\n"
        "    game: str\n"
        "    score: float = Field(ge=0)\n"
        "    note: None | str = Field(nullable=True)\n"
        "    seat: Union[int, None] = Field(nullable=True)\n"
    ),
    "quoted": (
        "import typing\n"
        "from pipeline.core.artifacts.tables import Field, TableModel\n"
        "class Moves(TableModel):\n"
        "    strict: 'typing.ClassVar[bool]' = True\n"
        "    game: 'str'\n"
        "    score: 'float' = Field(ge=0)\n"
        "    note: 'str | None' = Field(nullable=True)\n"
        "    seat: 'typing.Optional[int]' = Field(nullable=True)\n"
    ),
    "polars dtypes": (
        "from __future__ import annotations\n"
        "from typing import ClassVar, Optional\n"
        "import polars as pl\n"
        "from pipeline.core.artifacts.tables import Field, TableModel\n"
        "class Moves(TableModel):\n"
        "    strict: ClassVar[bool] = True\n"
        "    game: pl.Utf8\n"
        "    score: pl.Float64() = Field(ge=0)\n"
        "    note: pl.String | None = Field(nullable=True)\n"
        "    seat: Optional[pl.Int64] = Field(nullable=True)\n"
    ),
    "annotated": (
        "from typing import Annotated, ClassVar, Optional\n"
        "from pipeline.core.artifacts.tables import Field, TableModel\n"
        "class Moves(TableModel):\n"
        "    strict: ClassVar[bool] = True\n"
        "    game: Annotated[str, Field()]\n"
        "    score: Annotated[float, Field(ge=0)]\n"
        "    note: Annotated[Optional[str], Field(nullable=True)]\n"
        "    seat: Optional[Annotated[int, Field(nullable=True)]]\n"
    ),
    "pandera series": (
        "from __future__ import annotations\n"
        "from typing import ClassVar, Optional\n"
        "from pandera.typing import Series\n"
        "from pipeline.core.artifacts.tables import Field, TableModel\n"
        "class Moves(TableModel):\n"
        "    strict: ClassVar[bool] = True\n"
        "    game: Series[str]\n"
        "    score: Series[float] = Field(ge=0)\n"
        "    note: Optional[Series[str]] = Field(nullable=True)\n"
        "    seat: Optional[Series[int]] = Field(nullable=True)\n"
    ),
}


def contributor_schema(tmp_path: Path, source: str) -> Any:
    """`Moves` of a module file holding `source`, imported as a contributor's schema module is."""
    name = f"contributed_{len(sys.modules)}_{abs(hash(source))}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module.Moves


@pytest.mark.parametrize("style", list(STYLES))
def test_a_contributors_schema_in_any_annotation_style_declares_the_same_table(tmp_path: Path, style: str) -> None:
    """A contributor's schema module may be written with or without `from __future__ import annotations`
    (without it, every command crashed with `startswith() takes at least 1 argument`), with polars
    dtypes, Annotated fields or pandera's Series: the same columns, and a table round-trips."""
    moves = contributor_schema(tmp_path, STYLES[style])
    reference = contributor_schema(tmp_path, STYLES["deferred"])
    assert moves.__columns__ == reference.__columns__
    assert [(c.name, c.dtype, c.required, c.nullable) for c in moves.__columns__.values()] == [
        ("game", pl.String, True, False),
        ("score", pl.Float64, True, False),
        ("note", pl.String, False, True),
        ("seat", pl.Int64, False, True),
    ]
    frame = pl.DataFrame({"game": ["g1", "g2"], "score": [1.5, 0.0], "note": ["first", None], "seat": [2, None]})
    write_table(tmp_path / "moves.parquet", frame, moves)
    assert read_table(tmp_path / "moves.parquet", moves).to_dicts() == frame.to_dicts()
    with pytest.raises(TableError, match="score"):  # the check declared in that style holds
        write_table(tmp_path / "bad.parquet", frame.with_columns(pl.lit(-1.0).alias("score")), moves)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("    tags: list[int]\n", "'list[int]' is not a column type"),
        ("    when: pl.Datetime('ns')\n", "is not a column type"),
        ("    seat: Optonal[int] = Field(nullable=True)\n", "'Optonal[int]' cannot be resolved"),
        ("    seat: Annotated[int, Field(ge=0)] = Field(nullable=True)\n", "Field(...) given twice"),
        ("    seat: Annotated[int, 'seats']\n", "is not a column type"),
    ],
)
def test_an_annotation_that_is_no_column_names_the_schema_and_the_field(tmp_path: Path, line: str, named: str) -> None:
    source = (
        "from __future__ import annotations\n"
        "from typing import Annotated\n"
        "import polars as pl\n"
        "from pipeline.core.artifacts.tables import Field, TableModel\n"
        "class Moves(TableModel):\n"
        "    game: str\n"
    ) + line
    field = line.split(":")[0].strip()
    with pytest.raises(TypeError, match=rf"^Moves\.{field}: .*") as raised:
        contributor_schema(tmp_path, source)
    assert named in str(raised.value)
