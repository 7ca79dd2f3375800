"""Run: how benchmarks become a workflow. The registry of benchmark declarations (`registry`), the
shared command-line verbs (`verbs`), what the Snakefile sets up (`workflow`), many games per job
(`shards`), Snakemake launched safely (`launch`), and the run plan: jobs and their cost before a run
(`plan`, `estimates`, `plan_estimators`, `plan_guard`, `plan_cli`; `replays`: what changed for a new job),
a game benchmark's contract (`contract`) and the skeleton the core generates from it (`skeleton`).

The names below are the public API, imported on first use (SPEC 1 lazy loading): importing
the package costs nothing until a name is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core import lazy_exports

if TYPE_CHECKING:
    from pipeline.core.run.estimates import PlanContext, PlannedMove, SeatPlan, seat_estimates, shard_estimates, summed
    from pipeline.core.run.plan import NO_MODEL, CallEstimate, PlannedJob
    from pipeline.core.run.registry import Benchmark, benchmark, benchmarks, names
    from pipeline.core.run.shards import ShardGame, game_done, jobs_for_games, plan_shards, run_shard
    from pipeline.core.run.skeleton import GameSkeleton
    from pipeline.core.run.verbs import BenchmarkCommands, job_ids, say
    from pipeline.core.run.workflow import code_fingerprint, setting_items

_EXPORTS = {
    "PlanContext": "estimates",
    "PlannedMove": "estimates",
    "SeatPlan": "estimates",
    "seat_estimates": "estimates",
    "shard_estimates": "estimates",
    "summed": "estimates",
    "NO_MODEL": "plan",
    "CallEstimate": "plan",
    "PlannedJob": "plan",
    "Benchmark": "registry",
    "benchmark": "registry",
    "benchmarks": "registry",
    "names": "registry",
    "GameSkeleton": "skeleton",
    "ShardGame": "shards",
    "game_done": "shards",
    "jobs_for_games": "shards",
    "plan_shards": "shards",
    "run_shard": "shards",
    "BenchmarkCommands": "verbs",
    "job_ids": "verbs",
    "say": "verbs",
    "code_fingerprint": "workflow",
    "setting_items": "workflow",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "Benchmark",
    "BenchmarkCommands",
    "CallEstimate",
    "GameSkeleton",
    "NO_MODEL",
    "PlanContext",
    "PlannedJob",
    "PlannedMove",
    "SeatPlan",
    "ShardGame",
    "benchmark",
    "benchmarks",
    "code_fingerprint",
    "game_done",
    "job_ids",
    "jobs_for_games",
    "plan_shards",
    "names",
    "run_shard",
    "say",
    "seat_estimates",
    "setting_items",
    "shard_estimates",
    "summed",
]
