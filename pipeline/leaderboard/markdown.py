"""leaderboard.md: the combined table, one table per benchmark, and how to read them."""

from __future__ import annotations

from pipeline.leaderboard.combine import BenchmarkBoard, CombinedEntry, overlapping, rank_text
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


HOW_TO_READ = """\
## How to read this

- **rank (lo–hi)**: the rank by rating, and its 95% interval. A benchmark's interval comes from its
  bootstrap over games when it gives one; otherwise from the rating intervals (a model can rank no
  better than the models whose whole interval lies above its own allow, no worse than those wholly
  below allow).
- **not separable from**: models whose rank intervals overlap this model's: the data do not order them.
- **combined score**: the mean over the benchmarks a model played of its percentile rank
  100 x (n - rank) / (n - 1) (100 = first of n, 0 = last); [lo, hi] applies the same formula to the
  rank interval's ends. Benchmarks with a single rated model do not count.
- **mu [lo, hi]**: the benchmark's TrueSkill mean and its 95% interval (sigma: TrueSkill's own uncertainty).
"""


def render_markdown(boards: list[BenchmarkBoard], combined: dict[str, CombinedEntry], stamp: Stamp) -> str:
    lines = ["# Leaderboard", "", f"_{stamp.short}_", ""]
    if not boards:
        lines += ["No benchmark results found (no results/<benchmark>/metrics.json).", ""]
    names = [b.name for b in boards]
    if combined:
        lines += ["## Combined", ""]
        rows = []
        for model, entry in combined.items():
            per_bench = []
            for board in boards:
                rating = board.ratings.get(model)
                per_bench.append("–" if rating is None else rank_text(rating.rank, rating.rank_lo, rating.rank_hi))
            rows.append([
                rank_text(entry.rank, entry.rank_lo, entry.rank_hi), model,
                f"{entry.score:.1f} [{entry.score_lo:.1f}, {entry.score_hi:.1f}]", entry.benchmarks,
                *per_bench, ", ".join(overlapping(combined, model)) or "–",
            ])
        lines += table(["rank", "model", "score [lo, hi]", "benchmarks", *names, "not separable from"], rows)
        lines.append("")
    for board in boards:
        lines += [f"## {board.name}", "", f"Rank intervals: {board.interval_source}.", ""]
        rows = []
        for model, r in board.ratings.items():
            interval = "" if r.mu_lo is None or r.mu_hi is None else f" [{fmt(r.mu_lo)}, {fmt(r.mu_hi)}]"
            rows.append([
                rank_text(r.rank, r.rank_lo, r.rank_hi), model, f"{fmt(r.mu)}{interval}", fmt(r.sigma),
                ", ".join(board.not_separable(model)) or "–",
            ])
        lines += table(["rank", "model", "mu [lo, hi]", "sigma", "not separable from"], rows)
        lines.append("")
    lines += [HOW_TO_READ, f"Inputs: {len(stamp.inputs)} files, listed with their hashes in version.json.", ""]
    return "\n".join(lines)
