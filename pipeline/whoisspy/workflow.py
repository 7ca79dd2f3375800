"""What Who is Spy's standard rules need at parse time (its declaration's `rules`): the scheduled
games with their seats, and what decides the rate job beyond the games."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.core.run.declaration import PlayJob, ScheduleCall, Scheduled

if TYPE_CHECKING:
    from pipeline.whoisspy.config import WhoIsSpyParams

__all__ = ["REPORT_MODULES", "rate_settings", "scheduled"]

#: modules whose code decides the tables, metrics and plots: a change reruns rate and report.
#: Games are not replayed on code changes: bump ENGINE_VERSION in schedule.py for that.
REPORT_MODULES = ("config.py", "metrics.py", "plots.py", "report.py", "schemas.py", "scoring.py")


def scheduled(call: ScheduleCall) -> Scheduled[None]:
    """Every scheduled game (the fixed games, or the adaptive rounds' games: pipeline.whoisspy.schedule)
    and the rate job's settings. A ParamsError stops only whoisspy's targets (the standard rules)."""
    from pipeline.core.models import load_models
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import build_schedule

    params = load_whoisspy(call.params)
    games = build_schedule(params, load_models(call.models), source=call.params)
    return Scheduled(jobs={g.game_id: PlayJob(tuple(g.seats)) for g in games}, rate_settings=rate_settings(params))


def rate_settings(params: WhoIsSpyParams) -> dict[str, Any]:
    """What the rate job depends on beyond its input files: a change reruns it."""
    return {
        "rank_variant": params.rank_variant,
        "seed": params.seed,
        "rating": params.rating.model_dump(mode="json"),
        # the adaptive schedule adds the opponent rates to metrics.json; a fixed run's settings stay as they were
        **({"adaptive": True} if params.schedule.adaptive.enabled else {}),
    }
