"""Game rooms' requests per game job: who sits at the table (from each room's own schedule), and
how many calls a seat makes (measured in earlier games of the same model, else a bound where the
rules give one).

Before any game of a model has run, its tokens are unknown: the plan then shows its calls with
an unknown cost for an API model (never a made-up number); local models and bots cost 0 anyway.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import polars as pl

from pipeline.core.plan import CallEstimate, PlannedJob
from pipeline.plan.estimators import PlanContext


def _calls_per_seat(context: PlanContext, room: str, kind: str) -> dict[str, float]:
    """Mean requests per (game, model) of earlier games (cache hits included: they are requests)."""
    key = f"{room}-calls-per-seat"
    if key not in context.loaded:
        frames = []
        for path in sorted(context.path(f"results/{room}").rglob("*calls.parquet")):
            try:
                frames.append(pl.read_parquet(path, columns=["job", "roster_name", "error_kind", "attempt"]))
            except Exception:  # noqa: BLE001,S112 - a torn file only loses its history
                continue
        means: dict[str, float] = {}
        if frames:
            calls = pl.concat(frames).filter(
                pl.col("error_kind").is_null() & (pl.col("attempt") <= 1) & pl.col("job").str.starts_with(kind)
            )
            per_game = calls.group_by(["job", "roster_name"]).len()
            means = {r["roster_name"]: float(r["len"]) for r in per_game.group_by("roster_name").agg(pl.col("len").mean()).iter_rows(named=True)}
        context.loaded[key] = means
    return context.loaded[key]


def _estimates(
    context: PlanContext, room: str, kind: str, seats: list[str], bound: int | None, bound_why: str
) -> list[CallEstimate]:
    measured = _calls_per_seat(context, room, kind)
    found = []
    for name, count in sorted(Counter(seats).items()):
        entry = context.models.entry(name)
        if entry.is_bot:
            found.append(CallEstimate(name, kind, 0, 0, 0, 0))
        elif name in measured:
            found.append(CallEstimate(name, kind, round(measured[name] * count), 0, 0, 0))
        elif bound is not None:
            found.append(CallEstimate(name, kind, bound * count, 0, 0, 0, f"{name}: {bound_why}; tokens unknown until one game ran", tokens_known=False))
        else:
            found.append(CallEstimate(name, kind, 0, 0, 0, 0, f"{name}: calls unknown until one game ran", tokens_known=False))
    return found


def _loaded(context: PlanContext, room: str, load: Any) -> Any:
    if room not in context.loaded:
        context.loaded[room] = load()
    return context.loaded[room]


def estimate_whoisspy(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import build_schedule, find_game

    source = "params/whoisspy.yaml"

    def load() -> tuple[Any, Any]:
        params = load_whoisspy(context.path(source))
        return params, build_schedule(params, context.models, source=source)

    params, games = _loaded(context, "whoisspy", load)
    game = find_game(games, job.wildcards["game_id"], source)
    rounds = params.rules.rounds
    return _estimates(context, "whoisspy", "whoisspy", list(game.seats), 2 * rounds,
                      f"at most {rounds} rounds x (description + vote) per seat")


def estimate_elimination(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.elimination.schedule import schedule_from_files

    def load() -> dict[str, Any]:
        games = schedule_from_files(context.path("params/elimination.yaml"), context.path("params/models.yaml"))
        return {g.game_id: g for g in games}

    game = _loaded(context, "elimination", load)[job.wildcards["game_id"]]
    return _estimates(context, "elimination", "elimination", list(game.seats), None, "")


def estimate_xent(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.xent.config import load_xent
    from pipeline.xent.schedule import build_schedule

    def load() -> Any:
        return build_schedule(load_xent(context.path("params/xent.yaml")), context.models, source="params/xent.yaml")

    play = _loaded(context, "xent", load).job(job.wildcards["game"], job.wildcards["job_id"])
    seats = [play.player] + ([play.opponent] if play.opponent else [])
    return _estimates(context, "xent", f"xent/{play.game}", seats, None, "")


def _shard_games(context: PlanContext, room: str, seats_by_game: dict[str, Any], shard_id: str) -> list[str]:
    """The games of one shard job, split as the room's rules split them (pipeline.core.shards)."""
    from pipeline.core.shards import jobs_for_games

    key = f"{room}-shards"
    if key not in context.loaded:
        context.loaded[key] = jobs_for_games(seats_by_game, context.path(context.models_path))[1]
    return context.loaded[key].get(shard_id, [])


def _summed(estimates: list[CallEstimate]) -> list[CallEstimate]:
    """One row per model for a job that plays several games: calls and tokens added up."""
    by_model: dict[str, CallEstimate] = {}
    for e in estimates:
        seen = by_model.get(e.model)
        by_model[e.model] = e if seen is None else dataclasses.replace(
            seen, calls=seen.calls + e.calls, cached=seen.cached + e.cached,
            prompt_tokens=seen.prompt_tokens + e.prompt_tokens, reply_tokens=seen.reply_tokens + e.reply_tokens,
            tokens_known=seen.tokens_known and e.tokens_known)
    return [by_model[name] for name in sorted(by_model)]


def estimate_whoisspy_shard(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import build_schedule

    source = "params/whoisspy.yaml"
    params = load_whoisspy(context.path(source))
    games = {g.game_id: g for g in build_schedule(params, context.models, source=source)}
    shard = _shard_games(context, "whoisspy", {g: games[g].seats for g in games}, job.wildcards["shard_id"])
    return _summed([e for game_id in shard for e in estimate_whoisspy(
        dataclasses.replace(job, wildcards={"game_id": game_id}), context)])


def estimate_elimination_shard(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    from pipeline.elimination.schedule import schedule_from_files

    games = {g.game_id: g for g in schedule_from_files(context.path("params/elimination.yaml"),
                                                        context.path("params/models.yaml"))}
    shard = _shard_games(context, "elimination", {g: games[g].seats for g in games}, job.wildcards["shard_id"])
    return _summed([e for game_id in shard for e in estimate_elimination(
        dataclasses.replace(job, wildcards={"game_id": game_id}), context)])


ESTIMATORS = {
    "whoisspy_play": estimate_whoisspy,
    "whoisspy_shard": estimate_whoisspy_shard,
    "elimination_play": estimate_elimination,
    "elimination_shard": estimate_elimination_shard,
    "xent_play": estimate_xent,
}

