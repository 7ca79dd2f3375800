"""`python -m pipeline plan [TARGET ...]`: what a run would do and cost, before it runs.

`--workdir DIR` plans this project's Snakefile run in DIR (as `python -m pipeline run --workdir DIR`):
`--params`, `--models` and `--out` are then relative to DIR. In a directory without a Snakefile that
holds params/ (a work directory), it is the default."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path


def _cmd_plan(args: argparse.Namespace) -> int:
    from pipeline.core.models.reasoning_seen import SNAPSHOT_ENV
    from pipeline.core.run.launch import NoWorkflow, here_without_snakefile, workflow_snakefile
    from pipeline.core.run.plan import PlanError

    # the plan reads the reasoning sightings from the cache, as its dry run's parse does (never the view
    # an outer run froze into the environment)
    os.environ.pop(SNAPSHOT_ENV, None)

    workdir = args.workdir or here_without_snakefile()
    try:
        if workdir is None:
            return _plan(args)
        if not Path(workdir).is_dir():
            print(
                f"error: work directory {workdir} does not exist; create it with a params/ folder "
                "(a copy of the project's params/*.yaml), or name an existing one",
                file=sys.stderr,
            )
            return 2
        snakefile = str(workflow_snakefile())
        with contextlib.chdir(workdir):  # the plan's paths and the dry run are the work directory's
            return _plan(args, snakefile)
    except (PlanError, NoWorkflow) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _plan(args: argparse.Namespace, snakefile: str | None = None) -> int:
    from pipeline.core.run.plan import load_plan_json, render_plan, save_plan, what_to_cut
    from pipeline.core.run.plan_guard import after_run, plan_targets
    from pipeline.core.run.workflow import params_dir

    if args.compare:
        load_plan_json(args.out)  # a clear error when there is no plan
        return 0 if after_run(args.out) is not None else 2
    notes: list[str] = []
    plan = plan_targets(
        args.targets,
        models_path=args.models,
        params_dir=params_dir(args.params),
        notes=notes,
        snakefile=snakefile or "Snakefile",
    )
    for note in notes:  # a benchmark that scheduled nothing: its jobs are missing from the plan, say why
        print(f"warning: {note}", file=sys.stderr)
    save_plan(plan, args.out)
    if args.json:
        print(json.dumps(plan.to_json(), indent=1))
    else:
        print(render_plan(plan))
    if plan.exceeds_budget():
        print(f"error: {what_to_cut(plan)}", file=sys.stderr)
        return 3
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    plan = commands.add_parser(
        "plan", help="jobs a run would do and why, its model calls, cache hits, tokens and cost, before it runs"
    )
    plan.add_argument("targets", nargs="*", metavar="TARGET", help="Snakemake targets, e.g. skate_all (default: all)")
    plan.add_argument(
        "--params",
        metavar="DIR",
        default=None,
        help="plan with every params file from DIR instead of params/ (e.g. params/paper); "
        "default: $PIPELINE_PARAMS, else params. Snakemake gets --config params=DIR",
    )
    plan.add_argument(
        "--workdir",
        metavar="DIR",
        default=None,
        help="plan this project's Snakefile run with DIR as the working directory (as `run "
        "--workdir`); --params, --models and --out are relative to DIR",
    )
    plan.add_argument(
        "--models", default=None, help="the roster the estimators price (default: DIR/models.yaml of --params)"
    )
    plan.add_argument("--out", default="results/plan", help="where plan.json (and compare.json) are written")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--compare", action="store_true", help="compare the saved plan with what was spent since")
    plan.set_defaults(func=_cmd_plan)
