"""The bodies of `python -m pipeline elimination rate | report`, which benchmark.py declares
(core/run/verbs.py builds their command lines; `schedule` and `play` come from the game contract,
core/run/skeleton.py), and the Elimination Game's own `import`."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pipeline.core.run.verbs import BenchmarkCommands, VerbCall, say


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
    from pipeline.elimination.importer import run_import
    from pipeline.elimination.workflow import SKELETON

    params, folders = SKELETON.played_games(args, args.args.games)
    out = Path(args.out)
    # under the adaptive schedule metrics.json also gets the opponent-corrected rate (docs/ratings.md)
    result = run_import(
        folders,
        out,
        params.rating,
        plots=False,
        calls_out=out / "calls.parquet",
        progress=say,
        opponent_rates=params.schedule.adaptive.enabled,
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
