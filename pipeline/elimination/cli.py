"""`python -m pipeline elimination schedule | play | import`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _cmd_schedule(args: argparse.Namespace) -> int:
    from pipeline.elimination.schedule import schedule_from_files

    games = schedule_from_files(args.params, args.models)
    for game in games:
        print(f"{game.game_id}  " + " ".join(f"P{i + 1}={n}" for i, n in enumerate(game.seats)))
    _say(f"{len(games)} game(s)")
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    from pipeline.core.params import ParamsError
    from pipeline.core.roster import load_models
    from pipeline.elimination.config import load_elimination_params
    from pipeline.elimination.engine import game_spec, run_game
    from pipeline.elimination.schedule import build_schedule

    params = load_elimination_params(args.params)
    models = load_models(args.models)
    games = {g.game_id: g for g in build_schedule(params, models, args.params)}
    if args.game_id not in games:
        raise ParamsError(f"game {args.game_id!r} is not in the schedule of {args.params} "
                          f"({len(games)} games; list them with `python -m pipeline elimination schedule`)")
    spec = game_spec(params, games[args.game_id])
    _say(f"game {spec.game_id}: " + ", ".join(f"P{i + 1}={n}" for i, n in enumerate(spec.seats)))
    started = time.perf_counter()
    output = run_game(spec, models, args.out, progress=_say)
    _say(f"wrote {output.log_path} ({len(output.records)} records) in {time.perf_counter() - started:.1f}s")
    return 0


def _cmd_play_shard(args: argparse.Namespace) -> int:
    """Several scheduled games on one event loop (API games; see pipeline.core.shards)."""
    from pipeline.core.params import ParamsError
    from pipeline.core.roster import load_models
    from pipeline.core.shards import ShardGame, run_shard, split_ids
    from pipeline.elimination.config import load_elimination_params
    from pipeline.elimination.engine import GameSpec, game_spec, play_game
    from pipeline.elimination.schedule import build_schedule

    params = load_elimination_params(args.params)
    models = load_models(args.models)
    games = {g.game_id: g for g in build_schedule(params, models, args.params)}
    unknown = [g for g in split_ids(args.games) if g not in games]
    if unknown:
        raise ParamsError(f"game {unknown[0]!r} is not in the schedule of {args.params} "
                          f"({len(games)} games; list them with `python -m pipeline elimination schedule`)")
    specs = [game_spec(params, games[i]) for i in split_ids(args.games)]
    out = Path(args.out)

    async def play(spec: GameSpec) -> None:
        await play_game(spec, models, out / spec.game_id)

    def done(game_id: str) -> bool:  # the calls table is written after the log
        return (out / game_id / "calls.parquet").exists() and any((out / game_id).glob("game_*.jsonl"))

    return run_shard([ShardGame(s.game_id, s) for s in specs], play, done, at_once=models.parallel.games_per_job,
                     marker=args.marker, say=_say)


def _cmd_import(args: argparse.Namespace) -> int:
    from pipeline.elimination.config import RatingSettings, load_elimination_params
    from pipeline.elimination.importer import run_import

    # without a params file: no bootstrap unless asked (it reruns the rating per resample, which
    # is slow on thousands of logs with the reference TrueSkill)
    settings = load_elimination_params(args.params).rating if args.params else RatingSettings(bootstrap_resamples=0)
    overrides = {k: getattr(args, k) for k in ("mu", "sigma", "seed", "aggregate", "ranks")
                 if getattr(args, k) is not None}
    settings = RatingSettings.model_validate({**settings.model_dump(), **overrides})
    started = time.perf_counter()
    result = run_import(args.paths, args.out, settings, passes=args.passes, bootstrap=args.bootstrap,
                        plots=not args.no_plots, calls_out=args.calls, progress=_say)
    out = Path(args.out)
    _say(f"rated {result.leaderboard.height} model(s) over {result.report['games_finished']} game(s) "
         f"in {time.perf_counter() - started:.1f}s; wrote {out / 'leaderboard.csv'}")
    if args.json:
        print(json.dumps({"report": result.report, "seconds": result.seconds}, indent=1))
    else:
        for row in result.leaderboard.head(args.show).iter_rows(named=True):
            print(f"{row['rank']:>3} ({row['rank_lo']}-{row['rank_hi']})  {row['model']:<40} mu={row['mu']:.3f} "
                  f"mu_rel={row['mu_rel']:+.3f} sigma={row['sigma']:.3f} games={row['games']} "
                  f"points={row['points_sum']:.3f} avg_points={row['avg_points']:.3f}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    room = commands.add_parser("elimination", help="Elimination Game: schedule, play, import and rate logs")
    sub = room.add_subparsers(dest="elimination_command", metavar="SUBCOMMAND", required=True)

    schedule = sub.add_parser("schedule", help="list the scheduled games (id and who sits where)")
    schedule.add_argument("--params", default="params/elimination.yaml")
    schedule.add_argument("--models", default="params/models.yaml")
    schedule.set_defaults(func=_cmd_schedule)

    play = sub.add_parser("play", help="play one scheduled game; write its log and calls table")
    play.add_argument("--game-id", required=True)
    play.add_argument("--out", required=True, help="directory for game_<id>.jsonl and calls.parquet")
    play.add_argument("--params", default="params/elimination.yaml")
    play.add_argument("--models", default="params/models.yaml")
    play.set_defaults(func=_cmd_play)

    shard = sub.add_parser("play-shard", help="play several scheduled games concurrently on one event loop")
    shard.add_argument("games", help="game ids, separated by commas")
    shard.add_argument("--out", required=True, help="directory holding one folder per game")
    shard.add_argument("--marker", required=True, help="written when every game of the shard is done")
    shard.add_argument("--params", default="params/elimination.yaml")
    shard.add_argument("--models", default="params/models.yaml")
    shard.set_defaults(func=_cmd_play_shard)

    imp = sub.add_parser(
        "import", help="read game logs (ours or the original benchmark's), rate, write tables and plots")
    imp.add_argument("paths", nargs="*", metavar="DIR", help="directories (searched recursively for *.jsonl) or files")
    imp.add_argument("--out", required=True, help="output directory (leaderboard.csv, tables/, plots/, ...)")
    imp.add_argument("--passes", type=int, default=None, help="random orders of the games (default 100)")
    imp.add_argument("--bootstrap", type=int, default=None,
                     help="bootstrap resamples over games for mu intervals (default: from --params, else 0)")
    imp.add_argument("--mu", type=float, default=None, help="TrueSkill prior mean (default 4.0)")
    imp.add_argument("--sigma", type=float, default=None, help="TrueSkill prior sigma (default 8.3333)")
    imp.add_argument("--seed", type=int, default=None, help="seed of the pass orders (default 0)")
    imp.add_argument("--aggregate", choices=["mean", "median"], default=None,
                     help="summary of mu and sigma over the passes (default mean)")
    imp.add_argument("--ranks", choices=["recorded", "derived"], default=None,
                     help="recorded: final_results, as the original's leaderboard (default); derived: re-derived")
    imp.add_argument("--params", default=None, help="read the rating settings from this params file")
    imp.add_argument("--calls", default=None, help="also stack the games' calls tables into this parquet")
    imp.add_argument("--no-plots", action="store_true", help="skip the plots (faster on huge corpora)")
    imp.add_argument("--show", type=int, default=20, help="leaderboard rows to print")
    imp.add_argument("--json", action="store_true", help="print the import report and timings as JSON")
    imp.set_defaults(func=_cmd_import)
