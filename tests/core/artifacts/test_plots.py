"""Saving a plot: the three files a report writes, and the PNG that is the SVG rasterised."""

from __future__ import annotations

import io
from pathlib import Path

import altair as alt
import polars as pl
import pytest

from pipeline.core.artifacts import save_chart


def chart() -> alt.Chart:
    data = pl.DataFrame({"model": ["a", "b", "c"], "mu": [27.1, 25.0, 21.4], "sigma": [1.2, 2.5, 0.9]})
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(x="mu:Q", y=alt.Y("model:N", sort="-x"), tooltip=["model", "mu", "sigma"])
        .properties(title="ratings")
    )


def altairs_own(fmt: str, **options: object) -> bytes:
    """What altair writes for the chart by itself (vl-convert rendering the chart for each format)."""
    buffer = io.BytesIO() if fmt == "png" else io.StringIO()
    chart().save(buffer, format=fmt, **options)
    value = buffer.getvalue()
    return value if isinstance(value, bytes) else value.encode()


def test_a_chart_is_saved_as_an_offline_page_a_png_and_an_svg(tmp_path: Path) -> None:
    written = save_chart(chart(), tmp_path / "plots" / "ratings")
    assert [p.name for p in written] == ["ratings.html", "ratings.png", "ratings.svg"]
    # the same bytes as altair's own saving: the PNG is rendered once, from the SVG
    assert (tmp_path / "plots" / "ratings.png").read_bytes() == altairs_own("png", scale_factor=2)
    assert (tmp_path / "plots" / "ratings.svg").read_bytes() == altairs_own("svg")
    page = (tmp_path / "plots" / "ratings.html").read_text()
    assert "<script src=" not in page and "vegaEmbed" in page  # the scripts inlined: it opens offline
    assert not list((tmp_path / "plots").glob("*.tmp*"))  # atomic writes leave no partial file


def test_only_the_formats_asked_for_are_written(tmp_path: Path) -> None:
    assert save_chart(chart(), tmp_path / "c", formats=("png",)) == [tmp_path / "c.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.png"]
    with pytest.raises(ValueError, match="unknown plot format 'pdf'; expected html, png or svg"):
        save_chart(chart(), tmp_path / "d", formats=("svg", "pdf"))
    assert not (tmp_path / "d.svg").exists()  # refused before anything is written
