"""`python -m pipeline coinflip schedule | play | rate | report`: the shared verb set (pipeline/core/run/verbs.py).

pipeline/cli.py adds these commands for every registered benchmark whose package has a `cli` module.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def _cmd_schedule(args: argparse.Namespace) -> int:
    import json

    from coinflip.config import load
    from coinflip.play import schedule

    games = sorted(schedule(load(args.params)).items())
    if args.json:
        print(json.dumps([{"game_id": g, "players": [a, b], "repeat": r} for g, (a, b, r) in games], indent=2))
    for game_id, (a, b, repeat) in games if not args.json else []:
        print(game_id, a, b, repeat)
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    from coinflip.config import load
    from coinflip.play import play
    from pipeline.core.run import job_ids

    params = load(args.params)
    for game_id in job_ids(args):
        play(params, game_id, Path(args.out))
    return 0


def _cmd_rate(args: argparse.Namespace) -> int:
    from coinflip.config import load
    from coinflip.play import rate

    rate(load(args.params), Path(args.out) / "games", Path(args.out))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from coinflip.play import report

    report(Path(args.out))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    from pipeline.core.run import BenchmarkCommands

    bench = BenchmarkCommands(commands, "coinflip", "Coin flip: the example benchmark")
    bench.schedule(_cmd_schedule)
    bench.play(_cmd_play, "flip scheduled games; write <out>/<game_id>.json", out="results/coinflip/games",
              out_help="the games folder")
    bench.rate(_cmd_rate, "games.parquet, TrueSkill and metrics.json from every scheduled game")
    bench.report(_cmd_report, "summary.md from the ratings")
    bench.check()
