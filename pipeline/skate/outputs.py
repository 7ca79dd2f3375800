"""What SKATE's closing jobs write, declared once: benchmark.py declares `WRITES`, and the rules and
the report read these lists. A leaf module, so that neither needs the declaration (which imports the
command line) to know its files."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.run.registry import plot_files

#: the tables `rate` writes (<name>.parquet)
RATE_TABLES = (
    "questions",
    "setter_rounds",
    "samples",
    "pcorrect",
    "calls",
    "ratings",
    "rating_history",
    "rating_events",
)
#: the plots `report` draws
PLOTS = ("trueskill_history", "asking_vs_answering", "cumulative_p_correct", "self_preference", "p_correct_variance")

#: what each verb's rule writes, relative to results/skate/ (the declaration's `writes`)
WRITES: dict[str, tuple[str, ...]] = {
    "rate": tuple(f"{table}.parquet" for table in RATE_TABLES),
    "report": ("metrics.json", "variance.parquet", "points_of_difference.md", *plot_files(*PLOTS)),
    "analyse": (
        "analyses/stability.parquet",
        "analyses/answer_only.parquet",
        "analyses/game_analyses.json",
        *plot_files("stability", "answer_only", folder="analyses/plots"),
    ),
    "compare-strategies": (
        "analyses/strategies.parquet",
        "analyses/strategies.json",
        *plot_files("strategies", folder="analyses/plots"),
    ),
}


def _written(verb: str, out: str | Path) -> list[str]:
    return [f"{out}/{path}" for path in WRITES[verb]]


def rate_outputs(out: str | Path) -> list[str]:
    return _written("rate", out)


def report_outputs(out: str | Path) -> list[str]:
    return _written("report", out)


def analysis_outputs(out: str | Path) -> list[str]:
    """Stability and answer-only re-ranking (from the game's own tables)."""
    return _written("analyse", out)


def strategy_game_output(out: str | Path, strategy: str) -> str:
    return str(Path(out) / "strategies" / strategy / "metrics.json")


def strategy_outputs(out: str | Path) -> list[str]:
    return _written("compare-strategies", out)
