"""The bodies of `python -m pipeline whoisspy schedule | play | rate | report`, which benchmark.py declares
(core/run/verbs.py builds their command lines), and Who is Spy's own `show`."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

from pipeline.core.run.verbs import BenchmarkCommands, VerbCall


def _schedule(args: VerbCall) -> Any:  # -> (params, models, list[GameSpec])
    from pipeline.core.models import load_models
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import build_schedule

    params = load_whoisspy(args.params)
    models = load_models(args.models)
    return params, models, build_schedule(params, models, source=args.params)


def play(args: VerbCall) -> int:
    """One scheduled game, or several on one event loop (API games; see pipeline.core.run.shards)."""
    from pipeline.core.artifacts import write_record
    from pipeline.core.models import Gateway
    from pipeline.core.run import ShardGame, game_done, run_shard, say
    from pipeline.whoisspy.engine import planned_moves, play_record, run_record
    from pipeline.whoisspy.records import WhoIsSpyGame
    from pipeline.whoisspy.schedule import GameSpec, find_game

    _, models, games = _schedule(args)
    specs = [find_game(games, game_id, args.params) for game_id in args.jobs]
    out = Path(args.out)

    def write(spec: GameSpec, gateway: Gateway, record: WhoIsSpyGame) -> None:
        gateway.write_calls(out / f"{spec.game_id}.calls.parquet")
        write_record(out / f"{spec.game_id}.json", record)  # last: its presence means done

    if len(specs) == 1 and args.marker is None:
        spec = specs[0]
        gateway = Gateway(models, job=f"whoisspy/{spec.game_id}")
        say(f"game {spec.game_id}: {json.dumps(spec.summary())}")
        record = run_record(spec, models, gateway)
        write(spec, gateway, record)
        scores = ", ".join(f"{p.seat}={p.score:g}" for p in record.players)
        say(f"{record.winner} win ({record.end_reason}, {record.rounds_played} round(s)); scores {scores}")
        return 0

    async def play(spec: GameSpec) -> None:
        gateway = Gateway(models, job=f"whoisspy/{spec.game_id}")
        write(spec, gateway, await play_record(spec, models, gateway))

    return run_shard(
        [ShardGame(s.game_id, s) for s in specs],
        play,
        partial(game_done, out),
        at_once=models.parallel.games_per_job,
        marker=args.marker,
        say=say,
        moves=planned_moves,
    )


def rate(args: VerbCall) -> int:
    from pipeline.whoisspy.report import write_rate

    params, _, games = _schedule(args)
    folder = Path(args.args.games)
    files = [folder / f"{g.game_id}.json" for g in games]
    if params.schedule.adaptive.enabled and not files:
        print(
            "error: schedule.adaptive is on and no round has been chosen yet; run `python -m pipeline run "
            "whoisspy_all` (or `dvc repro whoisspy`): it chooses the rounds and plays them",
            file=sys.stderr,
        )
        return 2
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        print(
            f"error: {len(missing)} scheduled game(s) not played yet, e.g. {missing[0]}; "
            "run `snakemake whoisspy_all` (or `python -m pipeline whoisspy play ID`) first",
            file=sys.stderr,
        )
        return 2
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


def schedule(args: VerbCall) -> int:
    _, _, games = _schedule(args)
    if args.json:
        print(json.dumps([g.summary() for g in games], indent=2))
        return 0
    for g in games:
        seats = " ".join(
            f"{name}={model}{'*' if i == g.spy_seat else ''}"
            for i, (name, model) in enumerate(zip(g.seat_names, g.seats))
        )
        print(f"{g.game_id}  {g.variant:<9} {g.civilian_word}/{g.spy_word:<12} {seats}")
    print(f"{len(games)} game(s); * marks the spy", file=sys.stderr)
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
