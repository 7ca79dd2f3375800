"""One look for every plot, and one way to save it: PNG + SVG + a self-contained offline HTML page.

Every plot is built from a table, so a plot can always be regenerated from results alone.
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import altair as alt
from altair.utils.html import TEMPLATES

from pipeline.core.artifacts.io import atomic_open, user_cache_dir

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
# colour-blind safe categorical palette (Okabe-Ito)
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
FORMATS: tuple[str, ...] = ("html", "png", "svg")
PNG_PPI = 72  # altair's PNG default


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


@functools.cache
def vega_script() -> str:
    """The Vega, Vega-Lite and vega-embed scripts an offline page inlines. vl-convert bundles them
    anew in every process (about 1.6 s of CPU, a report job's largest single cost), so the bundle is
    kept in the user cache, one file per vl-convert and Vega-Lite version."""
    from altair.utils._importers import import_vl_convert, vl_version_for_vl_convert

    vl_convert = import_vl_convert()
    version = vl_version_for_vl_convert()
    kept = user_cache_dir("vega") / f"bundle-{vl_convert.__version__}-vl{version}.js"
    try:
        script = kept.read_text(encoding="utf-8")
        if script:
            return script
    except OSError:
        pass
    script = str(vl_convert.javascript_bundle(vl_version=version))
    try:
        with atomic_open(kept, "w") as handle:
            handle.write(script)
    except OSError:  # a read-only cache only costs the bundling next time
        pass
    return script


class _OfflinePage:
    """altair's own "inline" page template with the scripts from `vega_script`: the same page
    as `inline=True`, byte for byte."""

    def render(self, **fields: Any) -> str:
        return str(TEMPLATES["inline"].render(vegaembed_script=vega_script(), **fields))


def save_chart(
    chart: alt.TopLevelMixin, path_stem: str | os.PathLike[str], formats: Sequence[str] = FORMATS
) -> list[Path]:
    """Write `<stem>.html` (works offline: Vega scripts inlined), `.png` and `.svg`; atomically."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    unknown = [fmt for fmt in formats if fmt not in FORMATS]
    if unknown:
        raise ValueError(f"unknown plot format {unknown[0]!r}; expected html, png or svg")
    # Vega renders the chart once, to SVG; the PNG is that SVG rasterised, which is what vl-convert's
    # own PNG path does after rendering the chart a second time (same bytes, about half the CPU)
    svg = _svg(chart) if {"png", "svg"} & set(formats) else ""
    written = []
    for fmt in formats:
        target = stem.with_suffix(f".{fmt}")
        with atomic_open(target, "wb" if fmt == "png" else "w") as handle:
            if fmt == "html":
                chart.save(handle, format="html", template=_OfflinePage())
            elif fmt == "png":
                handle.write(_png(svg, scale=2))
            else:
                handle.write(svg)
        written.append(target)
    return written


def _svg(chart: alt.TopLevelMixin) -> str:
    page = io.StringIO()
    chart.save(page, format="svg")
    return page.getvalue()


def _png(svg: str, scale: float) -> bytes:
    from altair.utils._importers import import_vl_convert

    return bytes(import_vl_convert().svg_to_png(svg, scale=scale, ppi=PNG_PPI))
