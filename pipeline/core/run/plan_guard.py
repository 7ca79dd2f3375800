"""Making the plan, saving it, guarding a run with it, and comparing it with the spend after."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.io import write_json_atomic
from pipeline.core.models.roster import load_models
from pipeline.core.run.plan import (
    Plan,
    PlannedJob,
    compare,
    dry_run,
    jobs_of_dag,
    load_plan_json,
    make_plan,
    render_compare,
    render_plan,
    save_plan,
    save_unfinished,
    what_to_cut,
)
from pipeline.core.run.plan_estimators import PlanContext, estimate_jobs
from pipeline.core.run.workflow import DEFAULT_PARAMS, check_chosen_params_dir, params_config

DEFAULT_OUT = "results/plan"


class PlanOverBudget(RuntimeError):
    """The plan of a run costs more than the budget has left: nothing was started."""


def plan_jobs(
    jobs: Sequence[PlannedJob],
    targets: Sequence[str],
    *,
    root: str | Path = ".",
    models_path: str | None = None,
    params_dir: str = DEFAULT_PARAMS,
) -> Plan:
    """The plan of `jobs`, estimated from the params of `params_dir` (the roster: its models.yaml,
    unless `models_path` names another); a new job says what changed since its benchmark last ran
    (pipeline.core.run.replays)."""
    from pipeline.core.run.replays import explain_new_jobs

    models_path = models_path or f"{params_dir}/models.yaml"
    models = load_models(Path(root) / models_path)
    context = PlanContext(Path(root), models, models_path, params_dir=params_dir)
    estimates = explain_new_jobs(estimate_jobs(jobs, context), root=root, params_dir=params_dir)
    return make_plan(targets, estimates, models, root=root)


def plan_targets(
    targets: Sequence[str],
    *,
    root: str | Path = ".",
    models_path: str | None = None,
    params_dir: str = DEFAULT_PARAMS,
    notes: list[str] | None = None,
    snakefile: str = "Snakefile",
) -> Plan:
    """Snakemake's dry run of `targets` with the params of `params_dir`, planned. `notes` receives
    the benchmarks' messages about params they cannot schedule (their targets then plan nothing).
    `snakefile`: the workflow, when `root` is a work directory without one (`plan --workdir`)."""
    check_chosen_params_dir(params_dir, root, targets=targets)  # a bad params file stops here, named
    if notes is not None:
        notes.extend(schedule_notes(targets, params_dir, root))
    jobs = dry_run(targets, root=root, snakefile=snakefile, config=params_config(params_dir))
    plan = plan_jobs(jobs, targets, root=root, models_path=models_path, params_dir=params_dir)
    return with_adaptive(plan, targets, root=root, models_path=models_path, params_dir=params_dir)


def with_adaptive(
    plan: Plan,
    targets: Sequence[str],
    *,
    root: str | Path = ".",
    models_path: str | None = None,
    params_dir: str = DEFAULT_PARAMS,
) -> Plan:
    """`plan` with the outlook of every adaptive benchmark of the targets (core.run.adaptive_plan):
    Snakemake's dry run sees only the round already written, the outlook the rounds still to come."""
    import dataclasses

    from pipeline.core.run.adaptive_plan import adaptive_outlooks

    models_path = models_path or f"{params_dir}/models.yaml"
    models = load_models(Path(root) / models_path)
    found = adaptive_outlooks(targets, models, root=Path(root), params_dir=params_dir, models_path=models_path)
    return dataclasses.replace(plan, adaptive=tuple(found)) if found else plan


def schedule_notes(targets: Sequence[str], params_dir: str = DEFAULT_PARAMS, root: str | Path = ".") -> list[str]:
    """What the benchmarks these targets need say about their params before a run (their
    declarations' `schedule_notes`), e.g. Xent's "nothing scheduled" before its map set exists."""
    from pipeline.core.run.registry import benchmarks
    from pipeline.core.run.workflow import benchmarks_of

    declared = {bench.name: bench for bench in benchmarks()}
    notes: list[str] = []
    for name in benchmarks_of(targets, list(declared)):
        hook = declared[name].schedule_notes
        if hook is not None:
            notes.extend(
                hook(str(Path(root) / params_dir / f"{name}.yaml"), str(Path(root) / params_dir / "models.yaml"))
            )
    return notes


def before_run(workflow: Any, out: str = DEFAULT_OUT, params_dir: str = DEFAULT_PARAMS) -> None:
    """Snakemake's onstart: announce the scheduled games to the progress line, plan the jobs this run
    will do; stop before any call when over budget."""
    from pipeline.core.artifacts.progress import write_announced

    write_announced()
    targets = sorted(workflow.dag_settings.targets or [])
    for note in schedule_notes(targets, params_dir):
        print(f"warning: {note}", file=sys.stderr)
    try:
        plan = plan_jobs(jobs_of_dag(workflow.dag), targets, params_dir=params_dir)
    except Exception as exc:  # noqa: BLE001 - no plan is no reason to stop: the gateway's guard stands
        print(
            f"run plan: not made ({type(exc).__name__}: {exc}); the spend ledger's guard still applies", file=sys.stderr
        )
        return
    save_plan(plan, out)
    print(render_plan(plan), file=sys.stderr)
    if plan.exceeds_budget():
        raise PlanOverBudget(what_to_cut(plan))


def after_run(out: str = DEFAULT_OUT, *, workflow: Any = None, params_dir: str = DEFAULT_PARAMS) -> str | None:
    """Snakemake's onsuccess (`workflow` given): record what the run's benchmarks ran with (for the next
    plan's "new job: what changed", pipeline.core.run.replays), then the plan against what the run
    spent (calls, tokens, cost)."""
    if workflow is not None:
        from pipeline.core.run.replays import record_run

        record_run(sorted(workflow.dag_settings.targets or []), params_dir=params_dir, out=out)
    try:
        saved = load_plan_json(out)
    except Exception:  # noqa: BLE001 - a run without a plan has nothing to compare
        return None
    table = compare(saved)
    write_json_atomic(Path(out) / "compare.json", {"plan_created": saved["created"], "rows": table.to_dicts()})
    if saved.get("cache_dir"):  # the jobs this run finished settled their journals: what is left, now
        import polars as pl

        from pipeline.core.models.journal import unfinished_calls

        others = saved.get("not_planned", {}).get("job_names", [])  # not this run's: kept out, as in the plan
        left = unfinished_calls(saved["cache_dir"])
        save_unfinished(left.filter(~pl.col("job").is_in(others)) if others else left, out)
    text = render_compare(table)
    print(f"run plan against spend:\n{text}", file=sys.stderr)
    return text
