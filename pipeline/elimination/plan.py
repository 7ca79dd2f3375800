"""The Elimination Game's requests for the run plan (`python -m pipeline plan`): a game's length
depends on the votes, so a seat's calls come from earlier games of the same model."""

from __future__ import annotations

from typing import Any

from pipeline.core.estimates import PlanContext, seat_estimates, shard_estimates
from pipeline.core.plan import CallEstimate, PlannedJob


def _games(context: PlanContext) -> dict[str, Any]:
    from pipeline.elimination.schedule import schedule_from_files

    def load() -> dict[str, Any]:
        games = schedule_from_files(context.path("params/elimination.yaml"), context.path(context.models_path))
        return {g.game_id: g for g in games}

    return context.once("elimination", load)


def estimate_game(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    game = _games(context)[job.wildcards["game_id"]]
    return seat_estimates(context, "elimination", "elimination", list(game.seats), None, "")


def estimate_shard(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    games = _games(context)
    return shard_estimates(job, context, "elimination", {g: games[g].seats for g in games}, estimate_game)


ESTIMATORS = {"elimination_play": estimate_game, "elimination_shard": estimate_shard}
