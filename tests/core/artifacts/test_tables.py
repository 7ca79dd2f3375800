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
