"""The roster check's requests: one per language-model entry, counted by its own code.

An entry that says nothing about reasoning and that nothing shows to reason yet may reply like a
reasoning model: the check then asks it again with a reasoning allowance (pipeline.roster.check), so
its bound is two requests, the second at the larger cap; one is expected.
"""

from __future__ import annotations

import asyncio

from pipeline.core.models import ProbeGateway, is_reasoning_model
from pipeline.core.models.reasoning_seen import undeclared
from pipeline.core.models.reply_budgets import DEFAULT_REASONING_TOKENS
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
            prompt, reply = sum(r.prompt_tokens for r in paid), sum(r.max_tokens for r in paid)
            again = len(paid) if undeclared(entry) and not is_reasoning_model(entry) else 0
            estimates.append(
                CallEstimate(
                    entry.name,
                    JOB,
                    len(sent) + again,
                    len(sent) - len(paid),
                    prompt * (1 + bool(again)),
                    reply + again * (context.models.check.max_tokens + DEFAULT_REASONING_TOKENS[None]),
                    batchable=True,
                    expected_calls=len(sent),
                    expected_prompt_tokens=prompt,
                    expected_reply_tokens=reply,
                )
            )
    return estimates


ESTIMATORS = {"roster_check": estimate_check}
