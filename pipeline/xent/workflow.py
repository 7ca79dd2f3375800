"""What the Snakemake rules need at parse time: map files, play jobs and the stages' settings.

With `schedule.adaptive` on, the play jobs are those of the adaptive rounds written so far
(pipeline.xent.schedule.build_schedule reads results/xent/rounds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.core.artifacts import ParamsError
from pipeline.core.run import code_fingerprint
from pipeline.xent.xgl import ParseError

if TYPE_CHECKING:
    from pipeline.xent.config import XentParams
    from pipeline.xent.schedule import Schedule

__all__ = ["XentRuleInputs", "schedule_notes", "xent_rule_inputs"]


@dataclass
class XentRuleInputs:
    maps: dict[str, list[str]] = field(default_factory=dict)  # game -> map files
    jobs: list[str] = field(default_factory=list)  # play record files
    job_maps: dict[str, list[str]] = field(default_factory=dict)  # job id -> its map files
    judges: list[str] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)  # what decides `rate`
    plots_code: str = ""  # what decides `report`


def _scheduled(params_path: str, models_path: str) -> tuple[XentParams, Schedule] | ParamsError | ParseError:
    """The params and their schedule, or why they cannot be scheduled (no map set imported yet)."""
    from pipeline.core.models import load_models
    from pipeline.xent.config import load_xent
    from pipeline.xent.schedule import build_schedule

    try:
        params = load_xent(params_path)
        return params, build_schedule(params, load_models(models_path), source=params_path)
    except (ParamsError, ParseError) as exc:
        return exc


def xent_rule_inputs(params_path: str, models_path: str, root: str = "results/xent") -> XentRuleInputs:
    """The scheduled work; no inputs when the params cannot be scheduled (no map set imported yet),
    so every other benchmark plans and runs as usual and xent's own jobs fail with the full message;
    `schedule_notes` says so before a run. Parsing prints nothing."""
    scheduled = _scheduled(params_path, models_path)
    if isinstance(scheduled, Exception):
        return XentRuleInputs()
    params, schedule = scheduled
    inputs = XentRuleInputs()
    for game, specs in schedule.maps.items():
        inputs.maps[game] = [str(s.path(f"{root}/maps")) for s in specs]
    for job in schedule.jobs:
        inputs.jobs.append(str(job.path(f"{root}/play")))
        inputs.job_maps[job.job_id] = [str(m.path(f"{root}/maps")) for m in job.maps]
    inputs.judges = [params.judge, *params.rescore_judges]
    inputs.report = {
        "rating": params.rating.model_dump(mode="json"),
        "seed": params.seed,
        "code": code_fingerprint("pipeline.xent", ("report.py", "schemas.py")),
        # the adaptive schedule adds the opponent rates to metrics.json; a fixed run's settings stay as they were
        **({"adaptive": True} if params.schedule.adaptive.enabled else {}),
    }
    inputs.plots_code = code_fingerprint("pipeline.xent", ("plots.py", "schemas.py"))
    return inputs


def schedule_notes(params_path: str, models_path: str) -> list[str]:
    """What `plan` and a run's start say about these params: that nothing is scheduled and why (the
    map set is not imported yet), or how the run differs from the map set it plays."""
    from pipeline.xent.settings import differences_note

    scheduled = _scheduled(params_path, models_path)
    if isinstance(scheduled, Exception):
        return [f"xent: nothing scheduled ({str(scheduled).splitlines()[0]}); its jobs fail until this is fixed"]
    params, schedule = scheduled
    note = differences_note(params, list(schedule.differences), params_path)
    return [note] if note else []
