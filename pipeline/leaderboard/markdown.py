"""leaderboard.md: the combined table, one table per benchmark, and how to read them."""

from __future__ import annotations

from pipeline.core.rating import MIN_SETTLED_GAMES, MIN_SETTLED_RESAMPLES
from pipeline.leaderboard.combine import (
    BenchmarkBoard,
    CombinedEntry,
    leaderboard_note,
    mu_text,
    overlapping,
    rank_text,
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

- **rank (lo–hi)**: the rank by rating, and its 95% interval. A benchmark's interval comes from its
  bootstrap over games when it gives one; otherwise from the rating intervals (a model can rank no
  better than the models whose whole interval lies above its own allow, no worse than those wholly
  below allow).
- **not separable from**: models whose rank intervals overlap this model's: the data do not order them.
- **unsettled**: a rank interval counts only from a bootstrap of at least {MIN_SETTLED_RESAMPLES} resamples over at
  least {MIN_SETTLED_GAMES} games per model (pipeline/core/rating/multipass.py, `interval_settled`). Below that (no bootstrap,
  a few games) the rank interval is the whole field, the mu interval is not shown, and the model is
  separable from no one. A combined rank is unsettled when a benchmark rank behind it is.
  **games**: the games behind the model's rating.
- **combined score**: the mean over the benchmarks a model played of its percentile rank
  100 x (n - rank) / (n - 1) (100 = first of n, 0 = last); [lo, hi] applies the same formula to the
  rank interval's ends. Benchmarks with a single rated model do not count.
- **mu [lo, hi]**: the benchmark's TrueSkill mean and its 95% interval (sigma: TrueSkill's own uncertainty).
"""


def render_markdown(boards: list[BenchmarkBoard], combined: dict[str, CombinedEntry], stamp: Stamp) -> str:
    lines = ["# Leaderboard", "", f"_{stamp.short}_", ""]
    if not boards:
        lines += ["No benchmark results found (no results/<benchmark>/metrics.json).", ""]
    note = leaderboard_note(boards)
    if note:
        lines += [f"**{note}**" if note.startswith("Rankings not settled") else note, ""]
    names = [b.name for b in boards]
    if combined:
        lines += ["## Combined", ""]
        rows = []
        for model, entry in combined.items():
            per_bench = []
            for board in boards:
                rating = board.ratings.get(model)
                per_bench.append(
                    "–" if rating is None else rank_text(rating.rank, rating.rank_lo, rating.rank_hi, rating.settled)
                )
            rows.append(
                [
                    rank_text(entry.rank, entry.rank_lo, entry.rank_hi, entry.settled),
                    model,
                    f"{entry.score:.1f} [{entry.score_lo:.1f}, {entry.score_hi:.1f}]",
                    entry.benchmarks,
                    *per_bench,
                    ", ".join(overlapping(combined, model)) or "–",
                ]
            )
        lines += table(["rank", "model", "score [lo, hi]", "benchmarks", *names, "not separable from"], rows)
        lines.append("")
    for board in boards:
        lines += [f"## {board.name}", "", f"Rank intervals: {board.interval_source}. {board.settled_note()}", ""]
        rows = []
        for model, r in board.ratings.items():
            rows.append(
                [
                    rank_text(r.rank, r.rank_lo, r.rank_hi, r.settled),
                    model,
                    mu_text(r),
                    fmt(r.sigma),
                    "?" if r.games is None else r.games,
                    ", ".join(board.not_separable(model)) or "–",
                ]
            )
        lines += table(["rank", "model", "mu [lo, hi]", "sigma", "games", "not separable from"], rows)
        lines.append("")
    lines += [HOW_TO_READ, f"Inputs: {len(stamp.inputs)} files, listed with their hashes in version.json.", ""]
    return "\n".join(lines)
