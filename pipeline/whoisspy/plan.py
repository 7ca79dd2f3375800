"""Who is Spy's requests for the run plan (`python -m pipeline plan`): a seat makes at most one
description and one vote per round."""

from __future__ import annotations

from typing import Any

from pipeline.core.estimates import PlanContext, seat_estimates, shard_estimates
from pipeline.core.plan import CallEstimate, PlannedJob

PARAMS = "params/whoisspy.yaml"


def _schedule(context: PlanContext) -> tuple[Any, Any]:
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import build_schedule

    def load() -> tuple[Any, Any]:
        params = load_whoisspy(context.path(PARAMS))
        return params, build_schedule(params, context.models, source=PARAMS)

    return context.once("whoisspy", load)


def estimate_game(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.whoisspy.schedule import find_game

    params, games = _schedule(context)
    game = find_game(games, job.wildcards["game_id"], PARAMS)
    rounds = params.rules.rounds
    return seat_estimates(context, "whoisspy", "whoisspy", list(game.seats), 2 * rounds,
                          f"at most {rounds} rounds x (description + vote) per seat")


def estimate_shard(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    _, games = _schedule(context)
    return shard_estimates(job, context, "whoisspy", {g.game_id: g.seats for g in games}, estimate_game)


ESTIMATORS = {"whoisspy_play": estimate_game, "whoisspy_shard": estimate_shard}
