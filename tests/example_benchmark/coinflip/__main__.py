"""`python -m coinflip play GAME_ID` and `python -m coinflip rate`: what the rules call."""

from __future__ import annotations

import argparse
from pathlib import Path

from coinflip.config import load
from coinflip.play import play, rate_and_report, schedule


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m coinflip")
    parser.add_argument("verb", choices=["schedule", "play", "rate"])
    parser.add_argument("game_id", nargs="?")
    parser.add_argument("--params", default="params/coinflip.yaml")
    parser.add_argument("--out", default="results/coinflip")
    args = parser.parse_args()
    params, out = load(args.params), Path(args.out)
    if args.verb == "schedule":
        for game_id, (a, b, repeat) in sorted(schedule(params).items()):
            print(game_id, a, b, repeat)
    elif args.verb == "play":
        play(params, args.game_id, out / "games")
    else:
        rate_and_report(params, out / "games", out)


if __name__ == "__main__":
    main()
