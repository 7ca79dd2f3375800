"""What Xent's rules need at parse time: map files, play jobs and the stages' settings (its own
rules file), and what its standard rules wait for and are decided by (its declaration's `rules`:
`scheduled`).

With `schedule.adaptive` on, the play jobs are those of the adaptive rounds written so far
(pipeline.xent.schedule.build_schedule reads results/xent/rounds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.core.artifacts import ParamsError
from pipeline.core.run.declaration import ScheduleCall, Scheduled
from pipeline.core.run.shards import plan_shards
from pipeline.xent.outputs import written
from pipeline.xent.xgl import ParseError

if TYPE_CHECKING:
    from pipeline.core.models import ModelsParams
    from pipeline.xent.config import XentParams
    from pipeline.xent.schedule import Schedule

__all__ = ["PLOT_MODULES", "RATE_MODULES", "XentRuleInputs", "schedule_notes", "scheduled", "xent_rule_inputs"]

#: the modules whose code decides `rate`, and `report`: a change reruns it
RATE_MODULES = ("report.py", "schemas.py")
PLOT_MODULES = ("plots.py", "schemas.py")


@dataclass
class XentRuleInputs:
    maps: dict[str, list[str]] = field(default_factory=dict)  # game -> map files
    jobs: list[str] = field(default_factory=list)  # play record files
    job_maps: dict[str, list[str]] = field(default_factory=dict)  # job id -> its map files
    # the play jobs as Snakemake runs them: shards of jobs (shard id -> job ids; every job computes
    # with the embedded judge, so they all may share one), or with shards off one job each
    shards: dict[str, list[str]] = field(default_factory=dict)
    shard_maps: dict[str, list[str]] = field(default_factory=dict)  # shard id -> its jobs' map files
    played: list[str] = field(default_factory=list)  # what `rescore` waits for: shard markers or records
    judges: list[str] = field(default_factory=list)
    rate_settings: dict[str, Any] = field(default_factory=dict)  # what decides `rate` beyond its inputs


def _scheduled(
    params_path: str, models_path: str
) -> tuple[XentParams, Schedule, ModelsParams] | ParamsError | ParseError:
    """The params, their schedule and the roster, or why they cannot be scheduled (no map set imported yet)."""
    from pipeline.core.models import load_models
    from pipeline.xent.config import load_xent
    from pipeline.xent.schedule import build_schedule

    try:
        params = load_xent(params_path)
        models = load_models(models_path)
        return params, build_schedule(params, models, source=params_path), models
    except (ParamsError, ParseError) as exc:
        return exc


def xent_rule_inputs(params_path: str, models_path: str, root: str = "results/xent") -> XentRuleInputs:
    """The scheduled work; no inputs when the params cannot be scheduled (no map set imported yet),
    so every other benchmark plans and runs as usual and xent's own jobs fail with the full message;
    `schedule_notes` says so before a run. Parsing prints nothing."""
    scheduled = _scheduled(params_path, models_path)
    if isinstance(scheduled, Exception):
        return XentRuleInputs()
    params, schedule, models = scheduled
    inputs = XentRuleInputs()
    for game, specs in schedule.maps.items():
        inputs.maps[game] = [str(s.path(f"{root}/maps")) for s in specs]
    for job in schedule.jobs:
        inputs.jobs.append(str(job.path(f"{root}/play")))
        inputs.job_maps[job.job_id] = [str(m.path(f"{root}/maps")) for m in job.maps]
    per_shard = models.parallel.games_per_job
    if per_shard:  # one process loads the judge (and the embedded model) once for many jobs
        inputs.shards = plan_shards([job.job_id for job in schedule.jobs], per_shard)
        for shard_id, job_ids in inputs.shards.items():
            inputs.shard_maps[shard_id] = sorted({m for job_id in job_ids for m in inputs.job_maps[job_id]})
        inputs.played = [f"{root}/shards/{shard_id}.json" for shard_id in sorted(inputs.shards)]
    else:  # shards off: every job its own Snakemake output, as before shards
        inputs.played = list(inputs.jobs)
    inputs.judges = [params.judge, *params.rescore_judges]
    inputs.rate_settings = {
        "rating": params.rating.model_dump(mode="json"),
        "seed": params.seed,
        # the adaptive schedule adds the opponent rates to metrics.json; a fixed run's settings stay as they were
        **({"adaptive": True} if params.schedule.adaptive.enabled else {}),
    }
    return inputs


def scheduled(call: ScheduleCall) -> Scheduled[XentRuleInputs]:
    """The work as Xent's rules play it (the state its rules file reads: `XentRuleInputs`), and for
    the standard rules: the play jobs rate and rounds wait for, what decides rate, and rescore's
    files, which `xent_all` builds too. Params that cannot be scheduled (no map set imported yet)
    schedule nothing and stop nothing: xent's jobs fail with the full message, `schedule_notes`
    says so before a run."""
    inputs = xent_rule_inputs(call.params, call.models, call.results)
    final = tuple(written("rescore", call.results))
    return Scheduled(played=tuple(inputs.played), rate_settings=inputs.rate_settings, final=final, state=inputs)


def schedule_notes(params_path: str, models_path: str) -> list[str]:
    """What `plan` and a run's start say about these params: that nothing is scheduled and why (the
    map set is not imported yet), or how the run differs from the map set it plays."""
    from pipeline.xent.settings import differences_note

    scheduled = _scheduled(params_path, models_path)
    if isinstance(scheduled, Exception):
        return [f"xent: nothing scheduled ({str(scheduled).splitlines()[0]}); its jobs fail until this is fixed"]
    params, schedule, _ = scheduled
    note = differences_note(params, list(schedule.differences), params_path)
    return [note] if note else []
