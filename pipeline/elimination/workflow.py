"""The Elimination Game's skeleton, which the core makes from its game contract (its verbs `schedule`
and `play`, its standard rules' schedule and its plan's estimators: pipeline.core.run.skeleton), and
the code that decides its rate and report jobs."""

from __future__ import annotations

from pipeline.core.run.skeleton import GameSkeleton

__all__ = ["RATE_MODULES", "REPORT_MODULES", "SKELETON"]

SKELETON = GameSkeleton("elimination", "pipeline.elimination.contract")

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
