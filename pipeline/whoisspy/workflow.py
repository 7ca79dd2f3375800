"""Who is Spy's skeleton, which the core makes from its game contract (its verbs `schedule` and `play`,
its standard rules' schedule and its plan's estimators: pipeline.core.run.skeleton), and what decides
its rate and report jobs beyond the played games."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.core.run.skeleton import GameSkeleton

if TYPE_CHECKING:
    from pipeline.whoisspy.config import WhoIsSpyParams

__all__ = ["REPORT_MODULES", "SKELETON", "rate_settings"]

SKELETON = GameSkeleton("whoisspy", "pipeline.whoisspy.contract")

#: modules whose code decides the tables, metrics and plots: a change reruns rate and report.
#: Games are not replayed on code changes: bump ENGINE_VERSION in schedule.py for that.
REPORT_MODULES = ("config.py", "metrics.py", "plots.py", "report.py", "schemas.py", "scoring.py")


def rate_settings(params: WhoIsSpyParams) -> dict[str, Any]:
    """What the rate job depends on beyond its input files: a change reruns it."""
    return {
        "rank_variant": params.rank_variant,
        "seed": params.seed,
        "rating": params.rating.model_dump(mode="json"),
        # the adaptive schedule adds the opponent rates to metrics.json; a fixed run's settings stay as they were
        **({"adaptive": True} if params.schedule.adaptive.enabled else {}),
    }
