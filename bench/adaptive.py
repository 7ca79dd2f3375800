"""Adaptive against fixed schedules on synthetic fields with known skills: games to a target rank
accuracy, interval coverage, and the saving (issue 28).

Fields: 8, 16 and 48 models whose true skills are the normal quantiles of TrueSkill's prior
(``mu + sigma * Phi^-1((i + 1/2) / n)``: a crowded middle and spread-out ends, with no accidental
near-ties), names shuffled so that name order says nothing. Shapes: pairwise (SKATE), 6-seat
(Who is Spy's table, as a free-for-all) and 8-seat free-for-all (Elimination); each round plays
``players // seats`` tables. Outcomes follow TrueSkill's own (Thurstone) model: each seated model
performs its skill plus Gaussian noise of sd beta, and the table is ranked by performance.

Per field, shape and seed both schedules play the same number of rounds:

- fixed (the baseline): `fixed_round`, balanced random tables blind to results, as the
  benchmarks' fixed schedules;
- adaptive: `next_round` from the online TrueSkill standings (`update_standings`) after each round.

Accuracy at a checkpoint is Kendall's tau between the true order and the multi-pass rating of the
games so far (`--passes` seeded orders through the compiled engine, `rate_rows`), averaged over
seeds. "Games to target" is the first game count at which the seed-mean tau reaches `--target-tau`
(linearly interpolated between checkpoints). Coverage: at that game count, `rating_summary` with a
bootstrap (`--resamples`) gives every model a rank interval; the share of models whose true rank
lies inside it, over seeds (an unsettled model's interval is the whole field and counts as
covering; the share of settled models is reported beside it). Saving = 1 - adaptive / fixed games.

    nice -n 19 .venv/bin/python bench/adaptive.py [--seeds 6] [--sizes 8 16 48]

Writes bench/results/adaptive.json and docs/img/adaptive_accuracy.png.

`--real` runs only the section on the real benchmark (and keeps the synthetic results already in
adaptive.json, under `real_elimination`): real Elimination Games played in-process (the game
engine, its prompts and the bots' moves) between graded bots of known strength (`bot: heuristic`,
`bot_options: {skill: p}`, p evenly spaced from 0 to 1: the order of p is the true order), one
8-seat table a round, the adaptive schedule (`decide_round`, the round ledger's own step, seats
shuffled as the ledger's games are) against the fixed one (`fixed_round`) over seeds; the same
measures as above: games to a target Kendall tau and rank-interval coverage.

    nice -n 19 .venv/bin/python bench/adaptive.py --real [--bots 10] [--real-seeds 4] [--real-games 120]

Writes `real_elimination` into bench/results/adaptive.json and docs/img/adaptive_real_accuracy.png.

`--real --real-benchmark whoisspy` measures the same on real Who is Spy games (the game engine, its
prompts and rules, the graded heuristic bots' moves; no Snakemake): 8 graded bots by default, one
6-seat table a round, each table a game of the baseline variant seated by the benchmark's own rule
(`seated_games`: words and seating from the seed); the adaptive runs choose the table and its spy
together, as the round ledger does (`decide_round` with the spy counts: `one_against_rest_round`),
the fixed runs take `fixed_round` and the member owed the most spy games; both share the round
bookkeeping (`run_rounds`) with the Elimination runs; a game is a team event (the spy against the civilians), rated
online by `update_standings` and, for accuracy, by a multi-pass rating every `--real-every` games
(trueskill's own update for team games, so not every game as above).

    nice -n 19 .venv/bin/python bench/adaptive.py --real --real-benchmark whoisspy [--bots 8] [--real-games 200] [--real-every 4] [--real-seeds 16]

Writes `real_whoisspy` into bench/results/adaptive.json and docs/img/adaptive_real_whoisspy_accuracy.png.

`--real-benchmark skate` measures the same on real SKATE rounds (the benchmark's own jobs in-process,
no Snakemake): 10 noisy answerers of known accuracy (`bot: noisy`, 0.3 to 0.9), 2 of which also set
template questions; one table of two answerers a round, each round a new round of the adaptive game
(`seated_games`): its setters' questions written, verified in the sandbox and checked for uniqueness,
its question set, the two seats' answer jobs (sampled, the paper's estimator), and the table's events
read by the benchmark's `AdaptiveSpec.event` (per question, the pair compared under the ranking's
primary mode). Both schedules of a seed share one results folder, so a job the other made is found
made, as in the real pipeline. "Games" are tables (rounds); the calls they cost are reported beside.

    nice -n 15 .venv/bin/python bench/adaptive.py --real-benchmark skate [--bots 10] [--setters 2] [--real-games 80] [--real-seeds 12]

Writes `real_skate` into bench/results/adaptive.json and docs/img/adaptive_real_skate_accuracy.png.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, run_conditions, write_result

from pipeline.core.artifacts import seed_from
from pipeline.core.rating.adaptive import (
    AdaptiveSchedule,
    Round,
    Standing,
    fixed_round,
    meetings,
    new_standing,
    next_round,
    update_standings,
)
from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, RatingParams, TeamMatch
from pipeline.core.rating.fast import compile_events, rate_rows
from pipeline.core.rating.multipass import pass_orders, rating_summary

ROOT = Path(__file__).resolve().parent.parent
PLOT_STEM = ROOT / "docs" / "img" / "adaptive_accuracy"
TARGET_SAVING = 0.35
TARGET_COVERAGE = 0.90
# Static skills (tau 0) and no draws: the simulation's outcomes come from this very model.
PARAMS = RatingParams(mu=25.0, sigma=25.0 / 3.0, beta=25.0 / 6.0, tau=0.0, draw_probability=0.0)
SHAPES = {"pairwise": 2, "6-seat": 6, "8-seat": 8}
# Rounds played per field size and shape: enough for the fixed schedule to pass the target
# accuracy with room to spare (games per model ~ rounds * seats * tables / players).
GAMES_PER_MODEL = {"pairwise": 160, "6-seat": 60, "8-seat": 50}


@dataclass(frozen=True)
class Field:
    names: tuple[str, ...]
    skills: np.ndarray  # true skill per name
    true_rank: dict[str, int]  # 1 = best


def make_field(n: int, seed: int) -> Field:
    quantiles = [NormalDist().inv_cdf((i + 0.5) / n) for i in range(n)]
    skills = np.array([PARAMS.mu + PARAMS.sigma * q for q in quantiles])
    rng = np.random.default_rng(seed_from("adaptive-bench-field", n, seed))
    names = tuple(f"model-{i:02d}" for i in rng.permutation(n))
    order = sorted(range(n), key=lambda i: -skills[i])
    return Field(names, skills, {names[i]: place for place, i in enumerate(order, start=1)})


def play(round_: Round, field: Field, noise: dict[str, np.ndarray], games: dict[str, int]) -> list[RatingEvent]:
    """A model's k-th game uses noise[model][k] whichever schedule seated it (common random
    numbers): the schedules differ only in who meets whom, not in luck."""
    skill = dict(zip(field.names, field.skills))
    events: list[RatingEvent] = []
    for table in round_.tables:
        performance = [skill[name] + noise[name][games[name]] for name in table]
        if len(table) == 2:
            events.append(Pairwise(table[0], table[1], "a" if performance[0] > performance[1] else "b"))
        else:
            order = np.argsort(-np.array(performance))
            events.append(FreeForAll({table[k]: place for place, k in enumerate(order, start=1)}))
    return events


@dataclass(frozen=True)
class RoundState:
    """What a schedule may look at before a round: the online standings, the meetings and game counts."""

    index: int
    standings: dict[str, Standing]
    met: dict[tuple[str, str], int]
    games: dict[str, int]


#: chooses a round's tables from what is known before it
Chooser = Callable[[RoundState], Round]


def schedule_chooser(kind: str, schedule: AdaptiveSchedule, seed: int) -> Chooser:
    """The two schedules compared: "adaptive" (`next_round` from the online standings) or "fixed"
    (`fixed_round`, balanced random tables blind to results)."""
    if kind == "adaptive":
        return lambda state: next_round(state.standings, schedule, PARAMS, seed, state.index, state.met)
    return lambda state: fixed_round(state.games, schedule, seed, state.index)


def run_schedule(
    kind: str,
    field: Field,
    seats: int,
    rounds: int,
    seed: int,
    tables: int | None = None,
    chooser: Callable[[AdaptiveSchedule], Chooser] | None = None,
) -> tuple[list[RatingEvent], list[int]]:
    """Play `rounds` rounds of `tables` tables (None: as many as the field fills); return the
    events and the game count after each round. The tables come from `chooser(schedule)` where
    given (another design, `bench/adaptive_ceiling.py`), else from `schedule_chooser(kind)`; the
    outcomes depend on the field, seats and seed only, whoever chooses."""
    schedule = AdaptiveSchedule(seats=seats, tables_per_round=tables or len(field.names) // seats)
    choose = chooser(schedule) if chooser is not None else schedule_chooser(kind, schedule, seed)
    standings: dict[str, Standing] = {name: new_standing(PARAMS) for name in field.names}
    games = dict.fromkeys(field.names, 0)
    outcome_rng = np.random.default_rng(seed_from("adaptive-bench-outcomes", len(field.names), seats, seed))
    noise = {name: outcome_rng.normal(0.0, PARAMS.beta, size=rounds) for name in field.names}
    events: list[RatingEvent] = []
    after: list[int] = []
    met: dict[tuple[str, str], int] = {}
    for r in range(rounds):
        round_ = choose(RoundState(r, standings, met, games))
        played = play(round_, field, noise, games)
        if kind != "fixed":  # the fixed schedule is blind to results: nothing to keep up to date
            standings = update_standings(standings, played, PARAMS)
            met = meetings(played, met)
        for name in round_.players:
            games[name] += 1
        events.extend(played)
        after.append(len(events))
    return events, after


def kendall_tau(true_rank: np.ndarray, score: np.ndarray) -> float:
    """tau-a between the true ranks (1 = best) and scores (higher = better)."""
    n = len(true_rank)
    i, j = np.triu_indices(n, 1)
    concordant = np.sign(true_rank[j] - true_rank[i]) * np.sign(score[i] - score[j])
    return float(concordant.sum() / (n * (n - 1) / 2))


def tau_curve(events: list[RatingEvent], field: Field, checkpoints: list[int], passes: int, seed: int) -> list[float]:
    names = sorted(field.names)
    index = {name: k for k, name in enumerate(names)}
    true = np.array([field.true_rank[name] for name in names])
    table = compile_events(events, index)
    taus = []
    for games in checkpoints:
        orders = np.stack(pass_orders(games, passes, seed))
        mus, _ = rate_rows(table, orders, len(names), PARAMS)
        taus.append(kendall_tau(true, mus.mean(axis=0)))
    return taus


def crossing(games: list[int], taus: list[float], target: float) -> float | None:
    """First game count where the curve reaches `target`, interpolated; None if never."""
    for k, tau in enumerate(taus):
        if tau >= target:
            if k == 0:
                return float(games[0])
            g0, g1, t0, t1 = games[k - 1], games[k], taus[k - 1], taus[k]
            return float(g0 + (g1 - g0) * (target - t0) / (t1 - t0))
    return None


def coverage(events: list[RatingEvent], field: Field, resamples: int, passes: int, seed: int) -> tuple[float, float]:
    summary = rating_summary(events, PARAMS, passes, seed, resamples, bootstrap_passes=2)
    covered = [
        lo <= field.true_rank[p] <= hi for p, lo, hi in zip(summary["player"], summary["rank_lo"], summary["rank_hi"])
    ]
    return float(np.mean(covered)), float(summary["settled"].mean())


def round_plan(n: int, shape: str, tables: int, checkpoints: int) -> tuple[int, list[int]]:
    """The rounds a field of `n` plays at `tables` tables a round (`GAMES_PER_MODEL` games each), and
    the rounds after which accuracy is measured: every round while that is affordable, so small game
    counts are resolved; else `checkpoints` evenly spaced."""
    rounds = math.ceil(GAMES_PER_MODEL[shape] * n / (SHAPES[shape] * tables))
    return rounds, sorted({max(1, round(rounds * (k + 1) / checkpoints)) for k in range(checkpoints)})


def measure(n: int, shape: str, seeds: int, args: argparse.Namespace) -> dict[str, Any]:
    seats = SHAPES[shape]
    # `--round-share` below 1: fewer tables a round than the field fills, so the adaptive schedule
    # chooses who plays as well as who meets whom (the fixed one seats the least played first)
    tables = max(1, round(n // seats * args.round_share))
    rounds, check_rounds = round_plan(n, shape, tables, args.checkpoints)
    result: dict[str, Any] = {"models": n, "shape": shape, "seats": seats, "tables_per_round": tables}
    curves: dict[str, np.ndarray] = {}
    played: dict[str, list[list[RatingEvent]]] = {}
    games_axis: list[int] = []
    for kind in ("fixed", "adaptive"):
        per_seed = []
        played[kind] = []
        for s in range(seeds):
            field = make_field(n, s)
            events, after = run_schedule(kind, field, seats, rounds, s, tables)
            games_axis = [after[r - 1] for r in check_rounds]
            per_seed.append(tau_curve(events, field, games_axis, args.passes, s))
            played[kind].append(events)
        curves[kind] = np.mean(per_seed, axis=0)
    result["curve_games"] = games_axis
    for kind in ("fixed", "adaptive"):
        need = crossing(games_axis, list(curves[kind]), args.target_tau)
        cov: list[float] = []
        settled: list[float] = []
        if need is not None:
            for s in range(seeds):
                field = make_field(n, s)
                c, st = coverage(played[kind][s][: math.ceil(need)], field, args.resamples, args.passes, s)
                cov.append(c)
                settled.append(st)
        # At the end of the budget every model has enough games for a settled interval.
        end = [coverage(played[kind][s], make_field(n, s), args.resamples, args.passes, s) for s in range(seeds)]
        higher = crossing(games_axis, list(curves[kind]), args.high_tau)
        result[kind] = {
            "games_to_target": None if need is None else round(need, 1),
            f"games_to_tau_{args.high_tau:g}": None if higher is None else round(higher, 1),
            "coverage_at_budget": round(float(np.mean([c for c, _ in end])), 3),
            "settled_share_at_budget": round(float(np.mean([st for _, st in end])), 3),
            "coverage": round(float(np.mean(cov)), 3) if cov else None,
            "settled_share": round(float(np.mean(settled)), 3) if settled else None,
            "final_tau": round(float(curves[kind][-1]), 3),
            "curve_tau": [round(float(t), 4) for t in curves[kind]],
        }
    fixed_games, adaptive_games = result["fixed"]["games_to_target"], result["adaptive"]["games_to_target"]
    if fixed_games and adaptive_games:
        result["saving"] = round(1.0 - adaptive_games / fixed_games, 3)
    else:
        result["saving"] = None
    high_key = f"games_to_tau_{args.high_tau:g}"
    fixed_high, adaptive_high = result["fixed"][high_key], result["adaptive"][high_key]
    result[f"saving_at_tau_{args.high_tau:g}"] = (
        round(1.0 - adaptive_high / fixed_high, 3) if fixed_high and adaptive_high else None
    )
    result["games_budget"] = games_axis[-1]
    return result


# -- the real benchmark: Elimination Games between graded bots -----------------------------------
REAL_SEATS = 8
REAL_PLOT_STEM = ROOT / "docs" / "img" / "adaptive_real_accuracy"


@dataclass(frozen=True)
class RealField:
    models: Any  # ModelsParams: the graded bots
    # EliminationParams: the benchmark's defaults, history_rounds 0 (the whole game); or WhoIsSpyParams (spy_field)
    params: Any
    rating: RatingParams  # the benchmark's TrueSkill settings (Elimination: mu 4, sigma 8.33, beta 4.17, tau 0)
    names: tuple[str, ...]
    true_rank: dict[str, int]  # 1 = the most skilled


def real_field(bots: int, low: float = 0.0, high: float = 1.0) -> RealField:
    from pipeline.core.models import ModelsParams
    from pipeline.elimination.config import EliminationParams

    skills = [round(low + (high - low) * k / (bots - 1), 4) for k in range(bots)]
    names = tuple(f"skill-{p:.2f}" for p in skills)
    roster = [{"name": n, "bot": "heuristic", "bot_options": {"skill": p}} for n, p in zip(names, skills)]
    models = ModelsParams.model_validate({"roster": roster})
    params = EliminationParams.model_validate({"seats": REAL_SEATS, "history_rounds": 0})
    order = sorted(names, key=lambda n: -skills[names.index(n)])
    return RealField(models, params, params.rating.rating_params(), names, {n: k for k, n in enumerate(order, 1)})


def play_real_table(
    field: RealField, table: tuple[str, ...], replicate: int, seed: int, round_index: int
) -> FreeForAll:
    """One real game of the table, seated as the ledger seats a round's games. Its id (and so every
    draw of the game and of the bots) comes from the seating, the replicate and the bench seed, not the
    schedule, so the two schedules play the very same game whenever they choose the same table."""
    import asyncio

    from pipeline.core.artifacts import content_id
    from pipeline.core.models import Gateway, make_players
    from pipeline.elimination.engine import EliminationGame, GameSpec
    from pipeline.elimination.schedule import table_seating

    seating = table_seating(table, seed, round_index)
    game_id = content_id({"bench": "adaptive-real", "seats": sorted(table), "replicate": replicate, "seed": seed})
    spec = GameSpec(game_id, seating, field.params.words, field.params.reply_tokens, field.params.history_rounds)
    gateway = Gateway(field.models, job=f"bench/{game_id}", root="/tmp")
    players = make_players(field.models, gateway, seed_from("elimination", game_id), names=seating, game="elimination")
    game = EliminationGame(spec, players)
    asyncio.run(game.play())
    seat_of = {pid: seat for seat, pid in game.pid.items()}
    return FreeForAll({game.name_of[seat_of[pid]]: rank for pid, rank in game.final_ranks().items()})


# plays one round's tables (the round's index is the round's own), returns their rating events
PlayRound = Callable[[Round], list[RatingEvent]]


def run_rounds(
    kind: str,
    field: RealField,
    games: int,
    seed: int,
    seats: int,
    play_round: PlayRound,
    *,
    lone: bool = False,
    stops: dict[int, int] | None = None,
) -> tuple[list[RatingEvent], list[int]]:
    """`games` rounds of one table, the round bookkeeping of every real bench (standings, meetings,
    game counts); the events and the event count after each round (one event a game, but SKATE's
    table gives one a question and pair). The tables come from
    `decide_round` (adaptive: the round ledger's own step) or `fixed_round` (fixed); `play_round`
    plays them. `lone`: the tables are one against the rest and the schedule chooses the lone seat
    too (`decide_round`'s `lone`, counted from the team events' single-player side). `stops`: where
    given, the adaptive run goes on past the ledger's stop with the schedule's own next round (so
    both compare at equal games), and it gets, per seed, the game count at which the ledger would
    have stopped; without it a stopped round plays no table (the Elimination bench as measured)."""
    from pipeline.core.rating.adaptive import Budget, decide_round
    from pipeline.core.rating.one_against_rest import one_against_rest_round

    schedule = AdaptiveSchedule(seats=seats, tables_per_round=1)
    standings = {name: new_standing(field.rating) for name in field.names}
    counts = dict.fromkeys(field.names, 0)
    alone = dict.fromkeys(field.names, 0)
    met: dict[tuple[str, str], int] = {}
    events: list[RatingEvent] = []
    after: list[int] = []
    tables = 0  # games chosen so far: the ledger's count (a SKATE table gives several events)
    for r in range(1, games + 1):
        if kind == "adaptive":
            stop, round_ = decide_round(
                standings,
                schedule,
                field.rating,
                seed,
                r,
                met,
                budget=Budget(),
                games=tables,
                rounds=r - 1,
                lone=alone if lone else None,
            )
            if stop is not None and stops is not None:
                # the ledger would stop here (every pair of neighbours separated); the comparison is at
                # equal game counts, so the run goes on with the schedule's own next round
                stops.setdefault(seed, tables)
                round_ = (
                    one_against_rest_round(standings, schedule, seed, r, alone)
                    if lone
                    else next_round(standings, schedule, field.rating, seed, r, met)
                )
        else:
            round_ = fixed_round(counts, schedule, seed, r)
        played = play_round(round_)
        standings = update_standings(standings, played, field.rating)
        met = meetings(played, met)
        tables += len(round_.tables)
        for name in round_.players:
            counts[name] += 1
        for event in played:
            if isinstance(event, TeamMatch) and len(event.a) == 1:
                alone[event.a[0]] += 1
        events.extend(played)
        after.append(len(events))
    return events, after


def elimination_rounds(field: RealField, seed: int) -> PlayRound:
    """Plays a round's tables as real Elimination Games (`play_real_table`); a table played before
    is its next replicate."""
    seen: dict[tuple[str, ...], int] = {}

    def play_round(round_: Round) -> list[RatingEvent]:
        played: list[RatingEvent] = []
        for table in round_.tables:
            key = tuple(sorted(table))
            played.append(play_real_table(field, table, seen.get(key, 0), seed, round_.index))
            seen[key] = seen.get(key, 0) + 1
        return played

    return play_round


def run_real(kind: str, field: RealField, games: int, seed: int) -> tuple[list[RatingEvent], list[int]]:
    """`games` real Elimination Games, one table a round (`run_rounds`)."""
    return run_rounds(kind, field, games, seed, REAL_SEATS, elimination_rounds(field, seed))


def real_tau_curve(
    events: list[RatingEvent], field: RealField, checkpoints: list[int], passes: int, seed: int
) -> list[float]:
    names = sorted(field.names)
    index = {name: k for k, name in enumerate(names)}
    true = np.array([field.true_rank[name] for name in names])
    table = compile_events(events, index)
    taus = []
    for games in checkpoints:
        orders = np.stack(pass_orders(games, passes, seed))
        mus, _ = rate_rows(table, orders, len(names), field.rating)
        taus.append(kendall_tau(true, mus.mean(axis=0)))
    return taus


def stays(games: list[int], taus: list[float], target: float) -> float | None:
    """The first game count from which the curve never falls below `target` again (None if it ends
    below): a crossing that noise cannot undo, beside `crossing`'s first touch."""
    for k in range(len(taus)):
        if all(t >= target for t in taus[k:]):
            return float(games[k])
    return None


def real_coverage(
    events: list[RatingEvent], field: RealField, resamples: int, passes: int, seed: int
) -> tuple[float, float]:
    summary = rating_summary(events, field.rating, passes, seed, resamples, bootstrap_passes=2)
    covered = [
        lo <= field.true_rank[p] <= hi for p, lo, hi in zip(summary["player"], summary["rank_lo"], summary["rank_hi"])
    ]
    return float(np.mean(covered)), float(summary["settled"].mean())


RealRun = Callable[[str, RealField, int, int], tuple[list[RatingEvent], list[int]]]
RealCurve = Callable[[list[RatingEvent], RealField, list[int], int, int], list[float]]


def measure_real(
    args: argparse.Namespace,
    field: RealField,
    run: RealRun = run_real,
    curve: RealCurve = real_tau_curve,
    seats: int = REAL_SEATS,
    every: int = 1,
) -> dict[str, Any]:
    """Both schedules over the seeds on `field`: `run` plays a run, `curve` rates its games at each
    checkpoint (every `every` games, and the last)."""
    checkpoints = list(range(every, args.real_games + 1, every))
    if checkpoints[-1] != args.real_games:
        checkpoints.append(args.real_games)
    curves: dict[str, np.ndarray] = {}
    played: dict[str, list[list[RatingEvent]]] = {}
    started = time.perf_counter()
    games_played = 0
    for kind in ("fixed", "adaptive"):
        per_seed, played[kind] = [], []
        for s in range(args.real_seeds):
            events, after = run(kind, field, args.real_games, s)
            games_played += len(events)
            # the games played by each checkpoint's round (one table a round: the checkpoint itself)
            per_seed.append(curve(events, field, [after[g - 1] for g in checkpoints], args.passes, s))
            played[kind].append(events)
            print(f"real {kind} seed {s}: {len(events)} games, tau {per_seed[-1][-1]:.3f}", file=sys.stderr)
        curves[kind] = np.mean(per_seed, axis=0)
    play_s = time.perf_counter() - started
    result: dict[str, Any] = {
        "bots": len(field.names),
        "skills": list(args.skills),
        "seats": seats,
        "tables_per_round": 1,
        "seeds": args.real_seeds,
        "games_per_run": args.real_games,
        "games_played": games_played,
        "true_order": sorted(field.true_rank, key=field.true_rank.__getitem__),
        "target_tau": args.real_target_tau,
        "curve_games": checkpoints,
    }
    for kind in ("fixed", "adaptive"):
        curve = list(curves[kind])
        need = crossing(checkpoints, curve, args.real_target_tau)
        cov = (
            [
                real_coverage(played[kind][s][: math.ceil(need)], field, args.resamples, args.passes, s)
                for s in range(args.real_seeds)
            ]
            if need is not None
            else []
        )
        end = [real_coverage(played[kind][s], field, args.resamples, args.passes, s) for s in range(args.real_seeds)]
        higher = crossing(checkpoints, curve, args.high_tau)
        held = stays(checkpoints, curve, args.real_target_tau)
        result[kind] = {
            "games_to_target": None if need is None else round(need, 1),
            "games_to_stay_at_target": held,
            f"games_to_tau_{args.high_tau:g}": None if higher is None else round(higher, 1),
            "coverage": round(float(np.mean([c for c, _ in cov])), 3) if cov else None,
            "settled_share": round(float(np.mean([st for _, st in cov])), 3) if cov else None,
            "coverage_at_budget": round(float(np.mean([c for c, _ in end])), 3),
            "settled_share_at_budget": round(float(np.mean([st for _, st in end])), 3),
            "final_tau": round(float(curve[-1]), 3),
            "curve_tau": [round(float(t), 4) for t in curve],
        }
    fixed_games, adaptive_games = result["fixed"]["games_to_target"], result["adaptive"]["games_to_target"]
    result["saving"] = round(1.0 - adaptive_games / fixed_games, 3) if fixed_games and adaptive_games else None
    fixed_held, adaptive_held = (
        result["fixed"]["games_to_stay_at_target"],
        result["adaptive"]["games_to_stay_at_target"],
    )
    result["saving_to_stay"] = round(1.0 - adaptive_held / fixed_held, 3) if fixed_held and adaptive_held else None
    high_key = f"games_to_tau_{args.high_tau:g}"
    fixed_high, adaptive_high = result["fixed"][high_key], result["adaptive"][high_key]
    result[f"saving_at_tau_{args.high_tau:g}"] = (
        round(1.0 - adaptive_high / fixed_high, 3) if fixed_high and adaptive_high else None
    )
    result["play_s"] = round(play_s, 1)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


# -- the real benchmark: Who is Spy games between graded bots ------------------------------------
SPY_SEATS = 6
SPY_PLOT_STEM = ROOT / "docs" / "img" / "adaptive_real_whoisspy_accuracy"


def spy_field(bots: int, low: float = 0.0, high: float = 1.0) -> RealField:
    """Graded Who is Spy bots (`bot: heuristic`, `bot_options: {skill: p}`), the benchmark's params
    for baseline games among them and its rating settings (mu 25, sigma 8.33, beta 4.17, tau 0.083)."""
    from pipeline.core.models import ModelsParams
    from pipeline.whoisspy.config import WhoIsSpyParams

    skills = [round(low + (high - low) * k / (bots - 1), 4) for k in range(bots)]
    names = tuple(f"skill-{p:.2f}" for p in skills)
    roster = [{"name": n, "bot": "heuristic", "bot_options": {"skill": p}} for n, p in zip(names, skills)]
    models = ModelsParams.model_validate({"roster": roster})
    params = WhoIsSpyParams.model_validate(
        {"players": list(names), "fill": [names[0]], "variants": ["baseline"], "rank_variant": "baseline"}
    )
    order = sorted(names, key=lambda n: -skills[names.index(n)])
    return RealField(models, params, params.rating.rating_params(), names, {n: k for k, n in enumerate(order, 1)})


def play_spy_game(field: RealField, params: Any, game: Any) -> RatingEvent:
    """One real game of a round's table as the ledger chose it (a RoundGame: seats, spy, words,
    replicate), under the game id the benchmark gives it, so the two schedules play the very same
    game whenever they choose the same table with the same spy history; its team event."""
    from pipeline.core.models import Gateway
    from pipeline.whoisspy.adaptive import team_event
    from pipeline.whoisspy.engine import run_game
    from pipeline.whoisspy.schedule import adaptive_spec

    f = game.fields
    spec = adaptive_spec(
        params,
        field.models,
        game.seats,
        int(f["spy_seat"]),
        str(f["civilian_word"]),
        str(f["spy_word"]),
        int(f["replicate"]),
        f.get("focal"),
    )
    assert spec.game_id == game.id, (spec.game_id, game.id)
    record = run_game(spec, field.models, Gateway(field.models, job=f"bench/{spec.game_id}", root="/tmp"))
    event = team_event(record)
    assert event is not None  # distinct players at every table: always a civilian team
    return event


def spy_rounds(field: RealField, seed: int, chosen_spy: bool) -> PlayRound:
    """Plays a round's tables as real Who is Spy games, seated by the benchmark's `seated_games`
    over the run's earlier games: the spy the schedule chose (the table's first seat) when
    `chosen_spy`, else the member owed the most spy games (the fixed runs)."""
    from pipeline.whoisspy.schedule import seated_games

    # the bench seed is the params' seed too: it is part of every game id, so seeds play other games
    params = field.params.model_copy(update={"seed": seed})
    earlier: list[Any] = []

    def play_round(round_: Round) -> list[RatingEvent]:
        spies = [table[0] for table in round_.tables] if chosen_spy else None
        chosen = seated_games(round_.tables, earlier, params, field.models, seed, round_.index, spies=spies)
        earlier.extend(chosen)
        return [play_spy_game(field, params, game) for game in chosen]

    return play_round


def run_spy(
    kind: str, field: RealField, games: int, seed: int, stops: dict[int, int] | None = None
) -> tuple[list[RatingEvent], list[int]]:
    """`games` real Who is Spy games, one table a round (`run_rounds`): the adaptive runs choose the
    table and its spy together (`one_against_rest_round`, as the ledger does), the fixed runs take
    `fixed_round` and the spy owed the most spy games. `stops` gets, per seed, the game count at
    which `decide_round` would have stopped the adaptive run."""
    adaptive = kind == "adaptive"
    play_round = spy_rounds(field, seed, chosen_spy=adaptive)
    return run_rounds(kind, field, games, seed, SPY_SEATS, play_round, lone=adaptive, stops=stops)


def spy_tau_curve(
    events: list[RatingEvent], field: RealField, checkpoints: list[int], passes: int, seed: int
) -> list[float]:
    """As `real_tau_curve` (the same pass orders), through `pass_ratings`: the compiled engine rates
    single-player teams only, team games go through trueskill's own update. A bot without a game
    yet keeps the prior mu."""
    from pipeline.core.rating.multipass import pass_ratings

    names = sorted(field.names)
    true = np.array([field.true_rank[name] for name in names])
    taus = []
    for games in checkpoints:
        players, mus, _ = pass_ratings(events[:games], field.rating, passes, seed)
        mean = dict(zip(players, mus.mean(axis=0)))
        taus.append(kendall_tau(true, np.array([mean.get(name, field.rating.mu) for name in names])))
    return taus


# -- the real benchmark: SKATE rounds between noisy answerers ------------------------------------
SKATE_SEATS = 2
SKATE_PLOT_STEM = ROOT / "docs" / "img" / "adaptive_real_skate_accuracy"


def skate_field(bots: int, low: float = 0.3, high: float = 0.9, setters: int = 2) -> RealField:
    """Noisy SKATE bots (`bot: noisy`, `bot_options: {accuracy: p}`: right with probability p on every
    question, its own included), p evenly spaced from `low` to `high`: the order of p is the true
    order. `setters` of them, spread over the field, are players (each sets one template question a
    round, verified in the sandbox), the rest answer only. The params are the adaptive game's (pairwise
    tables, one a round) with three choices:

    - answering `sampled`, the paper's estimator (samples until the standard error is 0.05, at most
      100): a p(correct) is a noisy measure of the accuracy. In exact mode a noisy bot's p(correct) is
      its accuracy itself, so every comparison would be decided without noise;
    - strategy `no_info`: a template setter's question depends on its own earlier questions only, not
      on its prompt, so the strategy changes no question; with `no_info` a round's generate jobs (their
      ids) do not depend on who answered the rounds before, so both schedules of a seed are asked the
      very same questions, found made as the real pipeline finds a job made (its content id);
    - `similarity_threshold` 1: the template setter has 12 families, so from its 13th round on every
      question shares a family with an earlier one, and at the default threshold (0.9) every attempt
      from round 13 on was rejected as too similar in a trial run, leaving rounds without questions.
      At 1 a setter may draw a family again with other constants, never the same question (the check
      still runs). A noisy bot's accuracy is the same on every question, so repeats change no
      comparison."""
    from pipeline.core.models import ModelsParams
    from pipeline.skate.config import SkateParams

    accuracies = [round(low + (high - low) * k / (bots - 1), 4) for k in range(bots)]
    names = tuple(f"acc-{p:.2f}" for p in accuracies)
    roster = [{"name": n, "bot": "noisy", "bot_options": {"accuracy": p}} for n, p in zip(names, accuracies)]
    models = ModelsParams.model_validate({"roster": roster})
    players = [names[k * bots // setters] for k in range(setters)]
    params = SkateParams.model_validate(
        {
            "players": players,
            "answer_only": [n for n in names if n not in players],
            "strategy": "no_info",
            "similarity_threshold": 1.0,
            "answering": {"mode": "sampled"},
            "adaptive": {"enabled": True, "seats": SKATE_SEATS, "tables_per_round": 1},
        }
    )
    order = sorted(names, key=lambda n: -accuracies[names.index(n)])
    return RealField(models, params, params.ranking.rating_params(), names, {n: k for k, n in enumerate(order, 1)})


@dataclass
class SkateWork:
    """What a run's tables cost and what making their jobs took. Per table, in order: the calls of
    its round's setting (the generate jobs' calls tables) and of its answer jobs, made now or found
    made (by the seed's other schedule: the same jobs); the seconds and counts of the jobs made."""

    set_calls: list[int]
    answer_calls: list[int]
    generate_made: int = 0
    generate_s: float = 0.0
    answer_made: int = 0
    answer_found: int = 0
    answer_s: float = 0.0
    events_s: float = 0.0


def skate_rounds(field: RealField, seed: int, out: Path, sandbox: Any, work: SkateWork) -> PlayRound:
    """Plays a round's tables as real SKATE jobs in `out` (the seed's results folder): a new round of
    the game (`seated_games`, as the ledger's `games`), its setters' generate jobs (the bots' template
    questions, each verified in the sandbox, unique against the setter's earlier ones by embedding),
    its question set, and each seat's answer job; a job whose file exists is not made again. The
    events are the benchmark's `AdaptiveSpec.event` of each table (`table_events`: per question, the
    pair compared under the ranking's primary mode)."""
    import asyncio

    import polars as pl

    from pipeline.core.models import Gateway
    from pipeline.skate.adaptive import SPEC
    from pipeline.skate.engine import run_answer, run_generate, write_answer, write_generate
    from pipeline.skate.rounds import run_round, write_round
    from pipeline.skate.schedule import (
        answer_paths,
        generate_path,
        round_path,
        round_plans,
        schedule_rounds,
        seated_games,
    )

    # the bench seed is the params' seed too: it is part of every job id, so seeds play other games
    params = field.params.model_copy(update={"seed": seed})
    earlier: list[Any] = []

    def calls(path: Path) -> int:
        return pl.read_parquet(path, columns=["job"]).height

    def play_round(round_: Round) -> list[RatingEvent]:
        chosen = seated_games(round_.tables, earlier, params, field.models)
        earlier.extend(chosen)
        schedule = schedule_rounds(params, field.models, round_plans(earlier), adaptive=True)
        r = int(chosen[0].fields["round"])
        started = time.perf_counter()
        for setter in params.players:
            job = schedule.generate[(r, setter)]
            if not generate_path(out, job.job_id).exists():
                gateway = Gateway(field.models, job=f"skate/generate/{job.job_id}", root=out)
                record = asyncio.run(run_generate(params, field.models, schedule, job, out, gateway, sandbox))
                write_generate(out, record, gateway)
                work.generate_made += 1
        if not round_path(out, schedule.rounds[r].job_id).exists():
            write_round(out, run_round(params, schedule.rounds[r], out))
        set_calls = sum(calls(generate_path(out, g).with_suffix(".calls.parquet")) for g in schedule.rounds[r].generate)
        work.generate_s += time.perf_counter() - started
        events: list[RatingEvent] = []
        for game in chosen:
            started = time.perf_counter()
            answered = 0
            for name in game.seats:
                answer = schedule.answers[(r, name)]
                paths = answer_paths(out, answer.job_id)
                if paths["pcorrect"].exists():
                    work.answer_found += 1
                else:
                    gateway = Gateway(field.models, job=f"skate/answer/{answer.job_id}", root=out)
                    samples, pcorrect = asyncio.run(run_answer(params, field.models, answer, out, gateway))
                    write_answer(out, answer, samples, pcorrect, gateway)
                    work.answer_made += 1
                answered += calls(paths["calls"])
            work.answer_s += time.perf_counter() - started
            started = time.perf_counter()
            found = SPEC.event(out, game)
            assert found is not None, game.id  # every seat's answers are there
            events.extend(found if isinstance(found, Sequence) else (found,))
            work.events_s += time.perf_counter() - started
            work.set_calls.append(set_calls if game is chosen[0] else 0)  # a round's setting, paid once
            work.answer_calls.append(answered)
        return events

    return play_round


def run_skate(
    kind: str,
    field: RealField,
    games: int,
    seed: int,
    *,
    root: Path,
    sandbox: Any,
    work: dict[tuple[str, int], SkateWork],
    stops: dict[int, int],
) -> tuple[list[RatingEvent], list[int]]:
    """`games` rounds of one SKATE table of two answerers (`run_rounds`), in the seed's folder under
    `root`, which both schedules of the seed share (a job either made is found made by the other);
    the adaptive runs go on past the ledger's stop, which `stops` records."""
    out = root / f"seed-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    work[kind, seed] = SkateWork([], [])
    play_round = skate_rounds(field, seed, out, sandbox, work[kind, seed])
    return run_rounds(kind, field, games, seed, SKATE_SEATS, play_round, stops=stops)


def measure_skate(args: argparse.Namespace, every: int) -> dict[str, Any]:
    """`measure_real` on real SKATE rounds, plus what they cost in the benchmark's units (questions,
    answer jobs, calls) and what they took (seconds a job made)."""
    import tempfile

    from pipeline.core.sandbox import Sandbox

    field = skate_field(args.bots, *args.skills, setters=args.setters)
    params = field.params
    sandbox = Sandbox(params.sandbox.limits(), allow_unisolated=params.sandbox.allow_unisolated)
    work: dict[tuple[str, int], SkateWork] = {}
    stops: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="adaptive-skate-") as root:
        run = partial(run_skate, root=Path(root), sandbox=sandbox, work=work, stops=stops)
        section = measure_real(args, field, run, real_tau_curve, SKATE_SEATS, every)
    seeds = range(args.real_seeds)
    for kind in ("fixed", "adaptive"):
        # the seed-mean cumulative calls after each table, read at the tables to the target
        cumulative = np.mean([np.cumsum(np.add(work[kind, s].set_calls, work[kind, s].answer_calls)) for s in seeds], 0)
        answers = np.mean([np.cumsum(work[kind, s].answer_calls) for s in seeds], 0)
        tables = np.arange(1, len(cumulative) + 1)
        entry = section[kind]
        for key, name in (("games_to_target", "to_target"), ("games_to_stay_at_target", "to_stay_at_target")):
            at = entry[key]
            entry[f"calls_{name}"] = None if at is None else round(float(np.interp(at, tables, cumulative)))
            entry[f"answer_calls_{name}"] = None if at is None else round(float(np.interp(at, tables, answers)))
        entry["calls_per_table"] = round(float(cumulative[-1] / len(tables)), 1)
        entry["answer_calls_per_table"] = round(float(answers[-1] / len(tables)), 1)
    made = [work[key] for key in work]
    generate_made, answer_made = sum(w.generate_made for w in made), sum(w.answer_made for w in made)
    generate_s, answer_s = sum(w.generate_s for w in made), sum(w.answer_s for w in made)
    section.update(
        benchmark="skate",
        unit="tables",
        field_label="noisy answerers",
        accuracies=[
            round(args.skills[0] + (args.skills[1] - args.skills[0]) * k / (args.bots - 1), 4) for k in range(args.bots)
        ],
        setters=list(params.players),
        questions_per_table=len(params.players),
        answer_jobs_per_table=SKATE_SEATS,
        answering=params.answering.mode,
        strategy=params.strategy,
        similarity_threshold=params.similarity_threshold,
        sandbox_isolation=sandbox.isolation,
        rating_params={k: getattr(field.rating, k) for k in ("mu", "sigma", "beta", "tau", "draw_probability")},
        compare={"mode": params.ranking.primary, "sigma_stop": params.answering.sigma_stop},
        adaptive_separated_at=[stops.get(s) for s in seeds],
        jobs={
            "generate_made": generate_made,
            "generate_s_each": round(generate_s / max(generate_made, 1), 3),
            "answer_made": answer_made,
            "answer_found": sum(w.answer_found for w in made),
            "answer_s_each": round(answer_s / max(answer_made, 1), 3),
            "events_s": round(sum(w.events_s for w in made), 1),
            # a fresh table: its round's setting and its two answer jobs
            "round_s": round(
                len(params.players) * generate_s / max(generate_made, 1) + SKATE_SEATS * answer_s / max(answer_made, 1),
                2,
            ),
        },
    )
    return section


# -- the real benchmark: Xent maps between graded bots ----------------------------------------------
XENT_SEATS = 2
XENT_PLOT_STEM = ROOT / "docs" / "img" / "adaptive_real_xent_accuracy"
XENT_GAME = "condense"  # one player against the judge: no opponent bot's moves in the scores


def xent_field(bots: int, low: float = 0.0, high: float = 1.0, maps: int = 60) -> RealField:
    """Graded xent bots (`bot: heuristic`, `bot_options.skill` from `low` to `high`) on `maps` maps of
    condense, one round a map, scored by the params' judge (the embedded gemma-3-270m). A heuristic
    move names content words of the visible text, which make the story cheaper for the judge to
    predict; a random move is filler words. The params are the adaptive game's: tables of two."""
    from pipeline.core.models import ModelsParams
    from pipeline.xent.config import XentParams

    skills = [round(low + (high - low) * k / (bots - 1), 4) for k in range(bots)]
    names = tuple(f"skill-{p:.2f}" for p in skills)
    roster = [{"name": n, "bot": "heuristic", "bot_options": {"skill": p}} for n, p in zip(names, skills)]
    models = ModelsParams.model_validate({"roster": roster})
    params = XentParams.model_validate(
        {
            "players": list(names),
            "opponent": names[0],  # condense has no opponent role: it plays no move
            "games": [XENT_GAME],
            "maps_per_game": maps,
            "rounds": 1,
            "schedule": {"adaptive": {"enabled": True, "table_size": XENT_SEATS, "tables_per_round": 1}},
        }
    )
    order = sorted(names, key=lambda n: -skills[names.index(n)])
    return RealField(models, params, params.rating.rating_params(), names, {n: k for k, n in enumerate(order, 1)})


@dataclass
class XentWork:
    """Plays made and found (made by the seed's other schedule: the same jobs), and their seconds."""

    made: int = 0
    found: int = 0
    play_s: float = 0.0
    build_s: float = 0.0


def xent_rounds(field: RealField, seed: int, root: Path, work: XentWork) -> PlayRound:
    """Plays a round's tables as real Xent plays under `root` (the seed's folder: its params, with the
    map seed `1000 * seed`, its maps and its play records): each table is dealt a map as the ledger
    deals it (`seated_games`), each seat plays its job of that map unless its record exists (a play two
    tables share is made once), and the table's event is the benchmark's `AdaptiveSpec.event` (the
    seats ranked by map score)."""
    import asyncio
    import os

    from pipeline.core.run.rounds import RoundGame
    from pipeline.xent.adaptive import event as table_event
    from pipeline.xent.schedule import build_schedule, map_catalogue, seated_games, table_jobs
    from pipeline.xent.stages import build_stage, play_done, play_job

    params = field.params.model_copy(update={"seed": 1000 * seed})
    folder = root / f"seed-{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    source = "params/xent.yaml"
    maps_root, plays = folder / "results/xent/maps", folder / "results/xent/play"
    here = Path.cwd()
    os.chdir(folder)  # the maps' folder is relative to the working directory, as in the workflow
    try:
        (folder / "params").mkdir(exist_ok=True)
        (folder / source).write_text(params.model_dump_json())
        (folder / "params/models.yaml").write_text(field.models.model_dump_json(exclude_none=True))
        if not (maps_root / XENT_GAME).is_dir():
            t0 = time.perf_counter()
            build_stage(source, "params/models.yaml", XENT_GAME, str(maps_root), None)
            work.build_s += time.perf_counter() - t0
        catalogue = map_catalogue(params, source)
        # the games as the fixed schedule knows them: `play_job` reads a job's game from there
        fixed = type(params).model_validate({**params.model_dump(mode="json"), "schedule": {}})
        schedule = build_schedule(fixed, field.models, source)
    finally:
        os.chdir(here)
    earlier: list[RoundGame] = []

    def play_round(round_: Round) -> list[RatingEvent]:
        os.chdir(folder)
        try:
            games = seated_games(round_.tables, earlier, params, field.models, source)
            events: list[RatingEvent] = []
            for game in games:
                for job in table_jobs(game, params, field.models, catalogue, "bench", "rounds"):
                    if play_done(job, plays):
                        work.found += 1
                        continue
                    t0 = time.perf_counter()
                    asyncio.run(play_job(params, field.models, schedule, job, str(maps_root), str(plays)))
                    work.play_s += time.perf_counter() - t0
                    work.made += 1
                made = table_event(folder / "results/xent", game)
                if made is not None:
                    events.append(made)
            earlier.extend(games)
            return events
        finally:
            os.chdir(here)

    return play_round


def run_xent(
    kind: str, field: RealField, games: int, seed: int, *, root: Path, work: dict[int, XentWork]
) -> tuple[list[RatingEvent], list[int]]:
    """`games` tables of two on real Xent maps, one a round (`run_rounds`); the seed's plays are shared
    by both schedules (the same job ids where they deal the same map to the same player)."""
    return run_rounds(
        kind, field, games, seed, XENT_SEATS, xent_rounds(field, seed, root, work.setdefault(seed, XentWork()))
    )


def measure_xent(args: argparse.Namespace, every: int) -> dict[str, Any]:
    """`measure_real` on real Xent plays, plus what the plays took."""
    import tempfile

    field = xent_field(args.bots, *args.skills, maps=args.maps)
    work: dict[int, XentWork] = {}
    with tempfile.TemporaryDirectory(prefix="adaptive-xent-") as root:
        run = partial(run_xent, root=Path(root), work=work)
        section = measure_real(args, field, run, real_tau_curve, XENT_SEATS, every)
    made = list(work.values())
    section.update(
        benchmark="xent",
        unit="tables",
        game=XENT_GAME,
        maps_per_seed=args.maps,
        judge=field.params.judge,
        rounds_per_map=field.params.rounds,
        plays={
            "made": sum(w.made for w in made),
            "found": sum(w.found for w in made),
            "play_s_each": round(sum(w.play_s for w in made) / max(1, sum(w.made for w in made)), 3),
            "maps_build_s": round(sum(w.build_s for w in made), 1),
        },
        rating_params={k: getattr(field.rating, k) for k in ("mu", "sigma", "beta", "tau", "draw_probability")},
    )
    return section


def plot_real(section: dict[str, Any]) -> list[Path]:
    import altair as alt

    from pipeline.core.artifacts import save_chart

    rows = [
        {"schedule": kind, "games": games, "kendall_tau": tau}
        for kind in ("fixed", "adaptive")
        for games, tau in zip(section["curve_games"], section[kind]["curve_tau"])
    ]
    lines = (
        alt.Chart(alt.Data(values=rows))
        .mark_line()
        .encode(
            x=alt.X("games:Q", title=f"{section.get('unit', 'games')} played"),
            y=alt.Y("kendall_tau:Q", title="Kendall tau to the true order", scale=alt.Scale(domain=[0.0, 1.0])),
            color=alt.Color("schedule:N", title="schedule"),
        )
        .properties(
            width=360,
            height=200,
            title=f"Real {REAL_TITLES[section.get('benchmark', 'elimination')]}, {section['bots']} "
            f"{section.get('field_label', 'graded bots')}, {section['seats']} seats (mean over {section['seeds']} seeds)",
        )
    )
    rule = alt.Chart().mark_rule(strokeDash=[4, 4]).encode(y=alt.datum(section["target_tau"]))
    stem = REAL_PLOT_STEMS[section.get("benchmark", "elimination")]
    return save_chart(alt.layer(lines, rule), stem, formats=("png",))


REAL_TITLES = {
    "elimination": "Elimination Games",
    "whoisspy": "Who is Spy games",
    "skate": "SKATE rounds",
    "xent": "Xent maps (condense)",
}
REAL_PLOT_STEMS = {
    "elimination": REAL_PLOT_STEM,
    "whoisspy": SPY_PLOT_STEM,
    "skate": SKATE_PLOT_STEM,
    "xent": XENT_PLOT_STEM,
}
# per benchmark: graded bots, games per run, games between accuracy checkpoints, seeds. Who is Spy's
# team games are rated by trueskill's own update (not the compiled engine), so its checkpoints are
# sparser; its single bit a game (did the spy win) needs more games than Elimination's 8 places, and
# its seed-mean curve is noisy enough near tau 0.9 that 4 seeds put the first crossing anywhere from
# 100 to 190 games (docs/adaptive.md): 16 seeds.
REAL_DEFAULTS: dict[str, dict[str, int]] = {
    "elimination": {"bots": 10, "games": 120, "every": 1, "seeds": 12},
    "whoisspy": {"bots": 8, "games": 200, "every": 4, "seeds": 16},
    "skate": {"bots": 10, "games": 80, "every": 1, "seeds": 12},
    "xent": {"bots": 6, "games": 200, "every": 1, "seeds": 4},
}
# the bots' strengths: graded bots' skill p in [0, 1]; SKATE's noisy answerers' accuracy, from just above
# chance (1 in 4 options) to nearly always right
REAL_SKILLS: dict[str, tuple[float, float]] = {
    "elimination": (0.0, 1.0),
    "whoisspy": (0.0, 1.0),
    "skate": (0.3, 0.9),
    "xent": (0.0, 1.0),
}
SEATS_OF = {"elimination": REAL_SEATS, "whoisspy": SPY_SEATS, "skate": SKATE_SEATS, "xent": XENT_SEATS}


def write_real(section: dict[str, Any], key: str = "real_elimination") -> Path:
    """Put a real section into adaptive.json under `key`, beside the synthetic results and the
    other real sections already there."""
    import json

    from _common import RESULTS, machine

    path = RESULTS / "adaptive.json"
    record = json.loads(path.read_text()) if path.exists() else {"name": "adaptive"}
    record[key] = {
        **section,
        "machine": machine(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def plot(configs: list[dict[str, Any]], target_tau: float) -> list[Path]:
    import altair as alt

    from pipeline.core.artifacts import save_chart

    rows = []
    for config in configs:
        for kind in ("fixed", "adaptive"):
            for games, tau in zip(config["curve_games"], config[kind]["curve_tau"]):
                rows.append(
                    {
                        "field": f"{config['models']} models",
                        "shape": config["shape"],
                        "schedule": kind,
                        "games": games,
                        "kendall_tau": tau,
                    }
                )
    data = alt.Data(values=rows)  # plain records: no pandas/pyarrow conversion needed
    lines = (
        alt.Chart()
        .mark_line()
        .encode(
            x=alt.X("games:Q", title="games played"),
            y=alt.Y("kendall_tau:Q", title="Kendall tau to the true order", scale=alt.Scale(domain=[0.0, 1.0])),
            color=alt.Color("schedule:N", title="schedule"),
        )
        .properties(width=220, height=150)
    )
    rule = alt.Chart().mark_rule(strokeDash=[4, 4]).encode(y=alt.datum(target_tau))
    chart = (
        alt.layer(lines, rule, data=data)
        .facet(row=alt.Row("field:N", title=None), column=alt.Column("shape:N", title=None))
        .resolve_scale(x="independent")
        .properties(title="Rank accuracy against games: fixed vs adaptive schedule (mean over seeds)")
    )
    return save_chart(chart, PLOT_STEM, formats=("png",))  # the PNG is committed; html/svg would be ~1 MB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 48])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--seeds", type=int, default=48)
    parser.add_argument("--target-tau", type=float, default=0.9)
    parser.add_argument("--high-tau", type=float, default=0.95, help="a stricter accuracy, reported beside")
    parser.add_argument("--checkpoints", type=int, default=120)
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--resamples", type=int, default=40)
    parser.add_argument(
        "--round-share",
        type=float,
        default=1.0,
        help="tables a round as a share of those the field fills (1: everyone plays each round); below 1 the "
        "results go to the `narrow_rounds` section of adaptive.json, beside the main ones",
    )
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--real", action="store_true", help="run only a real-benchmark section (graded bots)")
    parser.add_argument(
        "--real-benchmark",
        choices=list(REAL_DEFAULTS),
        default=None,
        help="--real: the benchmark whose real games are played (default elimination; naming one implies --real)",
    )
    parser.add_argument("--bots", type=int, default=None, help="--real: bots in the field (10; whoisspy 8)")
    parser.add_argument(
        "--real-seeds", type=int, default=None, help="--real: seeds per schedule (12; whoisspy 16, xent 4)"
    )
    parser.add_argument(
        "--real-games",
        type=int,
        default=None,
        help="--real: games per run (120; whoisspy 200, xent 200; skate and xent: tables)",
    )
    parser.add_argument(
        "--real-every",
        type=int,
        default=None,
        help="--real: games between accuracy checkpoints (1; whoisspy 4: its team games are rated game by game)",
    )
    parser.add_argument("--real-target-tau", type=float, default=0.9, help="--real: the accuracy compared")
    parser.add_argument(
        "--skills",
        type=float,
        nargs=2,
        default=None,
        metavar=("LOW", "HIGH"),
        help="--real: the bots' skill range (0 1; skate: the noisy answerers' accuracy, 0.3 0.9)",
    )
    parser.add_argument("--setters", type=int, default=2, help="--real-benchmark skate: bots that also set questions")
    parser.add_argument("--maps", type=int, default=60, help="--real-benchmark xent: condense maps per seed")
    args = parser.parse_args()

    if not 0.0 < args.round_share <= 1.0:
        parser.error("--round-share must be in (0, 1]")
    if args.real or args.real_benchmark:
        benchmark = args.real_benchmark or "elimination"
        defaults = REAL_DEFAULTS[benchmark]
        args.bots = defaults["bots"] if args.bots is None else args.bots
        args.real_games = defaults["games"] if args.real_games is None else args.real_games
        every = defaults["every"] if args.real_every is None else args.real_every
        args.real_seeds = defaults["seeds"] if args.real_seeds is None else args.real_seeds
        args.skills = list(REAL_SKILLS[benchmark]) if args.skills is None else args.skills
        if args.bots < SEATS_OF[benchmark] or min(args.real_games, every, args.real_seeds) < 1:
            parser.error(
                "--bots must fill a table (8 seats; whoisspy 6; skate 2); --real-games, --real-every, --real-seeds "
                "be positive"
            )
        if benchmark == "skate" and not 1 <= args.setters <= args.bots:
            parser.error("--setters must be between 1 and --bots")
        load_before = load_average()
        if benchmark == "whoisspy":
            field = spy_field(args.bots, *args.skills)
            stops: dict[int, int] = {}
            section = measure_real(args, field, partial(run_spy, stops=stops), spy_tau_curve, SPY_SEATS, every)
            section["benchmark"], section["checkpoint_every"] = benchmark, every
            # per seed: the games after which the ledger's own rule (neighbours separated) would stop
            section["adaptive_separated_at"] = [stops.get(s) for s in range(args.real_seeds)]
            section["rating_params"] = {
                k: getattr(field.rating, k) for k in ("mu", "sigma", "beta", "tau", "draw_probability")
            }
        elif benchmark == "xent":
            section = measure_xent(args, every)
            section["checkpoint_every"] = every
        elif benchmark == "skate":
            section = measure_skate(args, every)
            section["checkpoint_every"] = every
        else:
            section = measure_real(args, real_field(args.bots, *args.skills), every=every)
        section["load_avg_before"], section["load_avg_after"] = load_before, load_average()
        section["passes"], section["resamples"], section["high_tau"] = args.passes, args.resamples, args.high_tau
        if not args.no_plot:
            section["plots"] = [str(p.relative_to(ROOT)) for p in plot_real(section)]
        print(f"wrote {write_real(section, f'real_{benchmark}')}", file=sys.stderr)
        summary = {k: v for k, v in section.items() if k not in ("curve_games",)}
        for kind in ("fixed", "adaptive"):
            summary[kind] = {k: v for k, v in section[kind].items() if k != "curve_tau"}
        import json

        print(json.dumps(summary, indent=1))
        return 0

    load_before = load_average()
    started = time.perf_counter()
    configs = []
    for n in args.sizes:
        for shape in args.shapes:
            t0 = time.perf_counter()
            config = measure(n, shape, args.seeds, args)
            config["wall_s"] = round(time.perf_counter() - t0, 1)
            configs.append(config)
            print(
                f"{n:3d} {shape:8s} fixed {config['fixed']['games_to_target']} adaptive "
                f"{config['adaptive']['games_to_target']} saving {config['saving']} coverage "
                f"{config['fixed']['coverage']}/{config['adaptive']['coverage']} ({config['wall_s']} s)",
                file=sys.stderr,
            )
    wall = time.perf_counter() - started
    narrow = args.round_share < 1.0
    plots = [] if args.no_plot or narrow else [str(p.relative_to(ROOT)) for p in plot(configs, args.target_tau)]

    fixed_total = sum(c["fixed"]["games_to_target"] or 0 for c in configs if c["saving"] is not None)
    adaptive_total = sum(c["adaptive"]["games_to_target"] or 0 for c in configs if c["saving"] is not None)
    savings = [c["saving"] for c in configs if c["saving"] is not None]
    coverages = [c[k]["coverage"] for c in configs for k in ("fixed", "adaptive") if c[k]["coverage"] is not None]
    table = [
        {
            "models": c["models"],
            "shape": c["shape"],
            "fixed_games": c["fixed"]["games_to_target"],
            "adaptive_games": c["adaptive"]["games_to_target"],
            "saving": c["saving"],
            "fixed_coverage": c["fixed"]["coverage"],
            "adaptive_coverage": c["adaptive"]["coverage"],
            "fixed_coverage_at_budget": c["fixed"]["coverage_at_budget"],
            "adaptive_coverage_at_budget": c["adaptive"]["coverage_at_budget"],
            f"saving_at_tau_{args.high_tau:g}": c[f"saving_at_tau_{args.high_tau:g}"],
            "meets_saving": c["saving"] is not None and c["saving"] >= TARGET_SAVING,
            "meets_coverage": c["adaptive"]["coverage"] is not None
            and min(c["adaptive"]["coverage"], c["adaptive"]["coverage_at_budget"]) >= TARGET_COVERAGE,
        }
        for c in configs
    ]
    import json

    from _common import RESULTS

    if narrow:
        section = {
            "round_share": args.round_share,
            "table": table,
            "configs": configs,
            "seeds": args.seeds,
            "target_tau": args.target_tau,
            "wall_s": round(wall, 1),
            "load_avg_before": load_before,
            "load_avg_after": load_average(),
        }
        print(f"wrote {write_real(section, 'narrow_rounds')}", file=sys.stderr)
        return 0
    # the real sections (`--real`) and the narrow rounds are measured apart: a synthetic run keeps them
    path = RESULTS / "adaptive.json"
    kept = (
        {k: v for k, v in json.loads(path.read_text()).items() if k.startswith("real_") or k == "narrow_rounds"}
        if path.exists()
        else {}
    )
    write_result(
        "adaptive",
        **kept,
        metric=f"games to reach Kendall tau {args.target_tau:g} to the true order (seed mean), adaptive schedule, "
        "summed over the configurations where both schedules reach it",
        value=round(adaptive_total, 1),
        unit="games",
        target=f">= {TARGET_SAVING:.0%} fewer games than the fixed schedule at equal accuracy, per shape and field "
        f"size, with rank-interval coverage >= {TARGET_COVERAGE:.0%}",
        baseline={
            "description": "the fixed schedule (balanced random tables each round, blind to results): the same fields, "
            "shapes, seeds and rounds, in the same run",
            "unit": "games",
            "value": round(fixed_total, 1),
        },
        saving_overall=round(1.0 - adaptive_total / fixed_total, 3) if fixed_total else None,
        saving_min=min(savings) if savings else None,
        saving_median=float(np.median(savings)) if savings else None,
        coverage_min=min(coverages) if coverages else None,
        meets_target=bool(all(row["meets_saving"] and row["meets_coverage"] for row in table)),
        table=table,
        configs=configs,
        seeds=args.seeds,
        target_tau=args.target_tau,
        passes=args.passes,
        resamples=args.resamples,
        games_per_model_budget=GAMES_PER_MODEL,
        rating_params={k: getattr(PARAMS, k) for k in ("mu", "sigma", "beta", "tau", "draw_probability")},
        plots=plots,
        wall_s=round(wall, 1),
        **run_conditions(load_before),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
