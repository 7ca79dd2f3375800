"""Xent's requests for the run plan (`python -m pipeline plan`): a play job's player (and
opponent) over its maps, counted from earlier jobs of the same model. The judge runs locally."""

from __future__ import annotations

from typing import Any

from pipeline.core.estimates import PlanContext, seat_estimates
from pipeline.core.plan import CallEstimate, PlannedJob


def estimate_play(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.xent.config import load_xent
    from pipeline.xent.schedule import build_schedule

    def load() -> Any:
        return build_schedule(load_xent(context.path("params/xent.yaml")), context.models, source="params/xent.yaml")

    play = context.once("xent", load).job(job.wildcards["game"], job.wildcards["job_id"])
    seats = [play.player] + ([play.opponent] if play.opponent else [])
    return seat_estimates(context, "xent", f"xent/{play.game}", seats, None, "")


ESTIMATORS = {"xent_play": estimate_play}
