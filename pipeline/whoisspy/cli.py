"""The bodies of `python -m pipeline whoisspy rate | report`, which benchmark.py declares (core/run/verbs.py
builds their command lines; `schedule` and `play` come from the game contract, core/run/skeleton.py),
and Who is Spy's own `show`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.core.run.verbs import BenchmarkCommands, VerbCall


def rate(args: VerbCall) -> int:
    from pipeline.whoisspy.report import write_rate
    from pipeline.whoisspy.workflow import SKELETON

    params, files = SKELETON.played_games(args, args.args.games)
    summary = write_rate(params, files, args.out)
    print(
        f"rated {summary['games']} game(s), {summary['rating_events']} TrueSkill event(s), "
        f"{summary['models']} model(s) on the leaderboard; see {Path(args.out) / 'metrics.json'}",
        file=sys.stderr,
    )
    return 0


def report(args: VerbCall) -> int:
    from pipeline.whoisspy.report import write_report

    written = write_report(args.out)
    print(f"wrote {len(written)} plot file(s) under {Path(args.out) / 'plots'}", file=sys.stderr)
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    path = Path(args.game)
    if not path.exists():
        path = Path(args.games) / f"{args.game}.json"
    if not path.exists():
        print(f"error: no game record {args.game!r} (a path, or an id under {args.games})", file=sys.stderr)
        return 2
    record = json.loads(path.read_text(encoding="utf-8"))
    print(
        f"game {record['game_id']} ({record['variant']}): civilians '{record['words']['civilian']}', "
        f"spy '{record['words']['spy']}'; {record['starter']} starts"
    )
    for p in record["players"]:
        print(f"  {p['seat']} {p['model']:<20} {p['role']:<9} {p['word']}")
    for e in record["events"]:
        kind = e["type"]
        if kind == "speech":
            flags = f"  [foul: {', '.join(e['fouls'])}]" if e["fouls"] else ""
            print(f"r{e['round']} {e['seat']} says: {e['shown']}{flags}")
        elif kind == "analysis":  # said aloud before the others voted
            print(f"r{e['round']} {e['seat']} analyses aloud: " + " ".join(e["text"].split())[:300])
        elif kind == "vote":
            unread = " (no candidate named: an abstention)" if e.get("ballot") == "invalid" else ""
            print(f"r{e['round']} {e['voter']} votes {e['target'] or '(abstains)'}{unread}")
            if e.get("analysis") and not e.get("analysis_heard", False):
                print("     analysis (private): " + " ".join(e["analysis"].split())[:300])
        elif kind == "vote_result":
            result = e["eliminated"] or (f"tie {', '.join(e['tied'])}" if e["tied"] else "no votes")
            print(f"r{e['round']} vote result: {result}")
        elif kind == "elimination":
            print(f"r{e['round']} {e['seat']} is out ({e['by']})")
        elif kind == "end":
            print(f"end: {e['winner']} win ({e['reason']})")
    print("scores: " + ", ".join(f"{p['seat']} {p['score']:g}" for p in record["players"]))
    return 0


def extra_commands(bench: BenchmarkCommands) -> None:
    show = bench.extra("show", "replay a played game as text", _cmd_show, inputs=False, writes=False)
    show.add_argument("game", help="a game id or a path to a game record")
    show.add_argument("--games", default="results/whoisspy/games", help="the games folder")
