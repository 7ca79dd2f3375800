"""One rating over the games of several benchmarks: a joint Bradley–Terry fit.

Every benchmark writes the events its own TrueSkill rates as a table (`RatingEventsSchema`, one row
per player of an event, with the game the event came from). Each event breaks into pairwise
comparisons: players on different sides of an event are compared, the better rank winning (equal
ranks: half a win each). An event's comparisons share one unit of weight per player:
a pair of sides s, t of an event with n sides weighs 1 / ((n - 1) |s| |t|) per pair of players,
so a k-seat free-for-all gives each pair 1/(k-1), a 1v1 game 1, and a team match 1/(|a| |b|).

Every benchmark weighs the same: a comparison of benchmark b is multiplied by G / G_b, where G_b
is the number of games of b in the fit and G the mean over the benchmarks (lmarena's composite fit
divides each dataset's likelihood by its size; here the scale G keeps the total evidence as it
was). Each stage below counts its own games, so games of provisional models change no weight of
the first stage.

The model: P(i beats j) = 1 / (1 + exp(theta_j - theta_i)), with a Gaussian prior
N(0, prior_sd^2) on every theta (it keeps an undefeated player's rating finite), fitted by Newton's
method to the maximum a posteriori. Two stages keep the full-coverage models' order free of
anyone else: the models that played every combined benchmark ("complete") are fitted on the
comparisons among themselves alone; then every other model ("provisional") is fitted with the
complete models' ratings held fixed, on all of its comparisons. Intervals: a bootstrap that
resamples games within each benchmark, both stages refitted per resample.

Reported scores are on the Elo scale, `base + 400 / ln(10) * (theta - theta_ref)`: the reference is
the anchor model when one is named (its score is `base` in every resample, so published versions
share a scale), else the mean of the complete models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.core.artifacts.io import seed_from
from pipeline.core.artifacts.schemas import EVENTS_FILE, RatingEventsSchema, read_table, write_table
from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, TeamMatch
from pipeline.core.rating.multipass import competition_ranks, interval_ranks, settled_rank_interval

__all__ = [
    "EVENTS_FILE",
    "ELO_SCALE",
    "JointFit",
    "JointRating",
    "JointSettings",
    "RatingEventsSchema",
    "events_frame",
    "joint_fit",
    "kendall_tau",
    "read_rating_events",
    "write_rating_events",
]

#: Elo points per unit of theta (natural-log odds)
ELO_SCALE = 400.0 / math.log(10.0)


def _sides(event: RatingEvent) -> list[tuple[tuple[str, ...], int]]:
    """(players, rank) per side of an event."""
    if isinstance(event, FreeForAll):
        return [((player,), event.ranks[player]) for player in event.players]
    if isinstance(event, (Pairwise, TeamMatch)):
        a = (event.a,) if isinstance(event, Pairwise) else event.a
        b = (event.b,) if isinstance(event, Pairwise) else event.b
        ranks = {"a": (1, 2), "b": (2, 1), "draw": (1, 1)}[event.outcome]
        return [(a, ranks[0]), (b, ranks[1])]
    raise TypeError(f"not a rating event: {event!r}")


def events_frame(events: Sequence[tuple[str, RatingEvent]]) -> pl.DataFrame:
    """The rows of `RatingEventsSchema` for (game, event) pairs, in the given (rating) order."""
    rows: dict[str, list[object]] = {"game": [], "event": [], "player": [], "side": [], "rank": []}
    for index, (game, event) in enumerate(events):
        for side, (players, rank) in enumerate(_sides(event)):
            for player in players:
                rows["game"].append(str(game))
                rows["event"].append(index)
                rows["player"].append(player)
                rows["side"].append(side)
                rows["rank"].append(int(rank))
    return pl.DataFrame(
        rows, schema={"game": pl.String, "event": pl.Int64, "player": pl.String, "side": pl.Int64, "rank": pl.Int64}
    )


def write_rating_events(path: str | Path, events: Sequence[tuple[str, RatingEvent]]) -> pl.DataFrame:
    """The benchmark's rated events (game id, event), in rating order, as `RatingEventsSchema` at `path`."""
    return write_table(path, events_frame(events), RatingEventsSchema)


def read_rating_events(path: str | Path) -> pl.DataFrame:
    return read_table(path, RatingEventsSchema)


@dataclass(frozen=True)
class JointSettings:
    resamples: int = 200  # bootstrap resamples (0: none; intervals then say nothing)
    prior_sd: float = 2.0  # sd of the Gaussian prior on theta (natural-log odds)
    seed: int = 0
    base: float = 1000.0  # the reference's score
    anchor: str | None = None  # the model whose score is `base` in every fit
    # the hierarchical variant: sd of each per-benchmark deviation from the general skill (log-odds);
    # None: the plain fit, one skill for every benchmark
    deviation_sd: float | None = None
    min_games: int = 20  # settled needs this many games of the model ...
    min_resamples: int = 20  # ... and this many resamples


@dataclass
class Comparisons:
    """Pairwise comparisons as arrays: i beat j with score s (1, 0.5 a tie) at weight w, from game g."""

    players: list[str]
    benchmarks: list[str]
    i: np.ndarray
    j: np.ndarray
    score: np.ndarray
    weight: np.ndarray  # the event's share of a game
    bench: np.ndarray  # benchmark index
    game: np.ndarray  # global game index
    game_benchmark: np.ndarray  # per global game, its benchmark index
    games_of: dict[str, dict[str, int]]  # player -> benchmark -> games with a comparison


def _events(frame: pl.DataFrame) -> list[tuple[str, dict[int, tuple[list[str], int]]]]:
    """(game, side -> (players, rank)) per event, in event order (plain lists: a group_by per event
    costs a hundred times more on a paper-scale table)."""
    ordered = frame.sort("event", "side", "player")
    out: list[tuple[str, dict[int, tuple[list[str], int]]]] = []
    last = None
    for event, game, player, side, rank in zip(
        ordered["event"].to_list(),
        ordered["game"].to_list(),
        ordered["player"].to_list(),
        ordered["side"].to_list(),
        ordered["rank"].to_list(),
    ):
        if event != last:
            out.append((str(game), {}))
            last = event
        out[-1][1].setdefault(side, ([], rank))[0].append(player)
    return out


def comparisons(tables: Mapping[str, pl.DataFrame]) -> Comparisons:
    """Every benchmark's event table broken into weighted pairwise comparisons."""
    players = sorted({p for frame in tables.values() for p in frame["player"].to_list()})
    index = {p: k for k, p in enumerate(players)}
    benchmarks = [b for b, frame in tables.items() if frame.height]
    game_ids: list[tuple[int, str]] = []
    game_index: dict[tuple[int, str], int] = {}
    per_benchmark: list[list[tuple[int, int, float, float, int]]] = []
    games_of: dict[str, dict[str, set[str]]] = {}
    for b, name in enumerate(benchmarks):
        found: list[tuple[int, int, float, float, int]] = []
        for game, sides in _events(tables[name]):
            if len(sides) < 2:
                continue
            key = (b, game)
            if key not in game_index:
                game_index[key] = len(game_ids)
                game_ids.append(key)
            g = game_index[key]
            share = 1.0 / (len(sides) - 1)
            for (members_s, rank_s), (members_t, rank_t) in combinations(sides.values(), 2):
                pair_weight = share / (len(members_s) * len(members_t))
                result = 1.0 if rank_s < rank_t else 0.0 if rank_s > rank_t else 0.5
                for x in members_s:
                    for y in members_t:
                        if x == y:
                            continue
                        found.append((index[x], index[y], result, pair_weight, g))
                        for p in (x, y):
                            games_of.setdefault(p, {}).setdefault(name, set()).add(game)
        per_benchmark.append(found)
    game_benchmark = np.array([b for b, _ in game_ids], dtype=np.int64)
    flat = [(*c, b) for b, found in enumerate(per_benchmark) for c in found]
    arr = np.array([r[:5] for r in flat], dtype=float).reshape(-1, 5)
    return Comparisons(
        players=players,
        benchmarks=benchmarks,
        i=arr[:, 0].astype(np.int64),
        j=arr[:, 1].astype(np.int64),
        score=arr[:, 2],
        weight=arr[:, 3],
        bench=np.array([r[5] for r in flat], dtype=np.int64),
        game=arr[:, 4].astype(np.int64),
        game_benchmark=game_benchmark,
        games_of={p: {b: len(g) for b, g in by.items()} for p, by in games_of.items()},
    )


def _newton(
    wins: np.ndarray, totals: np.ndarray, free: np.ndarray, theta: np.ndarray, prior_sd: float, prior_mean: float
) -> np.ndarray:
    """MAP thetas of the `free` players, the others held at `theta`. `wins[i, j]`: weighted score of
    i against j; `totals[i, j]`: weighted comparisons of i and j (symmetric)."""
    theta = theta.copy()
    idx = np.flatnonzero(free)
    if idx.size == 0:
        return theta
    precision = 1.0 / prior_sd**2
    for _ in range(100):
        diff = theta[:, None] - theta[None, :]
        p = 1.0 / (1.0 + np.exp(-diff))
        grad = (wins - totals * p).sum(axis=1) - precision * (theta - prior_mean)
        curvature = totals * p * (1.0 - p)
        hessian = -curvature
        np.fill_diagonal(hessian, 0.0)
        np.fill_diagonal(hessian, -hessian.sum(axis=1))
        hessian += precision * np.eye(len(theta))
        sub = hessian[np.ix_(idx, idx)]
        step = np.linalg.solve(sub, grad[idx])
        step = np.clip(step, -5.0, 5.0)
        theta[idx] += step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return theta


def _laplacian(totals: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The observed information of one benchmark's comparisons: a graph Laplacian."""
    curvature = totals * p * (1.0 - p)
    return np.diag(curvature.sum(axis=1)) - curvature


def _newton_hierarchical(
    wins: np.ndarray,
    totals: np.ndarray,
    free: np.ndarray,
    general: np.ndarray,
    prior_sd: float,
    prior_mean: float,
    deviation_sd: float,
) -> np.ndarray:
    """MAP general skills of the `free` players under the hierarchical model: in benchmark b a
    player plays at g_i + d_ib, each deviation d_ib with the prior N(0, deviation_sd^2) (shrunk
    toward zero), g_i with N(prior_mean, prior_sd^2). `wins`, `totals`: (benchmarks, n, n). The held
    players keep their general skill; their deviations are fitted with the free ones'."""
    b_count, n, _ = wins.shape
    g = general.copy()
    d = np.zeros((b_count, n))
    free_d = np.ones((b_count, n), dtype=bool)  # every deviation is free: a held player's g stays
    idx = np.concatenate([np.flatnonzero(free), n + np.flatnonzero(free_d.ravel())])
    if not free.any():
        return g
    g_precision, d_precision = 1.0 / prior_sd**2, 1.0 / deviation_sd**2
    for _ in range(100):
        grad_g = -g_precision * (g - prior_mean)
        grad_d = -d_precision * d
        hessian = np.zeros((n * (b_count + 1), n * (b_count + 1)))
        hessian[:n, :n] = g_precision * np.eye(n)
        for b in range(b_count):
            skill = g + d[b]
            p = 1.0 / (1.0 + np.exp(-(skill[:, None] - skill[None, :])))
            grad = (wins[b] - totals[b] * p).sum(axis=1)
            grad_g = grad_g + grad
            grad_d[b] += grad
            lap = _laplacian(totals[b], p)
            block = slice(n * (b + 1), n * (b + 2))
            hessian[:n, :n] += lap
            hessian[:n, block] = lap
            hessian[block, :n] = lap
            hessian[block, block] = lap + d_precision * np.eye(n)
        gradient = np.concatenate([grad_g, grad_d.ravel()])
        step = np.clip(np.linalg.solve(hessian[np.ix_(idx, idx)], gradient[idx]), -5.0, 5.0)
        full = np.zeros(n * (b_count + 1))
        full[idx] = step
        g += full[:n]
        d += full[n:].reshape(b_count, n)
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return g


def benchmark_weights(data: Comparisons, keep: np.ndarray) -> np.ndarray:
    """Per benchmark, G / G_b over the games with a comparison between players that pass `keep`:
    every benchmark then weighs the same, and G (the mean of G_b) keeps the evidence at its size."""
    mask = keep[data.i] & keep[data.j]
    games = np.zeros(len(data.game_benchmark), dtype=bool)
    games[data.game[mask]] = True
    counts = np.bincount(data.game_benchmark[games], minlength=len(data.benchmarks)).astype(float)
    if not (counts > 0).any():
        return np.zeros(len(data.benchmarks))
    mean = float(counts[counts > 0].mean())
    return np.where(counts > 0, mean / np.where(counts > 0, counts, 1.0), 0.0)


def _matrices(data: Comparisons, multiplicity: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(wins, totals), each (benchmarks, n, n), over the comparisons whose players both pass `keep`,
    games counted `multiplicity` times, each benchmark weighted by `benchmark_weights` over those
    comparisons."""
    n, b_count = len(data.players), len(data.benchmarks)
    mask = keep[data.i] & keep[data.j]
    weight = data.weight[mask] * benchmark_weights(data, keep)[data.bench[mask]] * multiplicity[data.game[mask]]
    i, j, b, score = data.i[mask], data.j[mask], data.bench[mask], data.score[mask]
    flat_ij, flat_ji = (b * n + i) * n + j, (b * n + j) * n + i
    size = b_count * n * n
    wins = np.bincount(flat_ij, weights=weight * score, minlength=size) + np.bincount(
        flat_ji, weights=weight * (1.0 - score), minlength=size
    )
    totals = np.bincount(flat_ij, weights=weight, minlength=size) + np.bincount(flat_ji, weights=weight, minlength=size)
    return wins.reshape(b_count, n, n), totals.reshape(b_count, n, n)


def _stage(
    data: Comparisons,
    multiplicity: np.ndarray,
    keep: np.ndarray,
    free: np.ndarray,
    theta: np.ndarray,
    mean: float,
    settings: JointSettings,
) -> np.ndarray:
    wins, totals = _matrices(data, multiplicity, keep)
    if settings.deviation_sd is None:
        return _newton(wins.sum(axis=0), totals.sum(axis=0), free, theta, settings.prior_sd, mean)
    return _newton_hierarchical(wins, totals, free, theta, settings.prior_sd, mean, settings.deviation_sd)


def _fit(data: Comparisons, complete: np.ndarray, multiplicity: np.ndarray, settings: JointSettings) -> np.ndarray:
    """Both stages: the complete players among themselves, then everyone else with them fixed."""
    n = len(data.players)
    theta = np.zeros(n)
    if complete.any():
        theta = _stage(data, multiplicity, complete, complete, theta, 0.0, settings)
    rest = ~complete
    if rest.any():
        mean = float(theta[complete].mean()) if complete.any() else 0.0
        theta[rest] = mean
        theta = _stage(data, multiplicity, np.ones(n, dtype=bool), rest, theta, mean, settings)
    return theta


@dataclass
class JointRating:
    model: str
    score: float
    score_lo: float | None
    score_hi: float | None
    games: int  # games with at least one comparison, over every benchmark
    games_by_benchmark: dict[str, int]
    complete: bool  # played every combined benchmark
    settled: bool
    rank: int = 0
    rank_lo: int = 0
    rank_hi: int = 0

    @property
    def provisional(self) -> bool:
        return not self.complete


@dataclass
class JointFit:
    benchmarks: list[str]
    ratings: dict[str, JointRating]  # best first: complete models, then provisional ones
    resamples: int
    weights: dict[str, float] = field(default_factory=dict)  # per benchmark, a comparison's multiplier
    anchor: str | None = None


def _rank_block(ratings: list[JointRating], offset: int) -> None:
    """Competition ranks by score within a block, from `offset` + 1, with the benchmarks' rank
    intervals: a settled score interval narrows ranks, an unsettled one spans the block."""
    points = competition_ranks({r.model: round(r.score, 9) for r in ratings})
    counts = {r.model: r.settled and r.score_lo is not None and r.score_hi is not None for r in ratings}
    honest = {r.model: (r.score_lo, r.score_hi) if counts[r.model] else (-math.inf, math.inf) for r in ratings}
    bounds = interval_ranks(honest)  # type: ignore[arg-type]
    for r in ratings:
        lo, hi = settled_rank_interval(points[r.model], *bounds[r.model], len(ratings), counts[r.model])
        r.rank, r.rank_lo, r.rank_hi = offset + points[r.model], offset + lo, offset + hi


def joint_fit(tables: Mapping[str, pl.DataFrame], settings: JointSettings) -> JointFit:
    """The joint rating of every player of `tables` (benchmark -> its `RatingEventsSchema` table)."""
    data = comparisons(tables)
    n = len(data.players)
    if n == 0:
        return JointFit(list(data.benchmarks), {}, settings.resamples, anchor=settings.anchor)
    combined = set(data.benchmarks)
    complete = np.array([set(data.games_of.get(p, {})) >= combined for p in data.players], dtype=bool)
    anchor = settings.anchor if settings.anchor in data.players else None
    reference = complete if complete.any() else np.ones(n, dtype=bool)

    def scores(theta: np.ndarray) -> np.ndarray:
        ref = theta[data.players.index(anchor)] if anchor is not None else float(theta[reference].mean())
        return settings.base + ELO_SCALE * (theta - ref)

    n_games = len(data.game_benchmark)
    point = scores(_fit(data, complete, np.ones(n_games), settings))
    draws = np.empty((settings.resamples, n))
    rng = np.random.default_rng(seed_from("joint-rating", settings.seed, sorted(data.benchmarks)))
    games_in = [np.flatnonzero(data.game_benchmark == b) for b in range(len(data.benchmarks))]
    for k in range(settings.resamples):
        multiplicity = np.zeros(n_games)
        for members in games_in:
            picked = members[rng.integers(0, members.size, size=members.size)]
            multiplicity += np.bincount(picked, minlength=n_games)
        draws[k] = scores(_fit(data, complete, multiplicity, settings))
    lo = np.quantile(draws, 0.025, axis=0) if settings.resamples else None
    hi = np.quantile(draws, 0.975, axis=0) if settings.resamples else None
    ratings = []
    for k, player in enumerate(data.players):
        by_benchmark = dict(sorted(data.games_of.get(player, {}).items()))
        games = sum(by_benchmark.values())
        ratings.append(
            JointRating(
                model=player,
                score=float(point[k]),
                score_lo=None if lo is None else float(lo[k]),
                score_hi=None if hi is None else float(hi[k]),
                games=games,
                games_by_benchmark=by_benchmark,
                complete=bool(complete[k]),
                settled=settings.resamples >= settings.min_resamples and games >= settings.min_games,
            )
        )
    full = [r for r in ratings if r.complete]
    partial = [r for r in ratings if not r.complete]
    _rank_block(full, 0)
    _rank_block(partial, len(full))
    ordered = sorted(ratings, key=lambda r: (r.rank, -r.score, r.model))
    stage = complete if complete.any() else np.ones(n, dtype=bool)
    weights = {b: float(w) for b, w in zip(data.benchmarks, benchmark_weights(data, stage))}
    return JointFit(list(data.benchmarks), {r.model: r for r in ordered}, settings.resamples, weights, anchor)


def kendall_tau(order: Sequence[str], scores: Mapping[str, float]) -> float | None:
    """Kendall's tau-a between a known order (best first) and scores (higher better); None under two."""
    known = [m for m in order if m in scores]
    if len(known) < 2:
        return None
    concordant = discordant = 0
    for a, b in combinations(known, 2):  # a is known to be better than b
        gap = scores[a] - scores[b]
        concordant += gap > 0
        discordant += gap < 0
    pairs = len(known) * (len(known) - 1) // 2
    return (concordant - discordant) / pairs
