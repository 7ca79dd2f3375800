"""The bodies of `python -m pipeline elimination schedule | play | rate | report`, which benchmark.py
declares (core/run/verbs.py builds their command lines), and the Elimination Game's own `import`."""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

from pipeline.core.run.verbs import BenchmarkCommands, VerbCall, say


def schedule(args: VerbCall) -> int:
    from pipeline.elimination.schedule import schedule_from_files

    games = schedule_from_files(args.params, args.models)
    if args.json:
        print(json.dumps([{"game_id": g.game_id, "seats": list(g.seats)} for g in games], indent=2))
        return 0
    for game in games:
        print(f"{game.game_id}  " + " ".join(f"P{i + 1}={n}" for i, n in enumerate(game.seats)))
    say(f"{len(games)} game(s)")
    return 0


def play(args: VerbCall) -> int:
    """One scheduled game, or several on one event loop (API games; see pipeline.core.run.shards)."""
    from pipeline.core.artifacts import ParamsError
    from pipeline.core.models import load_models
    from pipeline.core.run import ShardGame, game_done, run_shard
    from pipeline.elimination.config import load_elimination_params
    from pipeline.elimination.engine import GameSpec, game_spec, planned_moves, play_game, run_game
    from pipeline.elimination.schedule import build_schedule

    params = load_elimination_params(args.params)
    models = load_models(args.models)
    games = {g.game_id: g for g in build_schedule(params, models, args.params)}
    wanted = list(args.jobs)
    unknown = [g for g in wanted if g not in games]
    if unknown:
        raise ParamsError(
            f"game {unknown[0]!r} is not in the schedule of {args.params} "
            f"({len(games)} games; list them with `python -m pipeline elimination schedule`)"
        )
    specs = [game_spec(params, games[i]) for i in wanted]
    out = Path(args.out)  # one folder per game: <out>/<game_id>/game_<n>.jsonl and calls.parquet

    if len(specs) == 1 and args.marker is None:
        spec = specs[0]
        say(f"game {spec.game_id}: " + ", ".join(f"P{i + 1}={n}" for i, n in enumerate(spec.seats)))
        started = time.perf_counter()
        output = run_game(spec, models, out / spec.game_id, progress=say)
        say(f"wrote {output.log_path} ({len(output.records)} records) in {time.perf_counter() - started:.1f}s")
        return 0

    async def play(spec: GameSpec) -> None:
        await play_game(spec, models, out / spec.game_id)

    done = partial(game_done, out, log_pattern="game_*.jsonl")  # the calls table is written after the log
    return run_shard(
        [ShardGame(s.game_id, s) for s in specs],
        play,
        done,
        at_once=models.parallel.games_per_job,
        marker=args.marker,
        say=say,
        moves=planned_moves,
    )


def _print_board(board, show: int) -> None:  # board: the leaderboard frame
    from pipeline.core.rating import MIN_SETTLED_GAMES, MIN_SETTLED_RESAMPLES

    for row in board.head(show).iter_rows(named=True):
        ranks = f"{row['rank']:>3} ({row['rank_lo']}-{row['rank_hi']})" + ("" if row["settled"] else " unsettled")
        print(
            f"{ranks}  {row['model']:<40} mu={row['mu']:.3f} "
            f"mu_rel={row['mu_rel']:+.3f} sigma={row['sigma']:.3f} games={row['games']} "
            f"points={row['points_sum']:.3f} avg_points={row['avg_points']:.3f}"
        )
    unsettled = board.filter(~board["settled"])
    if unsettled.height:
        # the rank interval of an unsettled model is the whole field (pipeline.core.rating.multipass.interval_settled)
        low, high = unsettled["rated_games"].min(), unsettled["rated_games"].max()
        games = f"{low}" if low == high else f"{low} to {high}"
        print(
            f"rankings not settled for {unsettled.height} of {board.height} model(s): their rank interval is "
            f"the whole field; a settled one needs a bootstrap of at least {MIN_SETTLED_RESAMPLES} resamples "
            f"(--bootstrap; here {board['resamples'][0]}) over at least {MIN_SETTLED_GAMES} rated games per "
            f"model (here {games})"
        )


def rate(args: VerbCall) -> int:
    from pipeline.elimination.config import load_elimination_params
    from pipeline.elimination.importer import run_import
    from pipeline.elimination.schedule import schedule_from_files

    params = load_elimination_params(args.params)
    settings = params.rating
    adaptive = params.schedule.adaptive.enabled
    folders = [Path(args.args.games) / g.game_id for g in schedule_from_files(args.params, args.models)]
    if adaptive and not folders:
        say(
            "error: schedule.adaptive is on and no round has been chosen yet; run `python -m pipeline run "
            "elimination_all` (or `dvc repro elimination`): it chooses the rounds and plays them"
        )
        return 2
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        say(
            f"error: {len(missing)} scheduled game(s) not played yet, e.g. {missing[0]}; run "
            "`snakemake elimination_all` (or `python -m pipeline elimination play ID`) first"
        )
        return 2
    out = Path(args.out)
    # under the adaptive schedule metrics.json also gets the opponent-corrected rate (docs/ratings.md)
    result = run_import(
        folders, out, settings, plots=False, calls_out=out / "calls.parquet", progress=say, opponent_rates=adaptive
    )
    say(
        f"rated {result.leaderboard.height} model(s) over {result.report['games_finished']} game(s); "
        f"wrote {out / 'leaderboard.csv'} and {out / 'metrics.json'}"
    )
    return 0


def report(args: VerbCall) -> int:
    from pipeline.elimination.importer import write_report

    written = write_report(args.out)
    say(f"wrote {len(written)} plot file(s) under {Path(args.out) / 'plots'}")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from pipeline.elimination.config import RatingSettings, load_elimination_params
    from pipeline.elimination.importer import check_import_paths, run_import

    check_import_paths(args.paths)  # a path with no logs stops here, before anything is written
    # without a params file: no bootstrap unless asked (it reruns the rating per resample, which
    # is slow on thousands of logs with the reference TrueSkill)
    settings = load_elimination_params(args.params).rating if args.params else RatingSettings(bootstrap_resamples=0)
    overrides = {
        k: getattr(args, k) for k in ("mu", "sigma", "seed", "aggregate", "ranks") if getattr(args, k) is not None
    }
    settings = RatingSettings.model_validate({**settings.model_dump(), **overrides})
    started = time.perf_counter()
    result = run_import(
        args.paths,
        args.out,
        settings,
        passes=args.passes,
        bootstrap=args.bootstrap,
        plots=not args.no_plots,
        calls_out=args.calls,
        progress=say,
        require_games=True,
    )
    out = Path(args.out)
    say(
        f"rated {result.leaderboard.height} model(s) over {result.report['games_finished']} game(s) "
        f"in {time.perf_counter() - started:.1f}s; wrote {out / 'leaderboard.csv'}"
    )
    if args.json:
        print(json.dumps({"report": result.report, "seconds": result.seconds}, indent=1))
    else:
        _print_board(result.leaderboard, args.show)
    return 0


def extra_commands(bench: BenchmarkCommands) -> None:
    imp = bench.extra(
        "import",
        "read game logs (ours or the original benchmark's), rate, write tables and plots",
        _cmd_import,
        inputs=False,
        writes=False,
    )
    imp.add_argument("paths", nargs="*", metavar="DIR", help="directories (searched recursively for *.jsonl) or files")
    imp.add_argument("--out", required=True, help="output directory (leaderboard.csv, tables/, plots/, ...)")
    imp.add_argument("--passes", type=int, default=None, help="random orders of the games (default 100)")
    imp.add_argument(
        "--bootstrap",
        type=int,
        default=None,
        help="bootstrap resamples over games for mu intervals (default: from --params, else 0)",
    )
    imp.add_argument("--mu", type=float, default=None, help="TrueSkill prior mean (default 4.0)")
    imp.add_argument("--sigma", type=float, default=None, help="TrueSkill prior sigma (default 8.3333)")
    imp.add_argument("--seed", type=int, default=None, help="seed of the pass orders (default 0)")
    imp.add_argument(
        "--aggregate",
        choices=["mean", "median"],
        default=None,
        help="summary of mu and sigma over the passes (default mean)",
    )
    imp.add_argument(
        "--ranks",
        choices=["recorded", "derived"],
        default=None,
        help="recorded: final_results, as the original's leaderboard (default); derived: re-derived",
    )
    imp.add_argument("--params", default=None, help="read the rating settings from this params file")
    imp.add_argument("--calls", default=None, help="also stack the games' calls tables into this parquet")
    imp.add_argument("--no-plots", action="store_true", help="skip the plots (faster on huge corpora)")
    imp.add_argument("--show", type=int, default=20, help="leaderboard rows to print")
    imp.add_argument("--json", action="store_true", help="print the import report and timings as JSON")
    imp.set_defaults(func=_cmd_import)
