"""`python -m pipeline leaderboard`: results/<benchmark>/ -> results/leaderboard/ (JSON, Markdown,
version stamp, static site with replays and release notes). The DVC stage and `publish` both build
with this; `publish` (release.py) then records, commits, tags and pushes the version."""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.artifacts import write_json_atomic, write_text_atomic
from pipeline.core.artifacts.results import BenchmarkResults
from pipeline.core.artifacts.schemas import EVENTS_FILE
from pipeline.core.rating.joint import JointSettings, read_rating_events
from pipeline.core.run import benchmark
from pipeline.leaderboard.combine import (
    BenchmarkBoard,
    Calibration,
    CombinedEntry,
    calibration,
    flat_leaderboard,
    joint_combined,
    mean_percentile,
)
from pipeline.leaderboard.config import LeaderboardParams
from pipeline.leaderboard.markdown import render_markdown
from pipeline.leaderboard.notes import load_releases
from pipeline.leaderboard.site import BenchmarkSite, build_site
from pipeline.leaderboard.sources import benchmark_boards, load_benchmark_results
from pipeline.leaderboard.stamp import Stamp, git_commit


@dataclass
class Built:
    models: int
    benchmarks: list[str]
    pages: int
    seconds: float
    stamp: Stamp


def dumps(obj: object) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def combined_csv(flat: dict[str, dict[str, float | int]]) -> str:
    """One row per model, best first: the data of `dvc plots diff` (a flat table DVC can draw)."""
    columns = ["combined_rank", "model", "combined_score", "combined_score_lo", "combined_score_hi"]
    rows = sorted((m for m in flat if "combined_score" in flat[m]), key=lambda m: (flat[m].get("combined_rank", 0), m))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for model in rows:
        values = {**flat[model], "model": model}
        writer.writerow(["" if values.get(c) is None else values[c] for c in columns])
    return buffer.getvalue()


@dataclass(frozen=True)
class RosterView:
    """What the board needs of the roster: which entries are bots, and the graded bots' skills."""

    bots: frozenset[str] = frozenset()
    skills: dict[str, float] = field(default_factory=dict)


def roster_view(models: Path | None) -> RosterView:
    if models is None or not models.exists():
        return RosterView()
    from pipeline.core.models.roster import load_models

    roster = load_models(models).roster
    skills = {
        e.name: float(e.bot_options["skill"])
        for e in roster
        if e.bot == "graded" and isinstance(e.bot_options.get("skill"), (int, float))
    }
    return RosterView(frozenset(e.name for e in roster if e.is_bot), skills)


def combined_board(
    params: LeaderboardParams, benches: dict[str, BenchmarkResults], boards: list[BenchmarkBoard], roster: RosterView
) -> dict[str, CombinedEntry]:
    """The combined rating by `combined.method`; the joint fit reads each benchmark's rated events."""
    if params.combined.method == "mean_percentile":
        entries = mean_percentile(boards)
        for model, entry in entries.items():
            entry.bot = model in roster.bots
        return entries
    events = {}
    for name, bench in benches.items():
        path = bench.path(EVENTS_FILE)
        if path is not None:
            events[name] = read_rating_events(path)
    settings = JointSettings(
        resamples=params.combined.resamples,
        prior_sd=params.combined.prior_sd,
        seed=params.combined.seed,
        anchor=params.anchor,
        deviation_sd=params.combined.deviation_sd if params.combined.method == "joint_hierarchical" else None,
    )
    return joint_combined(events, settings, roster.bots)


def calibrations(
    boards: list[BenchmarkBoard], combined: dict[str, CombinedEntry], roster: RosterView
) -> list[Calibration]:
    """The graded bots' known order against the combined board and each benchmark's."""
    if not roster.skills:
        return []
    found = [calibration("combined", combined, roster.skills, "score")]
    found += [calibration(b.name, b.ratings, roster.skills, "mu") for b in boards]
    return found


def build_leaderboard(
    params: LeaderboardParams,
    results: Path,
    out: Path,
    workspace: Path,
    site: bool = True,
    models: Path | None = None,
) -> Built:
    started = time.perf_counter()
    benchmark_names = load_benchmark_results(results, params.benchmarks)
    boards = benchmark_boards(params, benchmark_names)
    roster = roster_view(models)
    combined = combined_board(params, benchmark_names, boards, roster)
    checks = calibrations(boards, combined, roster)
    benches = []
    if site:
        for board in boards:
            bench = benchmark_names[board.name]
            build = benchmark(board.name).replays
            replays = build(bench, params.site.max_games) if build is not None else None
            benches.append(BenchmarkSite(board, replays, bench.plot_files()))
    inputs = {path: digest for bench in benchmark_names.values() for path, digest in bench.hashes.items()}
    stamp = Stamp(params.version, git_commit(workspace), inputs)
    flat = flat_leaderboard(boards, combined)
    version = {
        **stamp.as_dict(),
        "benchmarks": [b.name for b in boards],
        "interval_sources": {b.name: b.interval_source for b in boards},
        "models": sorted(flat),
    }
    if params.anchor is not None:
        version["anchor"] = params.anchor
    version["combined_method"] = params.combined.method
    calibration_json = {c.board: c.as_metrics() for c in checks}
    markdown = render_markdown(boards, combined, stamp, checks, params.combined.method, params.anchor)
    pages = 0
    if site:
        pages = build_site(
            out / "site",
            benches,
            combined,
            stamp,
            {"leaderboard.json": dumps(flat), "leaderboard.md": markdown, "version.json": dumps(version)},
            params.site.games_per_page,
            load_releases(out),
            checks,
            params.combined.method,
        )
    write_json_atomic(out / "version.json", version)
    write_text_atomic(out / "leaderboard.md", markdown)
    write_json_atomic(out / "leaderboard.json", flat)
    write_text_atomic(out / "combined.csv", combined_csv(flat))
    write_json_atomic(out / "calibration.json", calibration_json)
    return Built(len(flat), [b.name for b in boards], pages, time.perf_counter() - started, stamp)
