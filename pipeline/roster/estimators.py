"""The roster check's requests: one per language-model entry, counted by its own code."""

from __future__ import annotations

import asyncio

from pipeline.core.models import ProbeGateway
from pipeline.core.run import CallEstimate, PlanContext, PlannedJob
from pipeline.roster.check import JOB, check_roster


def estimate_check(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    probe = ProbeGateway(context.models, root=str(context.root))
    asyncio.run(check_roster(context.models, probe))
    estimates = []
    for entry in context.models.roster:
        sent = [r for r in probe.requests if r.roster_name == entry.name]
        if sent:
            paid = [r for r in sent if not r.cached]
            estimates.append(
                CallEstimate(
                    entry.name,
                    JOB,
                    len(sent),
                    len(sent) - len(paid),
                    sum(r.prompt_tokens for r in paid),
                    sum(r.max_tokens for r in paid),
                    batchable=True,
                )
            )
    return estimates


ESTIMATORS = {"roster_check": estimate_check}
