"""What the Elimination Game's standard rules need at parse time (its declaration's `rules`): the
scheduled games with their seats and content, and what decides the rate job beyond the games."""

from __future__ import annotations

from pipeline.core.run.declaration import PlayJob, ScheduleCall, Scheduled

__all__ = ["RATE_MODULES", "REPORT_MODULES", "scheduled"]

#: the modules that turn logs into tables, ratings and metrics, and those that draw the plots: a change
#: reruns rate or report (games replay only when their content id changes)
RATE_MODULES = (
    "reader.py",
    "records.py",
    "metrics.py",
    "ratings.py",
    "schemas.py",
    "importer.py",
    "matching.py",
    "config.py",
)
REPORT_MODULES = ("plots.py",)


def scheduled(call: ScheduleCall) -> Scheduled[None]:
    """Every scheduled game (the fixed lineups, or the adaptive rounds' games: pipeline.elimination.schedule),
    its content a rule param (a change reruns the game), and the rating settings. A ParamsError stops
    only elimination's targets (the standard rules)."""
    from pipeline.elimination.config import load_elimination_params
    from pipeline.elimination.schedule import schedule_from_files

    games = schedule_from_files(call.params, call.models)
    rating = load_elimination_params(call.params).rating.model_dump(mode="json")
    return Scheduled(
        jobs={g.game_id: PlayJob(tuple(g.seats), g.content) for g in games}, rate_settings={"rating": rating}
    )
