"""Which model requests each planned job makes: the benchmarks' own estimators, the rest generic.

Each benchmark names its estimators in its registry entry (`Benchmark.estimators`, see
pipeline/core/run/estimates.py). A rule without an estimator calls no model unless its benchmark plays
models and the rule is no aggregate; such a job is shown with its reason and an unknown count,
never a made-up one.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from pipeline.core.run.estimates import Estimator, PlanContext
from pipeline.core.run.plan import NO_MODEL, CallEstimate, PlannedJob
from pipeline.core.run.registry import benchmarks

__all__ = ["PlanContext", "benchmark_of", "estimate_jobs"]

# rules that combine finished games or write the adaptive rounds' ledgers (no model requests)
AGGREGATES = ("_all", "_rate", "_report", "_rescore", "_rounds")


# stages that are not benchmarks but call models, by module name (core imports no stage):
# each defines ESTIMATORS = {rule: estimator}, like a benchmark's `estimators` module
STAGE_ESTIMATORS = ("pipeline.roster.estimators",)


def _registry() -> dict[str, Estimator]:
    table: dict[str, Estimator] = {}
    for module in STAGE_ESTIMATORS:
        table.update(importlib.import_module(module).ESTIMATORS)
    for bench in benchmarks():
        table.update(bench.load_estimators())
    return table


def benchmark_of(rule: str, benches: Iterable[str]) -> str:
    for name in sorted(benches, key=len, reverse=True):
        if rule == name or rule.startswith(name + "_"):
            return name
    return rule


def estimate_jobs(jobs: Iterable[PlannedJob], context: PlanContext) -> list[tuple[str, PlannedJob, CallEstimate]]:
    registry = _registry()
    # the registered benchmarks (pipeline.core.run.registry) plus the stages around them
    with_models = {b.name for b in benchmarks() if b.plays_models}
    benches = [*(b.name for b in benchmarks()), "roster", "leaderboard"]
    found = []
    for job in jobs:
        benchmark = benchmark_of(job.rule, benches)
        # a key ending in `*` names every rule it begins (rules made per game, e.g. xent_maps_<game>)
        estimator = registry.get(job.rule) or next(
            (e for key, e in registry.items() if key.endswith("*") and job.rule.startswith(key[:-1])), None
        )
        if estimator is not None:
            estimates = estimator(job, context)
        elif benchmark in with_models and not job.rule.endswith(AGGREGATES):
            estimates = [
                CallEstimate(
                    NO_MODEL, job.rule, 0, 0, 0, 0, f"{job.rule}: calls not estimated (no bound)", unbounded=True
                )
            ]
        else:
            estimates = [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0)]
        found += [(benchmark, job, e) for e in estimates]
    return found
