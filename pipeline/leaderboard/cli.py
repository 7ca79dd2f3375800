"""Commands of the leaderboard benchmark: `leaderboard` (build), `publish` (a version: commit, tag, push),
`site TAG`, `diff REV_A [REV_B]`, `compare MODEL_A MODEL_B`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_build(args: argparse.Namespace) -> int:
    from pipeline.leaderboard.build import build_leaderboard
    from pipeline.leaderboard.config import load_leaderboard_params

    params = load_leaderboard_params(args.params)
    if not Path(args.results).is_dir():
        from pipeline.core.artifacts import InputError

        raise InputError(
            f"leaderboard: --results {args.results} is no directory; name the folder holding "
            "results/<benchmark>/ (default: results, written by the benchmarks' stages)"
        )
    done = build_leaderboard(
        params,
        Path(args.results),
        Path(args.out),
        Path(args.workspace),
        site=not args.no_site,
        models=Path(args.models),
    )
    print(
        f"{done.stamp.short}\n{done.models} models over {len(done.benchmarks)} benchmarks "
        f"({', '.join(done.benchmarks) or 'none'}); {done.pages} pages in {done.seconds:.1f} s",
        file=sys.stderr,
    )
    if not args.no_site:
        print(Path(args.out, "site", "index.html").resolve())
    return 0


def _cmd_publish(args: argparse.Namespace) -> int:
    from pipeline.leaderboard.release import PublishOptions, print_published, publish_version
    from pipeline.leaderboard.vcs import PublishError

    options = PublishOptions(
        params=Path(args.params),
        workspace=Path(args.workspace),
        bump=args.bump,
        remote=args.remote,
        push=not args.no_push,
        git_push=args.git_push,
        share_cache=args.share_cache,
        dataset=args.dataset,
    )
    try:
        done = publish_version(options)
    except PublishError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_published(done, args.git_push)
    return 0


def _cmd_site(args: argparse.Namespace) -> int:
    from pipeline.leaderboard.archive import fetch_site
    from pipeline.leaderboard.vcs import PublishError

    try:
        index = fetch_site(args.tag, Path(args.workspace), Path(args.out) if args.out else None)
    except PublishError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(index)
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    from pipeline.leaderboard.diff import run_diff

    return run_diff(args)


def _cmd_compare(args: argparse.Namespace) -> int:
    from pipeline.leaderboard.compare import run_compare

    return run_compare(args)


def register(commands: argparse._SubParsersAction) -> None:
    build = commands.add_parser(
        "leaderboard", help="combine the benchmarks into results/leaderboard/ (JSON, Markdown, static site)"
    )
    build.add_argument("--params", default="params/leaderboard.yaml")
    build.add_argument("--results", default="results", help="folder holding results/<benchmark>/")
    build.add_argument(
        "--models", default="params/models.yaml", help="the roster: which entries are bots, the graded bots' skills"
    )
    build.add_argument("--out", default="results/leaderboard")
    build.add_argument("--workspace", default=".", help="git workspace whose commit stamps the output")
    build.add_argument("--no-site", action="store_true", help="write only leaderboard.json/.md and version.json")
    build.set_defaults(func=_cmd_build)

    publish = commands.add_parser(
        "publish",
        help="publish a leaderboard version: build, release notes, commit, tag leaderboard-vX.Y, "
        "push the DVC-tracked artifacts",
    )
    publish.add_argument("--params", default="params/leaderboard.yaml", help="the leaderboard params (its version)")
    publish.add_argument(
        "--bump",
        choices=["minor", "major"],
        help="raise the version in the params file first (minor: games or models added; "
        "major: rules, prompts or scoring changed)",
    )
    publish.add_argument("--remote", help="DVC remote to push to (default: the default remote)")
    publish.add_argument("--no-push", action="store_true", help="commit and tag only; push nothing to DVC")
    publish.add_argument("--git-push", action="store_true", help="also push the commit and tag to git's origin")
    publish.add_argument(
        "--share-cache",
        action="store_true",
        help="also track and push the response cache (every prompt and reply) so collaborators "
        "re-derive games without calls",
    )
    publish.add_argument(
        "--dataset",
        action="store_true",
        help="also export every game as a Parquet dataset with its card into the site (site/dataset; "
        "python -m pipeline export)",
    )
    publish.add_argument("--workspace", default=".", help="a folder inside the git and DVC project")
    publish.set_defaults(func=_cmd_publish)

    site = commands.add_parser("site", help="fetch an earlier published version's site from its tag")
    site.add_argument("tag", metavar="TAG", help="a published tag, e.g. leaderboard-v1.2")
    site.add_argument("--out", help="folder to write it to (default .cache/sites/TAG)")
    site.add_argument("--workspace", default=".", help="a folder inside the git and DVC project")
    site.set_defaults(func=_cmd_site)

    diff = commands.add_parser("diff", help="compare two leaderboard versions (git revisions) model by model")
    diff.add_argument("rev_a", metavar="REV_A", help="git revision of the old leaderboard")
    diff.add_argument(
        "rev_b",
        metavar="REV_B",
        nargs="?",
        default=None,
        help="git revision of the new leaderboard (default: the files in the workspace)",
    )
    diff.add_argument(
        "--path", default="results/leaderboard", help="the leaderboard folder, relative to the repository root"
    )
    diff.add_argument("--repo", default=".", help="a folder inside the git repository")
    diff.add_argument("--json", action="store_true", help="print the comparison as JSON instead of Markdown")
    diff.add_argument("--html", metavar="PATH", help="also write the comparison as an HTML page")
    diff.set_defaults(func=_cmd_diff)

    compare = commands.add_parser("compare", help="compare two roster entries across every benchmark")
    compare.add_argument("model_a", metavar="MODEL_A")
    compare.add_argument("model_b", metavar="MODEL_B")
    compare.add_argument("--params", default="params/leaderboard.yaml")
    compare.add_argument("--results", default="results")
    compare.add_argument("--html", metavar="PATH", help="also write the comparison as an HTML page")
    compare.set_defaults(func=_cmd_compare)
