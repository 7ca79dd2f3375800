"""One look for every plot, and one way to save it: PNG + SVG + a self-contained offline HTML page.

Every plot is built from a table, so a plot can always be regenerated from results alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import altair as alt

from pipeline.core.artifacts.io import atomic_open

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
# colour-blind safe categorical palette (Okabe-Ito)
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
FORMATS: tuple[str, ...] = ("html", "png", "svg")


def theme() -> dict:
    return {
        "config": {
            "font": FONT,
            "view": {"continuousWidth": 480, "continuousHeight": 300, "stroke": None},
            "range": {"category": PALETTE},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "grid": True, "gridOpacity": 0.4},
            "title": {"fontSize": 14, "anchor": "start"},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
        }
    }


@alt.theme.register("pipeline", enable=True)
def _pipeline_theme() -> alt.theme.ThemeConfig:
    return theme()  # type: ignore[return-value]


def save_chart(
    chart: alt.TopLevelMixin, path_stem: str | os.PathLike[str], formats: Sequence[str] = FORMATS
) -> list[Path]:
    """Write `<stem>.html` (works offline: Vega scripts inlined), `.png` and `.svg`; atomically."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        target = stem.with_suffix(f".{fmt}")
        binary = fmt == "png"
        with atomic_open(target, "wb" if binary else "w") as handle:
            if fmt == "html":
                chart.save(handle, format="html", inline=True)
            elif fmt == "png":
                chart.save(handle, format="png", scale_factor=2)
            elif fmt == "svg":
                chart.save(handle, format="svg")
            else:
                raise ValueError(f"unknown plot format {fmt!r}; expected html, png or svg")
        written.append(target)
    return written
