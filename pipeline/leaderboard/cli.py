"""Commands of the leaderboard room: `publish`, `diff REV_A [REV_B]`, `compare MODEL_A MODEL_B`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_publish(args: argparse.Namespace) -> int:
    from pipeline.leaderboard.config import load_leaderboard_params
    from pipeline.leaderboard.publish import publish

    params = load_leaderboard_params(args.params)
    if not Path(args.results).is_dir():
        from pipeline.core.params import InputError

        raise InputError(f"publish: --results {args.results} is no directory; name the folder holding "
                         "results/<benchmark>/ (default: results, written by the benchmarks' stages)")
    done = publish(params, Path(args.results), Path(args.out), Path(args.workspace), site=not args.no_site)
    print(f"{done.stamp.short}\n{done.models} models over {len(done.benchmarks)} benchmarks "
          f"({', '.join(done.benchmarks) or 'none'}); {done.pages} pages in {done.seconds:.1f} s", file=sys.stderr)
    if not args.no_site:
        print(Path(args.out, "site", "index.html").resolve())
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    from pipeline.leaderboard.diff import run_diff

    return run_diff(args)


def _cmd_compare(args: argparse.Namespace) -> int:
    from pipeline.leaderboard.compare import run_compare

    return run_compare(args)


def register(commands: argparse._SubParsersAction) -> None:
    publish = commands.add_parser(
        "publish", help="combine the benchmarks into results/leaderboard/ (JSON, Markdown, static site)")
    publish.add_argument("--params", default="params/leaderboard.yaml")
    publish.add_argument("--results", default="results", help="folder holding results/<benchmark>/")
    publish.add_argument("--out", default="results/leaderboard")
    publish.add_argument("--workspace", default=".", help="git workspace whose commit stamps the output")
    publish.add_argument("--no-site", action="store_true", help="write only leaderboard.json/.md and version.json")
    publish.set_defaults(func=_cmd_publish)

    diff = commands.add_parser(
        "diff", help="compare two leaderboard versions (git revisions) model by model")
    diff.add_argument("rev_a", metavar="REV_A", help="git revision of the old leaderboard")
    diff.add_argument("rev_b", metavar="REV_B", nargs="?", default=None,
                      help="git revision of the new leaderboard (default: the files in the workspace)")
    diff.add_argument("--path", default="results/leaderboard",
                      help="the leaderboard folder, relative to the repository root")
    diff.add_argument("--repo", default=".", help="a folder inside the git repository")
    diff.add_argument("--json", action="store_true", help="print the comparison as JSON instead of Markdown")
    diff.add_argument("--html", metavar="PATH", help="also write the comparison as an HTML page")
    diff.set_defaults(func=_cmd_diff)

    compare = commands.add_parser(
        "compare", help="compare two roster entries across every benchmark")
    compare.add_argument("model_a", metavar="MODEL_A")
    compare.add_argument("model_b", metavar="MODEL_B")
    compare.add_argument("--params", default="params/leaderboard.yaml")
    compare.add_argument("--results", default="results")
    compare.add_argument("--html", metavar="PATH", help="also write the comparison as an HTML page")
    compare.set_defaults(func=_cmd_compare)
