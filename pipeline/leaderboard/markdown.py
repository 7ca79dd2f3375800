"""leaderboard.md: the combined table, one table per benchmark, and how to read them."""

from __future__ import annotations

from pipeline.core.rating import MIN_SETTLED_GAMES, MIN_SETTLED_RESAMPLES
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
from pipeline.leaderboard.stamp import Stamp


def md_cell(text: object) -> str:
    """A table cell: pipes and newlines would break the row; model names are user text."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines


HOW_TO_READ = f"""\
## How to read this

- **score [lo, hi]** (joint, the default): one Bradley–Terry rating over the games of every
  benchmark, each benchmark weighted equally, on the Elo scale (400 points: 10-to-1 odds); [lo, hi]
  is its 95% bootstrap interval over games resampled within each benchmark (docs/ratings.md). 1000
  is the anchor model's score when `anchor` is set, else the mean of the full-coverage models.
- **rank (lo–hi)**: the rank by score, and its 95% interval: a model can rank no better than the
  models whose whole interval lies above its own allow, no worse than those wholly below allow.
- **provisional**: the model missed a benchmark the board combines. Provisional models are rated
  against the full-coverage models' fixed ratings and listed after them, so they never move them.
- **unsettled**: an interval counts only from a bootstrap of at least {MIN_SETTLED_RESAMPLES} resamples over at
  least {MIN_SETTLED_GAMES} games of the model (pipeline/core/rating/multipass.py, `interval_settled`). Below
  that the rank interval is the whole section and the model is separable from no one.
- **games**: the games behind the rating, counted once each whatever seats the model held: over
  every benchmark in the combined table, that benchmark's in its own table.
- **not separable**: how many models' rank intervals overlap this model's (the site lists them).
- **calibration**: the graded bots (`bot: graded`) have a known order, higher skill first; the line
  says whether the board recovers it (Kendall tau), and whether their rows are settled.
- **mu [lo, hi]**: a benchmark's TrueSkill mean, as its reference rates it, and its 95% bootstrap
  interval (sigma: TrueSkill's own uncertainty).
"""

MEAN_PERCENTILE_NOTE = (
    "Combined by `mean_percentile`: the mean over the benchmarks a model played of its percentile rank "
    "100 x (n - rank) / (n - 1) (100 = first, 0 = last); it rewards playing fewer benchmarks."
)


def number_text(value: float | None, digits: int = 3) -> str:
    """A metric as read: a whole number (a count, points) without decimals, else `digits` of them."""
    if value is None:
        return "–"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def count_text(value: int | None) -> str:
    return "?" if value is None else str(value)


def coverage_text(entry: CombinedEntry) -> str:
    """'4/4', or '2/4, missed skate, xent' (played and missed: every benchmark the board combines)."""
    text = f"{entry.benchmarks}/{entry.benchmarks + len(entry.missed)}"
    return f"{text}, missed {', '.join(entry.missed)}" if entry.missed else text


def combined_rows(
    boards: list[BenchmarkBoard], combined: dict[str, CombinedEntry], rows: list[str]
) -> list[list[object]]:
    out = []
    for model in rows:
        entry = combined[model]
        per_bench = []
        for board in boards:
            rating = board.ratings.get(model)
            per_bench.append(
                "–" if rating is None else rank_text(rating.rank, rating.rank_lo, rating.rank_hi, rating.settled)
            )
        out.append(
            [
                rank_text(entry.rank, entry.rank_lo, entry.rank_hi, entry.settled),
                model + (" (bot)" if entry.bot else ""),
                score_text(entry, 0 if entry.games is not None else 1),
                count_text(entry.games),
                coverage_text(entry),
                *per_bench,
                len(overlapping(combined, model)),
            ]
        )
    return out


def render_markdown(
    boards: list[BenchmarkBoard],
    combined: dict[str, CombinedEntry],
    stamp: Stamp,
    checks: list[Calibration] | None = None,
    method: str = "joint",
    anchor: str | None = None,
) -> str:
    lines = ["# Leaderboard", "", f"_{stamp.short}_", ""]
    if not boards:
        lines += ["No benchmark results found (no results/<benchmark>/metrics.json).", ""]
    for check in checks or []:
        if check.board == "combined":
            lines += [f"**{check.line()}**" if not (check.in_order and check.settled) else check.line(), ""]
    note = leaderboard_note(boards)
    if note:
        lines += [f"**{note}**" if note.startswith("Rankings not settled") else note, ""]
    names = [b.name for b in boards]
    header = ["rank (95%)", "model", "score [95%]", "games", "benchmarks", *names, "not separable"]
    if combined:
        full = [m for m, e in combined.items() if not e.provisional]
        partial = [m for m, e in combined.items() if e.provisional]
        kind = "joint rating" if method == "joint" else "general skill of the hierarchical joint fit"
        scale = f"{kind}, Elo scale, {'anchor ' + anchor + ' = 1000' if anchor else 'mean of full coverage = 1000'}"
        lines += [
            "## Combined",
            "",
            MEAN_PERCENTILE_NOTE
            if method == "mean_percentile"
            else f"One rating over every benchmark's games ({scale}).",
            "",
        ]
        if full:
            lines += table(header, combined_rows(boards, combined, full)) + [""]
        if partial:
            lines += [
                "### Provisional: missed a benchmark the board combines",
                "",
                "Rated against the full-coverage models' fixed ratings; ranked after them.",
                "",
            ]
            lines += table(header, combined_rows(boards, combined, partial)) + [""]
        models_only = [m for m, e in combined.items() if not e.bot]
        if models_only and len(models_only) < len(combined):
            lines += ["### Models only (bots hidden; ranks as on the whole board)", ""]
            lines += table(header, combined_rows(boards, combined, models_only)) + [""]
    for board in boards:
        lines += [f"## {board.name}", "", f"Rank intervals: {board.interval_source}. {board.settled_note()}", ""]
        for check in checks or []:
            if check.board == board.name and check.tau is not None:
                lines += [check.line(), ""]
        rows = []
        for model, r in board.ratings.items():
            rows.append(
                [
                    rank_text(r.rank, r.rank_lo, r.rank_hi, r.settled),
                    model,
                    mu_text(r),
                    fmt(r.sigma),
                    count_text(r.games),
                    len(board.not_separable(model)),
                ]
            )
        lines += table(["rank (95%)", "model", "mu [lo, hi]", "sigma", "games", "not separable"], rows)
        lines.append("")
    lines += [HOW_TO_READ, f"Inputs: {len(stamp.inputs)} files, listed with their hashes in version.json.", ""]
    return "\n".join(lines)
