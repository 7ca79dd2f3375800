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


def analysis_outputs(out: str | Path) -> list[str]:
    """Stability and answer-only re-ranking (from the game's own tables)."""
    folder = Path(out) / "analyses"
    files = [str(folder / name) for name in ("stability.parquet", "answer_only.parquet", "game_analyses.json")]
    files += [str(folder / "plots" / f"{name}.{fmt}") for name in ("stability", "answer_only") for fmt in ("html", "png", "svg")]
    return files


def strategy_game_output(out: str | Path, strategy: str) -> str:
    return str(Path(out) / "strategies" / strategy / "metrics.json")


def strategy_outputs(out: str | Path) -> list[str]:
    folder = Path(out) / "analyses"
    return [str(folder / "strategies.parquet"), str(folder / "strategies.json")] + [
        str(folder / "plots" / f"strategies.{fmt}") for fmt in ("html", "png", "svg")]
