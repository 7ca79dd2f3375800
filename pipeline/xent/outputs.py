"""What Xent's jobs write, declared once: benchmark.py declares `WRITES`, and the rules and the
report read it. A leaf module, so that neither needs the declaration (which imports the command
line) to know its files."""

from __future__ import annotations

from pipeline.core.run.registry import plot_files

#: what each verb's rule writes, relative to results/xent/ (the declaration's `writes`)
WRITES: dict[str, tuple[str, ...]] = {
    "rescore": (
        "moves.parquet",
        "rewards.parquet",
        "token_xents.parquet",
        "rescore.parquet",
        "round_status.parquet",
        "calls.parquet",
        "rescore_check.json",
    ),
    "rate": (
        "rounds.parquet",
        "scores.parquet",
        "maps.parquet",
        "ratings.parquet",
        "rating_events.parquet",
        "metrics.json",
    ),
    "report": plot_files("score_by_round", "running_best", "normalized_scores"),
}


def written(verb: str, root: str) -> list[str]:
    """`verb`'s files under `root`."""
    return [f"{root}/{path}" for path in WRITES[verb]]
