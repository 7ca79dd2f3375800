"""What the Snakemake rules need at parse time: map files, play jobs and the stages' settings."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.artifacts import ParamsError
from pipeline.core.run import code_fingerprint
from pipeline.xent.report import rate_outputs, report_outputs
from pipeline.xent.xgl import ParseError

__all__ = ["RESCORE_OUTPUTS", "XentRuleInputs", "rate_outputs", "report_outputs", "xent_rule_inputs"]

RESCORE_OUTPUTS = ("moves.parquet", "rewards.parquet", "token_xents.parquet", "rescore.parquet",
                   "round_status.parquet", "calls.parquet", "rescore_check.json")


@dataclass
class XentRuleInputs:
    maps: dict[str, list[str]] = field(default_factory=dict)  # game -> map files
    jobs: list[str] = field(default_factory=list)  # play record files
    job_maps: dict[str, list[str]] = field(default_factory=dict)  # job id -> its map files
    judges: list[str] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)  # what decides `rate`
    plots_code: str = ""  # what decides `report`


def xent_rule_inputs(params_path: str, models_path: str, root: str = "results/xent") -> XentRuleInputs:
    """The scheduled work; no inputs (with a warning) when the params cannot be read, so other
    benchmarks' targets still parse (xent's own jobs then fail with the full message)."""
    from pipeline.core.models import load_models
    from pipeline.xent.config import load_xent
    from pipeline.xent.schedule import build_schedule

    try:
        params = load_xent(params_path)
        schedule = build_schedule(params, load_models(models_path), source=params_path)
    except (ParamsError, ParseError) as exc:
        print(f"xent: nothing scheduled ({str(exc).splitlines()[0]}); its jobs fail until this is fixed", file=sys.stderr)
        return XentRuleInputs()
    from pipeline.xent.settings import differences_note

    note = differences_note(params, list(schedule.differences), params_path)
    if note:  # the run goes ahead, but says plainly that it is not the map set's
        print(note, file=sys.stderr)
    inputs = XentRuleInputs()
    for game, specs in schedule.maps.items():
        inputs.maps[game] = [str(s.path(f"{root}/maps")) for s in specs]
    for job in schedule.jobs:
        inputs.jobs.append(str(job.path(f"{root}/play")))
        inputs.job_maps[job.job_id] = [str(m.path(f"{root}/maps")) for m in job.maps]
    inputs.judges = [params.judge, *params.rescore_judges]
    inputs.report = {"rating": params.rating.model_dump(mode="json"), "seed": params.seed,
                   "code": code_fingerprint("pipeline.xent", ("report.py", "schemas.py"))}
    inputs.plots_code = code_fingerprint("pipeline.xent", ("plots.py", "schemas.py"))
    return inputs
