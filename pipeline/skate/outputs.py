"""The files of the stage's closing jobs (imported at Snakefile parse time: keep it light)."""

from __future__ import annotations

from pathlib import Path

RATE_TABLES: tuple[str, ...] = (
    "questions", "setter_rounds", "samples", "pcorrect", "calls", "ratings", "rating_history",
)
PLOTS: tuple[str, ...] = (
    "trueskill_history", "asking_vs_answering", "cumulative_p_correct", "self_preference", "p_correct_variance",
)


def rate_outputs(out: str | Path) -> list[str]:
    return [str(Path(out) / f"{name}.parquet") for name in RATE_TABLES]


def report_outputs(out: str | Path) -> list[str]:
    folder = Path(out)
    files = [str(folder / "metrics.json"), str(folder / "variance.parquet"), str(folder / "points_of_difference.md")]
    files += [str(folder / "plots" / f"{name}.{fmt}") for name in PLOTS for fmt in ("html", "png", "svg")]
    return files
