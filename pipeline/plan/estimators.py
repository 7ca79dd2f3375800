"""Which model requests each planned job makes: one estimator per rule, the rest generic.

An estimator reads the benchmark's own schedule (never a copy of it) and runs the job's own
request code through the probe gateway where the job's inputs already exist. A rule without
an estimator calls no model unless its room is listed in ROOMS_WITH_MODELS (and it is no
aggregate); such a job is shown with its reason and an unknown count, never a made-up one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.core.plan import NO_MODEL, CallEstimate, PlannedJob
from pipeline.core.registry import names as benchmark_names
from pipeline.core.roster import ModelsParams


@dataclass
class PlanContext:
    """What estimators share: the project root, the roster, and each room's loaded params."""

    root: Path
    models: ModelsParams
    models_path: str = "params/models.yaml"
    loaded: dict[str, Any] = field(default_factory=dict)  # per room, loaded once

    def path(self, relative: str) -> Path:
        return self.root / relative


Estimator = Callable[[PlannedJob, PlanContext], list[CallEstimate]]

# rooms whose game jobs call models but whose rules have no estimator yet
ROOMS_WITH_MODELS = ("xent", "elimination", "whoisspy")
# rules that combine finished games (no model requests)
AGGREGATES = ("_all", "_rate", "_ratings", "_report", "_rescore")


def _registry() -> dict[str, Estimator]:
    from pipeline.plan import games, roster, skate

    return {**roster.ESTIMATORS, **skate.ESTIMATORS, **games.ESTIMATORS}


def benchmark_of(rule: str, rooms: Iterable[str]) -> str:
    for room in sorted(rooms, key=len, reverse=True):
        if rule == room or rule.startswith(room + "_"):
            return room
    return rule


def estimate_jobs(jobs: Iterable[PlannedJob], context: PlanContext) -> list[tuple[str, PlannedJob, CallEstimate]]:
    registry = _registry()
    # the registered benchmarks (pipeline.core.registry) plus the stages around them
    rooms = [*benchmark_names(), "roster", "leaderboard"]
    found = []
    for job in jobs:
        benchmark = benchmark_of(job.rule, rooms)
        estimator = registry.get(job.rule)
        if estimator is not None:
            estimates = estimator(job, context)
        elif benchmark in ROOMS_WITH_MODELS and not job.rule.endswith(AGGREGATES):
            estimates = [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0, f"{job.rule}: calls not estimated yet")]
        else:
            estimates = [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0)]
        found += [(benchmark, job, e) for e in estimates]
    return found
