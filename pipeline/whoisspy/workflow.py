"""What the Snakemake rules need at parse time: the scheduled games and the rate job's settings."""

from __future__ import annotations

from typing import Any

from pipeline.core.artifacts import ParamsError
from pipeline.core.run import code_fingerprint

__all__ = ["rate_settings", "report_code_fingerprint", "scheduled_game_ids", "scheduled_seats"]


def scheduled_game_ids(params_path: str, models_path: str, problems: dict[str, str] | None = None) -> list[str]:
    """Ids of every scheduled game; [] when the params cannot be read (see `scheduled_seats`)."""
    return list(scheduled_seats(params_path, models_path, problems))


def scheduled_seats(
    params_path: str, models_path: str, problems: dict[str, str] | None = None
) -> dict[str, tuple[str, ...]]:
    """Roster names at the seats of every scheduled game (the fixed games, or the adaptive rounds'
    games: pipeline.whoisspy.schedule); {} when the params cannot be read.

    A broken params file must not stop other benchmarks' targets from parsing: its problem goes into
    `problems` (the Snakefile's PARAMS_PROBLEMS), and building a target that needs whoisspy stops on it
    (core.run.workflow.params_guard), naming the file, the field and the fix.
    """
    from pipeline.core.models import load_models
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import build_schedule

    try:
        params = load_whoisspy(params_path)
        return {g.game_id: g.seats for g in build_schedule(params, load_models(models_path), source=params_path)}
    except ParamsError as exc:
        if problems is not None:
            problems.setdefault("whoisspy", str(exc))
        return {}


#: modules whose code decides the report; a change to them reruns the (cheap) rate job. Games are
#: not replayed on code changes: bump ENGINE_VERSION in schedule.py for that.
REPORT_MODULES = ("config.py", "metrics.py", "plots.py", "report.py", "schemas.py", "scoring.py")


def report_code_fingerprint() -> str:
    return code_fingerprint("pipeline.whoisspy", REPORT_MODULES)


def rate_settings(params_path: str) -> dict[str, Any]:
    """What the rate job depends on beyond its input files: a change reruns it."""
    from pipeline.whoisspy.config import load_whoisspy

    settings: dict[str, Any] = {"code": report_code_fingerprint()}
    try:
        params = load_whoisspy(params_path)
    except ParamsError:
        return settings
    return settings | {
        "rank_variant": params.rank_variant,
        "seed": params.seed,
        "rating": params.rating.model_dump(mode="json"),
        # the adaptive schedule adds the opponent rates to metrics.json; a fixed run's settings stay as they were
        **({"adaptive": True} if params.schedule.adaptive.enabled else {}),
    }
