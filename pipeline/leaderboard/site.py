"""The static site: an index, a page per benchmark with a paginated game list, a page per game.

Written into a fresh folder beside the old site and swapped in at the end, so a failed run never
leaves half a site. Every page links only to files inside the site (works offline from disk).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import ReplaySet, write_json_atomic, write_text_atomic
from pipeline.leaderboard.assets import REPLAY_JS, SITE_CSS
from pipeline.leaderboard.combine import (
    BenchmarkBoard,
    Calibration,
    CombinedEntry,
    leaderboard_note,
    mu_text,
    overlapping,
    rank_text,
    score_text,
)
from pipeline.leaderboard.markdown import count_text, coverage_text, fmt, number_text
from pipeline.leaderboard.notes import CHANGELOG_FILE, RELEASES_FILE, record_lines, render_changelog
from pipeline.leaderboard.stamp import Stamp
from pipeline.leaderboard.templates import render, render_source


@dataclass
class BenchmarkSite:
    board: BenchmarkBoard
    replays: ReplaySet | None
    plots: list[Path]  # the benchmark's own plots (svg + html), copied


def write(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write(text)


def rating_rows(board: BenchmarkBoard) -> list[dict[str, Any]]:
    rows = []
    for model, r in board.ratings.items():
        rows.append(
            {
                "rank": rank_text(r.rank, r.rank_lo, r.rank_hi, r.settled),
                "model": model,
                "mu": mu_text(r),
                "sigma": fmt(r.sigma),
                "games": count_text(r.games),
                "not_separable": board.not_separable(model),
            }
        )
    return rows


def page_links(total: int, per_page: int, prefix: str) -> list[dict[str, str]]:
    pages = max(1, -(-total // per_page))
    return [{"href": f"{prefix}page-{i}.html", "label": str(i)} for i in range(1, pages + 1)]


def write_benchmark(
    root: Path, bench: BenchmarkSite, nav: list[str], stamp: Stamp, chart: Path | None, per_page: int
) -> int:
    """The benchmark's index, its game-list pages and its replays; returns pages written."""
    name = bench.board.name
    folder = root / name
    (folder / "plots").mkdir(parents=True)
    plots = []
    if chart is not None:
        plots.append(
            {
                "svg": f"../charts/{chart.name}.svg",
                "html": f"../charts/{chart.name}.html",
                "title": f"{name}: rating intervals",
            }
        )
    copied = {p.name for p in bench.plots}
    for plot in bench.plots:
        shutil.copy2(plot, folder / "plots" / plot.name)
        if plot.suffix == ".svg":
            html = plot.with_suffix(".html").name
            plots.append(
                {
                    "svg": f"plots/{plot.name}",
                    "html": f"plots/{html}" if html in copied else "",
                    "title": plot.stem.replace("_", " "),
                }
            )
    replays = bench.replays
    entries = replays.pages if replays else []
    base = {"nav": nav, "stamp": stamp, "stepper": False}
    rows = [{"href": f"games/{p.key}.html", "cells": p.cells} for p in entries]
    headline_columns = sorted({k for values in bench.board.headline.values() for k in values})
    written = 1
    write(
        folder / "index.html",
        render(
            "benchmark.html",
            **base,
            root="../",
            title=f"{name}",
            interval_source=bench.board.interval_source,
            settled_note=bench.board.settled_note(),
            ratings=rating_rows(bench.board),
            headline_columns=headline_columns,
            headline_rows=[
                {"model": m, "cells": [number_text(v.get(c)) for c in headline_columns]}
                for m, v in sorted(bench.board.headline.items())
                if v
            ],
            plots=plots,
            games_title=replays.games_title if replays else "Games",
            total_games=len(entries),
            replay_note=(replays.note if replays else "no replay tables found"),
            columns=replays.columns if replays else [],
            rows=rows[:per_page],
            page_links=page_links(len(rows), per_page, "list/"),
        ),
    )
    if not replays:
        return written
    (folder / "list").mkdir()
    (folder / "games").mkdir()
    links = page_links(len(rows), per_page, "")
    list_rows = [{"href": f"../{r['href']}", "cells": r["cells"]} for r in rows]
    for number, link in enumerate(links, start=1):
        chunk = list_rows[(number - 1) * per_page : number * per_page]
        write(
            folder / "list" / link["href"],
            render(
                "game_list.html",
                **base,
                root="../../",
                title=f"{name}: {replays.games_title.lower()}, page {number}",
                benchmark=name,
                columns=replays.columns,
                rows=chunk,
                page_links=links,
            ),
        )
        written += 1
    replay_base = {**base, "stepper": True, "root": "../../"}
    for page in entries:
        write(
            folder / "games" / f"{page.key}.html",
            render_source(replays.template, **replay_base, title=page.title, **page.context),
        )
        written += 1
    return written


def index_context(boards: list[BenchmarkBoard], combined: dict[str, CombinedEntry]) -> list[dict[str, Any]]:
    """The combined table's rows, full-coverage models first, then the provisional ones."""
    rows = []
    for model, e in combined.items():
        rows.append(
            {
                "rank": rank_text(e.rank, e.rank_lo, e.rank_hi, e.settled),
                "model": model,
                "bot": e.bot,
                "provisional": e.provisional,
                "score": score_text(e, 0 if e.games is not None else 1),
                "games": count_text(e.games),
                "benchmarks": coverage_text(e),
                "played": ", ".join(e.played),
                "per_benchmark": [
                    rank_text(r.rank, r.rank_lo, r.rank_hi, r.settled) if (r := b.ratings.get(model)) else "–"
                    for b in boards
                ],
                "not_separable": overlapping(combined, model),
            }
        )
    return rows


def release_context(records: list[dict[str, Any]], stamp: Stamp) -> list[dict[str, Any]]:
    """The releases page's entries: this site's version marked, every other one with the command
    that opens its own site (from its tag)."""
    return [
        {"version": r["version"], "tag": r["tag"], "lines": record_lines(r), "current": r["version"] == stamp.version}
        for r in records
    ]


def write_releases(site: Path, records: list[dict[str, Any]], stamp: Stamp, nav: list[str]) -> None:
    """releases.html, CHANGELOG.md and releases.json of the site (publish rewrites them after
    writing a new release, with the bytes a full build would give)."""
    write_text_atomic(
        site / "releases.html",
        render(
            "releases.html",
            nav=nav,
            stamp=stamp,
            stepper=False,
            root="",
            title="Release notes",
            releases=release_context(records, stamp),
            published=any(r["version"] == stamp.version for r in records),
        ),
    )
    write_text_atomic(site / CHANGELOG_FILE, render_changelog(records))
    write_json_atomic(site / RELEASES_FILE, records)


def build_site(
    target: Path,
    benches: list[BenchmarkSite],
    combined: dict[str, CombinedEntry],
    stamp: Stamp,
    files: dict[str, str],
    per_page: int,
    releases: list[dict[str, Any]],
    checks: list[Calibration] | None = None,
    method: str = "joint",
) -> int:
    """Write the whole site to `target` (replacing it); `files` are extra files (name -> text);
    `releases` the published versions' records (releases.json), newest first."""
    from pipeline.leaderboard.charts import write_charts

    staging = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    (staging / "assets").mkdir(parents=True)
    try:
        write(staging / "assets" / "site.css", SITE_CSS)
        write(staging / "assets" / "replay.js", REPLAY_JS)
        for name, text in files.items():
            write(staging / name, text)
        boards = [b.board for b in benches]
        charts = write_charts(staging / "charts", boards, combined, method)
        nav = [b.name for b in boards]
        write_releases(staging, releases, stamp, nav)
        pages = 2
        write(
            staging / "index.html",
            render(
                "index.html",
                nav=nav,
                stamp=stamp,
                stepper=False,
                root="",
                title="Leaderboard",
                benchmarks=nav,
                combined=index_context(boards, combined),
                method=method,
                calibration=[c.line() for c in checks or [] if c.board == "combined"],
                calibration_ok=all(c.in_order and c.settled for c in checks or [] if c.board == "combined"),
                has_bots=any(e.bot for e in combined.values()),
                settled_note=leaderboard_note(boards),
                charts=[
                    {
                        "svg": f"charts/{stem.name}.svg",
                        "html": f"charts/{stem.name}.html",
                        "title": "combined rating" if key == "combined" else f"{key} ratings",
                    }
                    for key, stem in charts.items()
                ],
            ),
        )
        for bench in benches:
            pages += write_benchmark(staging, bench, nav, stamp, charts.get(bench.board.name), per_page)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return pages
