"""What a benchmark's plan estimators share: the context they read from, and the game benchmarks' way of
counting a seat's requests.

Each benchmark declares its estimators in its registry entry (`Benchmark.estimators`, a module
with `ESTIMATORS = {rule: estimator}`); `python -m pipeline plan` calls them for the jobs of a
dry run (pipeline/core/run). An estimator reads the benchmark's own schedule (never a copy of it).

A game benchmark's requests per game job: who sits at the table, and how many calls a seat makes
(measured in earlier games of the same model). Before any game of a model has run, a benchmark that
states its game's structure (`PlannedMove`s: per kind of move, a seat's calls, one prompt's tokens,
the game's reply budget and the reply its rules lead one to expect) gets calls and tokens from it,
so an API model is priced before its first game; reply tokens are counted as the roster entry
spends them (pipeline.core.models.reply_budgets: its visible budget, plus a reasoning model's allowance). A benchmark
that states only a bound on calls shows them with an unknown cost for an API model (never a
made-up number); local models and bots cost 0 anyway.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.models.reply_budgets import most_reply_tokens, planned_reply_tokens
from pipeline.core.models.roster import ModelsParams, RosterEntry
from pipeline.core.run.plan import NO_MODEL, CallEstimate, PlannedJob


@dataclass
class PlanContext:
    """What estimators share: the project root, the roster, and each benchmark's loaded params.

    `params_dir` is the run's params directory (`params`, or `--params DIR`: e.g. params/paper); an
    estimator reads its benchmark's file with `params_file("<benchmark>.yaml")`, never a fixed path.
    `preview`: games of an adaptive round the plan prices before its round file exists."""

    root: Path
    models: ModelsParams
    models_path: str = "params/models.yaml"
    loaded: dict[str, Any] = field(default_factory=dict)  # per benchmark, loaded once
    params_dir: str = "params"
    # games of an adaptive round not written yet (benchmark -> core.run.rounds.RoundGame), which the
    # plan prices as it prices a scheduled game: a benchmark's estimator schedules them too
    preview: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def path(self, relative: str) -> Path:
        return self.root / relative

    def params_source(self, name: str) -> str:
        """`<params dir>/<name>` as the user names it (for messages): e.g. params/paper/xent.yaml."""
        return f"{self.params_dir}/{name}"

    def params_file(self, name: str) -> Path:
        """The file `name` (e.g. "elimination.yaml") of the run's params directory, under the root."""
        return self.root / self.params_source(name)

    def once(self, key: str, load: Callable[[], Any]) -> Any:
        """`load()`'s value, computed once per plan (a benchmark's params and schedule, its history)."""
        if key not in self.loaded:
            self.loaded[key] = load()
        return self.loaded[key]


Estimator = Callable[[PlannedJob, PlanContext], list[CallEstimate]]
Estimators = Mapping[str, Estimator]


def calls_per_seat(context: PlanContext, bench: str, kind: str) -> dict[str, float]:
    """Mean requests per (game, model) of earlier games (cache hits included: they are requests)."""

    def load() -> dict[str, float]:
        frames = []
        for path in sorted(context.path(f"results/{bench}").rglob("*calls.parquet")):
            try:
                frames.append(
                    pl.read_parquet(path, columns=["job", "roster_name", "request_id", "error_kind", "attempt"])
                )
            except Exception:  # noqa: BLE001 - a torn file only loses its history
                continue
        if not frames:
            return {}
        # one row per answered request, whatever its attempts (a retried or re-sent request is one
        # request), and once: a benchmark's combined calls table repeats its jobs' rows
        answered = pl.col("error_kind").is_null() | (pl.col("error_kind") == "empty")
        calls = (
            pl.concat(frames)
            .filter(answered & pl.col("job").str.starts_with(kind))
            .unique(["job", "roster_name", "request_id"])
        )
        per_game = calls.group_by(["job", "roster_name"]).len()
        means = per_game.group_by("roster_name").agg(pl.col("len").mean())
        return {r["roster_name"]: float(r["len"]) for r in means.iter_rows(named=True)}

    return context.once(f"{bench}-calls-per-seat", load)


@dataclass(frozen=True)
class PlannedMove:
    """One kind of move a seat makes in one game, as the game's structure bounds it."""

    kind: str  # the move's kind (MoveRequest.kind): it keys the roster entry's own budgets
    calls: float  # requests of this kind per seat and game (a share of the game's: may be fractional)
    prompt_tokens: int  # estimated tokens of one request's prompt (pipeline.core.models.probe.prompt_tokens)
    game_tokens: int | None = None  # the game's visible budget for this move (None: the game sets none)
    expected_visible: int | None = None  # visible reply tokens the rules lead one to expect (None: the budget)
    most: float | None = None  # the most requests of this kind one seat can make in one game (None: `calls`)


#: the moves of one seat: (seat index, roster name) -> its planned moves in one game
SeatMoves = Callable[[int, str], Sequence[PlannedMove]]


@dataclass(frozen=True)
class SeatPlan:
    """What a game contract tells the plan of one game (GameContract.seat_plan): `seat_estimates`'
    arguments beyond the seats. `bound`: the rules' most calls a seat (None: from `moves`' most)."""

    moves: SeatMoves | None
    moves_why: str
    bound: int | None = None
    bound_why: str = ""


@dataclass(frozen=True)
class SeatWork:
    """Calls and tokens of one or more seats, added up over their planned moves: as expected (the
    moves' `calls`, replies as the rules lead one to expect) and at most (the moves' `most`, every
    reply at its cap)."""

    calls: float
    prompt_tokens: float
    reply_tokens: float
    most_calls: float = 0.0
    most_prompt_tokens: float = 0.0
    most_reply_tokens: float = 0.0

    @property
    def per_call(self) -> tuple[float, float]:
        return (self.prompt_tokens / self.calls, self.reply_tokens / self.calls) if self.calls else (0.0, 0.0)


def seat_work(entry: RosterEntry, moves: Sequence[PlannedMove], benchmark: str) -> SeatWork:
    """What `entry` spends on `moves`: their calls, their prompts, and replies as the entry sends
    them (`planned_reply_tokens`: the expected visible reply within its visible budget, plus a
    reasoning model's whole allowance); and the most (`most_reply_tokens`: each reply at its cap)."""
    replies = {
        (m.kind, m.game_tokens, m.expected_visible): planned_reply_tokens(
            entry, m.kind, m.game_tokens, benchmark, m.expected_visible
        )
        for m in moves
    }
    caps = {(m.kind, m.game_tokens): most_reply_tokens(entry, m.kind, m.game_tokens, benchmark) for m in moves}

    def most(m: PlannedMove) -> float:
        return m.calls if m.most is None else m.most

    return SeatWork(
        calls=sum(m.calls for m in moves),
        prompt_tokens=sum(m.calls * m.prompt_tokens for m in moves),
        reply_tokens=sum(m.calls * replies[(m.kind, m.game_tokens, m.expected_visible)] for m in moves),
        most_calls=sum(most(m) for m in moves),
        most_prompt_tokens=sum(most(m) * m.prompt_tokens for m in moves),
        most_reply_tokens=sum(most(m) * caps[(m.kind, m.game_tokens)] for m in moves),
    )


def seat_estimates(
    context: PlanContext,
    bench: str,
    kind: str,
    seats: list[str],
    bound: int | None,
    bound_why: str,
    moves: SeatMoves | None = None,
    moves_why: str = "",
) -> list[CallEstimate]:
    """One row per model seated in a game: its bound from the game's structure (`moves`' most, with
    tokens at their caps, so the bound is priced), else the rules' bound on calls (`bound`, tokens
    unknown), else none; its expectation from measured calls of earlier games, else the structure.

    `bench` names the benchmark (it keys the entries' per-move budgets, `<benchmark>.<kind>`). Tokens
    per expected call come from `moves` where given (the plan prefers the tokens measured in earlier
    calls of the same model and kind, pipeline.core.run.plan.TokenHistory)."""
    measured = calls_per_seat(context, bench, kind)
    found = []
    for name, count in sorted(Counter(seats).items()):
        entry = context.models.entry(name)
        if entry.is_bot:
            found.append(CallEstimate(name, kind, 0, 0, 0, 0))
            continue
        planned = (
            None
            if moves is None
            else seat_work(entry, [m for i, seat in enumerate(seats) if seat == name for m in moves(i, name)], bench)
        )
        expected = measured[name] * count if name in measured else None
        if planned is not None:
            # earlier games above the structure's most would make it no bound: the larger holds
            most = math.ceil(max(planned.most_calls, expected or 0.0) - 1e-9)
            calls = planned.calls if expected is None else expected
            per_prompt, per_reply = planned.per_call
            found.append(
                CallEstimate(
                    name,
                    kind,
                    most,
                    0,
                    round(planned.most_prompt_tokens),
                    round(planned.most_reply_tokens),
                    f"{name}: {moves_why}" if moves_why and expected is None else "",
                    expected_calls=calls,
                    expected_prompt_tokens=calls * per_prompt,
                    expected_reply_tokens=calls * per_reply,
                )
            )
        elif bound is not None:
            found.append(
                CallEstimate(
                    name,
                    kind,
                    bound * count,
                    0,
                    0,
                    0,
                    f"{name}: {bound_why}; tokens unknown until one game ran",
                    tokens_known=False,
                    expected_calls=expected,
                )
            )
        else:
            found.append(
                CallEstimate(
                    name,
                    kind,
                    0,
                    0,
                    0,
                    0,
                    f"{name}: no bound on its calls (the game states none)",
                    tokens_known=False,
                    expected_calls=expected,
                    unbounded=True,
                )
            )
    return found


def shard_estimates(
    job: PlannedJob,
    context: PlanContext,
    bench: str,
    seats_by_game: Mapping[str, Any],
    per_game: Estimator,
    done: Callable[[str], bool] | None = None,
) -> list[CallEstimate]:
    """A shard job's requests: its games not yet done, split as the rules split them
    (pipeline.core.run.shards), each estimated as its own game job, added up per model.

    A resumed shard skips every game whose outputs are complete (`done`; by default the shards'
    own rule, `pipeline.core.run.shards.game_done`, on results/<benchmark>/games), so the plan counts only
    the games it will play: a half-finished run is planned as what is left of it."""
    from pipeline.core.run.shards import game_done, jobs_for_games

    shards = context.once(
        f"{bench}-shards", lambda: jobs_for_games(dict(seats_by_game), context.path(context.models_path)).shards
    )
    games = context.path(f"results/{bench}/games")
    finished = done or (lambda game_id: game_done(games, game_id))
    estimates = [
        e
        for game_id in shards.get(job.wildcards["shard_id"], [])
        if not finished(game_id)
        for e in per_game(dataclasses.replace(job, wildcards={"game_id": game_id}), context)
    ]
    # every game done (a run killed before the marker): the job still runs, and asks nothing
    return summed(estimates) or [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0)]


def summed(estimates: list[CallEstimate]) -> list[CallEstimate]:
    """One row per model for a job that plays several games: calls and tokens added up."""
    by_model: dict[str, CallEstimate] = {}
    for e in estimates:
        seen = by_model.get(e.model)
        by_model[e.model] = (
            e
            if seen is None
            else dataclasses.replace(
                seen,
                calls=seen.calls + e.calls,
                cached=seen.cached + e.cached,
                prompt_tokens=seen.prompt_tokens + e.prompt_tokens,
                reply_tokens=seen.reply_tokens + e.reply_tokens,
                tokens_known=seen.tokens_known and e.tokens_known,
                expected_calls=seen.expected[0] + e.expected[0],
                expected_prompt_tokens=seen.expected[1] + e.expected[1],
                expected_reply_tokens=seen.expected[2] + e.expected[2],
                unbounded=seen.unbounded or e.unbounded,
                note="; ".join(dict.fromkeys(part for n in (seen.note, e.note) for part in n.split("; ") if part)),
            )
        )
    return [by_model[name] for name in sorted(by_model)]
