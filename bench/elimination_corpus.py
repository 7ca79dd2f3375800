"""Import of the original Elimination Game's real public logs, as its leaderboard read them.

Reads a directory of the original's logs (default: the 60 logs of the public corpus sample in a
folder beside the project, when present, else the 7 copied into tests/data), rates them with the
original's procedure at the default settings, and reports what issue 14 asks about: logs read and
skipped (the reader before issue 14 rejected every log with an invalid-vote marker or seat-keyed
final ranks: counted here from the files themselves as the baseline), games whose recorded ranks
differ from the records, memory notes, and the time.

    .venv/bin/python bench/elimination_corpus.py [--corpus DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

import pipeline  # noqa: F401
from pipeline.elimination.config import RatingSettings
from pipeline.elimination.importer import run_import

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS = [ROOT.parent / "shared" / "samples" / "elimination-corpus", ROOT / "tests" / "data" / "elimination-corpus"]
MARKERS = ('"(invalid/skipped)"', '"(invalid_or_skipped)"')


def rejected_before(path: Path) -> bool:
    """Would the reader before issue 14 have skipped this log? (a marker as a vote target, or
    final_ranks keyed by seat labels)"""
    text = path.read_text()
    if any(marker in text for marker in MARKERS):
        return True
    for line in text.split("\n"):  # not splitlines(): messages hold U+2028 line separators
        record = json.loads(line)
        if record.get("type") == "final_results":
            return any(not str(k).startswith("Player") for k in record.get("final_ranks") or {})
    return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=next((d for d in DEFAULTS if d.is_dir()), DEFAULTS[-1]))
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.jsonl"))
    before = sum(rejected_before(p) for p in files)
    with tempfile.TemporaryDirectory() as work:
        started = time.perf_counter()
        result = run_import([args.corpus], Path(work) / "out", RatingSettings(bootstrap_resamples=0), plots=False)
        seconds = time.perf_counter() - started
    report = result.report
    board = result.leaderboard
    write_result(
        "elimination_corpus",
        metric=f"logs of the original's public corpus read and rated ({len(files)} real logs in {args.corpus.name})",
        value=report["games_finished"],
        unit="games rated",
        target="every log read; a log skipped only for real corruption (issue 14)",
        baseline={
            "description": "logs the reader before issue 14 would have read (not rejected for an "
            "invalid-vote marker or seat-keyed final ranks), counted from the files",
            "value": len(files) - before,
            "unit": "games",
        },
        files=len(files),
        skipped=len(report["skipped"]),
        rank_differences=len(report["rank_differences"]),
        invalid_vote_markers=report["invalid_vote_markers"],
        memory_notes=report["memory_notes"],
        variants=report["variants"],
        models=board.height,
        mu_rel_range=[round(board["mu_rel"].min(), 3), round(board["mu_rel"].max(), 3)],
        seconds=round(seconds, 2),
        stages_s={k: round(v, 2) for k, v in result.seconds.items()},
    )


if __name__ == "__main__":
    main()
