"""Tables from no rows: a stage whose games produced no row of a kind (e.g. no vote was cast) still
writes that table with its schema's columns, and readers read it."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.core.artifacts.schemas import read_table, write_table
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


def test_a_schema_module_without_deferred_annotations_declares_the_same_table(tmp_path: Path) -> None:
    """A contributor's schema module may leave out `from __future__ import annotations`: its columns are
    the same (it crashed every command with `startswith() takes at least 1 argument`)."""
    source = (
        "from typing import ClassVar, Optional\n"
        "from pipeline.core.artifacts.tables import Field, TableModel\n"
        "class Moves(TableModel):\n"
        "    strict: ClassVar[bool] = True\n"
        "    game: str\n"
        "    score: float = Field(ge=0)\n"
        "    note: str | None = Field(nullable=True)\n"
        "    seat: Optional[int] = Field(nullable=True)\n"
    )
    eager: dict[str, object] = {}
    exec(compile(source, str(tmp_path / "moves.py"), "exec"), eager)  # annotations evaluated: real types
    deferred: dict[str, object] = {}
    exec(compile("from __future__ import annotations\n" + source, str(tmp_path / "later.py"), "exec"), deferred)
    now, later = eager["Moves"], deferred["Moves"]
    assert now.__columns__ == later.__columns__  # type: ignore[attr-defined]
    assert list(now.__columns__) == ["game", "score", "note", "seat"]  # type: ignore[attr-defined]
    frame = pl.DataFrame({"game": ["g1"], "score": [1.5], "note": ["first"], "seat": [2]})
    write_table(tmp_path / "moves.parquet", frame, now)
    assert read_table(tmp_path / "moves.parquet", now).to_dicts() == frame.to_dicts()
