"""What a benchmark's plan estimators share: the context they read from, and the game rooms' way of
counting a seat's requests.

Each benchmark declares its estimators in its registry entry (`Benchmark.estimators`, a module
with `ESTIMATORS = {rule: estimator}`); `python -m pipeline plan` calls them for the jobs of a
dry run (pipeline/plan). An estimator reads the benchmark's own schedule (never a copy of it).

A game room's requests per game job: who sits at the table, and how many calls a seat makes
(measured in earlier games of the same model, else a bound where the rules give one). Before any
game of a model has run, its tokens are unknown: the plan then shows its calls with an unknown
cost for an API model (never a made-up number); local models and bots cost 0 anyway.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.plan import CallEstimate, PlannedJob
from pipeline.core.roster import ModelsParams


@dataclass
class PlanContext:
    """What estimators share: the project root, the roster, and each room's loaded params."""

    root: Path
    models: ModelsParams
    models_path: str = "params/models.yaml"
    loaded: dict[str, Any] = field(default_factory=dict)  # per room, loaded once

    def path(self, relative: str) -> Path:
        return self.root / relative

    def once(self, key: str, load: Callable[[], Any]) -> Any:
        """`load()`'s value, computed once per plan (a room's params and schedule, its history)."""
        if key not in self.loaded:
            self.loaded[key] = load()
        return self.loaded[key]


Estimator = Callable[[PlannedJob, PlanContext], list[CallEstimate]]
Estimators = Mapping[str, Estimator]


def calls_per_seat(context: PlanContext, room: str, kind: str) -> dict[str, float]:
    """Mean requests per (game, model) of earlier games (cache hits included: they are requests)."""

    def load() -> dict[str, float]:
        frames = []
        for path in sorted(context.path(f"results/{room}").rglob("*calls.parquet")):
            try:
                frames.append(pl.read_parquet(path, columns=["job", "roster_name", "error_kind", "attempt"]))
            except Exception:  # noqa: BLE001,S112 - a torn file only loses its history
                continue
        if not frames:
            return {}
        calls = pl.concat(frames).filter(
            pl.col("error_kind").is_null() & (pl.col("attempt") <= 1) & pl.col("job").str.starts_with(kind)
        )
        per_game = calls.group_by(["job", "roster_name"]).len()
        means = per_game.group_by("roster_name").agg(pl.col("len").mean())
        return {r["roster_name"]: float(r["len"]) for r in means.iter_rows(named=True)}

    return context.once(f"{room}-calls-per-seat", load)


def seat_estimates(
    context: PlanContext, room: str, kind: str, seats: list[str], bound: int | None, bound_why: str
) -> list[CallEstimate]:
    """One row per model seated in a game: measured calls, else the rules' bound, else unknown."""
    measured = calls_per_seat(context, room, kind)
    found = []
    for name, count in sorted(Counter(seats).items()):
        entry = context.models.entry(name)
        if entry.is_bot:
            found.append(CallEstimate(name, kind, 0, 0, 0, 0))
        elif name in measured:
            found.append(CallEstimate(name, kind, round(measured[name] * count), 0, 0, 0))
        elif bound is not None:
            found.append(CallEstimate(name, kind, bound * count, 0, 0, 0,
                                      f"{name}: {bound_why}; tokens unknown until one game ran", tokens_known=False))
        else:
            found.append(CallEstimate(name, kind, 0, 0, 0, 0, f"{name}: calls unknown until one game ran",
                                      tokens_known=False))
    return found


def shard_estimates(job: PlannedJob, context: PlanContext, room: str, seats_by_game: Mapping[str, Any],
                    per_game: Estimator) -> list[CallEstimate]:
    """A shard job's requests: its games, split as the rules split them (pipeline.core.shards), each
    estimated as its own game job, added up per model."""
    from pipeline.core.shards import jobs_for_games

    shards = context.once(f"{room}-shards",
                          lambda: jobs_for_games(dict(seats_by_game), context.path(context.models_path))[1])
    estimates = [e for game_id in shards.get(job.wildcards["shard_id"], [])
                 for e in per_game(dataclasses.replace(job, wildcards={"game_id": game_id}), context)]
    return summed(estimates)


def summed(estimates: list[CallEstimate]) -> list[CallEstimate]:
    """One row per model for a job that plays several games: calls and tokens added up."""
    by_model: dict[str, CallEstimate] = {}
    for e in estimates:
        seen = by_model.get(e.model)
        by_model[e.model] = e if seen is None else dataclasses.replace(
            seen, calls=seen.calls + e.calls, cached=seen.cached + e.cached,
            prompt_tokens=seen.prompt_tokens + e.prompt_tokens, reply_tokens=seen.reply_tokens + e.reply_tokens,
            tokens_known=seen.tokens_known and e.tokens_known)
    return [by_model[name] for name in sorted(by_model)]
