"""A full 8-bot Elimination Game end to end: players, every round, the jury, the log and calls table.

Target (issue 6): under 5 s wall per game. Measured in process (after imports) over several games
with different ids (heuristic and random bots, 4 seats each); the CLI run (`python -m pipeline
elimination play`, interpreter start and imports included) is measured once and reported beside it.

    .venv/bin/python bench/elimination_game.py [--games 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml
from _common import write_result

import pipeline  # noqa: F401
from pipeline.core.models.roster import ModelsParams
from pipeline.elimination.engine import GameSpec, run_game

ROSTER = [{"name": "heuristic-bot", "bot": "heuristic"}, {"name": "random-bot", "bot": "random"}]
SEATS = ("heuristic-bot", "random-bot") * 4


def cli_run(work: Path) -> float:
    """One game through the CLI in a scratch project: what a Snakemake job pays."""
    (work / "params").mkdir(parents=True, exist_ok=True)
    (work / "params" / "models.yaml").write_text(yaml.safe_dump({"roster": ROSTER}))
    (work / "params" / "elimination.yaml").write_text(
        yaml.safe_dump({"schedule": {"lineups": [list(SEATS)], "rotations": 1, "max_seats_per_player": 4}})
    )
    listed = subprocess.run(
        [sys.executable, "-m", "pipeline", "elimination", "schedule"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    game_id = listed.stdout.split()[0]
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pipeline", "elimination", "play", game_id, "--out", str(work / "games")],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=5)
    args = parser.parse_args()
    models = ModelsParams.model_validate({"roster": ROSTER})
    times, records = [], []
    with tempfile.TemporaryDirectory() as tmp:
        run_game(GameSpec("warmup", SEATS), models, Path(tmp) / "warmup", root=tmp)  # first-call costs
        for i in range(args.games):
            started = time.perf_counter()
            output = run_game(GameSpec(f"bench{i:03d}", SEATS), models, Path(tmp) / f"g{i}", root=tmp)
            times.append(time.perf_counter() - started)
            records.append(len(output.records))
        cli_s = cli_run(Path(tmp) / "cli")
    median = statistics.median(times)
    write_result(
        "elimination_game",
        metric="wall time of one full 8-bot game (players, all rounds, jury, log + calls table), median",
        value=round(median, 4),
        unit="s",
        target="< 5 s",
        baseline={
            "description": "the same game through `python -m pipeline elimination play` "
            "(interpreter start and imports included), one run",
            "value": round(cli_s, 3),
            "unit": "s",
        },
        games=args.games,
        per_game_s=[round(t, 4) for t in times],
        records_per_game=records,
        meets_target=median < 5.0,
    )


if __name__ == "__main__":
    main()
