"""Per-benchmark ratings with rank intervals, and the combined score over benchmarks.

Rank intervals come from the benchmark (its bootstrap `trueskill_rank_lo/hi`) when it gives them.
Otherwise they are derived from rating intervals (bootstrap `mu_lo/mu_hi`, else
mu +/- z * sigma): a model's best possible rank counts only the models whose whole interval lies
above its own; its worst counts every model not wholly below it.

Combined score: the mean over the benchmarks a model played (with at least two models rated) of
its percentile rank, 100 * (n - rank) / (n - 1): 100 = first, 0 = last. The score interval uses
the same formula on the rank interval's ends; combined rank intervals follow from score intervals.
Two models whose rank intervals overlap are not separable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

DIGITS = 4


@dataclass
class Rating:
    model: str
    mu: float
    sigma: float | None
    mu_lo: float | None
    mu_hi: float | None
    rank: int = 0
    rank_lo: int = 0
    rank_hi: int = 0
    interval_source: str = ""  # "bootstrap ranks" | "bootstrap ratings" | "mu ± z·sigma" | "none"
    # the rating interval the rank interval was derived from (bootstrap, else mu +/- z sigma)
    interval: tuple[float, float] | None = None


@dataclass
class BenchmarkBoard:
    name: str
    ratings: dict[str, Rating]  # by model, sorted by rank
    headline: dict[str, dict[str, float]] = field(default_factory=dict)  # model -> key -> value
    interval_source: str = ""

    @property
    def size(self) -> int:
        return len(self.ratings)

    def percentile(self, rank: int) -> float:
        return 100.0 * (self.size - rank) / (self.size - 1)

    def not_separable(self, model: str) -> list[str]:
        return overlapping(self.ratings, model)


@dataclass
class CombinedEntry:
    model: str
    score: float
    score_lo: float
    score_hi: float
    benchmarks: int
    rank: int = 0
    rank_lo: int = 0
    rank_hi: int = 0


def _number(value: Any) -> float | int | None:
    """A finite number (ints stay ints), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return value
    return None if math.isnan(value) or math.isinf(value) else float(value)


def competition_ranks(values: dict[str, float]) -> dict[str, int]:
    """1 = highest value; equal values share the better rank."""
    return {name: 1 + sum(1 for other in values.values() if other > value) for name, value in values.items()}


def interval_ranks(intervals: dict[str, tuple[float, float]]) -> dict[str, tuple[int, int]]:
    """Best and worst rank each model can hold given the others' intervals."""
    n = len(intervals)
    out = {}
    for name, (lo, hi) in intervals.items():
        surely_above = sum(1 for o, (olo, _) in intervals.items() if o != name and olo > hi)
        surely_below = sum(1 for o, (_, ohi) in intervals.items() if o != name and ohi < lo)
        out[name] = (1 + surely_above, n - surely_below)
    return out


def overlapping(entries: dict[str, Any], model: str) -> list[str]:
    """Other models whose rank interval overlaps this model's."""
    own = entries[model]
    return [
        name for name, other in entries.items()
        if name != model and other.rank_lo <= own.rank_hi and own.rank_lo <= other.rank_hi
    ]


def benchmark_board(name: str, metrics: dict[str, dict[str, Any]], headline_keys: list[str], z: float) -> BenchmarkBoard:
    """Ratings of one benchmark from its metrics.json (the contract's trueskill_* keys, or older ones)."""
    ratings: dict[str, Rating] = {}
    given_ranks: dict[str, tuple[int, int, int]] = {}
    for model, row in metrics.items():
        mu = _number(row.get("trueskill_mu", row.get("mu")))
        if mu is None:
            continue
        sigma = _number(row.get("trueskill_sigma", row.get("sigma")))
        lo = _number(row.get("trueskill_mu_lo", row.get("mu_lo")))
        hi = _number(row.get("trueskill_mu_hi", row.get("mu_hi")))
        ratings[model] = Rating(model, mu, sigma, lo, hi)
        ranks = [row.get(k) for k in ("trueskill_rank", "trueskill_rank_lo", "trueskill_rank_hi")]
        if all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
            given_ranks[model] = (ranks[0], ranks[1], ranks[2])
    if ratings and len(given_ranks) == len(ratings):
        source = "bootstrap ranks"
        for model, (rank, lo, hi) in given_ranks.items():
            ratings[model].rank, ratings[model].rank_lo, ratings[model].rank_hi = rank, lo, hi
    else:
        ranks = competition_ranks({m: r.mu for m, r in ratings.items()})
        if all(r.mu_lo is not None and r.mu_hi is not None for r in ratings.values()):
            source = "bootstrap ratings"
            intervals = {m: (r.mu_lo, r.mu_hi) for m, r in ratings.items()}
        elif all(r.sigma is not None for r in ratings.values()):
            source = "mu ± z·sigma"
            intervals = {m: (r.mu - z * r.sigma, r.mu + z * r.sigma) for m, r in ratings.items()}
        else:
            source = "none"
            intervals = {m: (r.mu, r.mu) for m, r in ratings.items()}
        bounds = interval_ranks(intervals)  # type: ignore[arg-type]
        for model, rating in ratings.items():
            rating.interval = intervals[model]  # type: ignore[assignment]
            rating.rank = ranks[model]
            # the point rank lies inside its interval even when a bootstrap interval excludes mu
            rating.rank_lo = min(bounds[model][0], rating.rank)
            rating.rank_hi = max(bounds[model][1], rating.rank)
    for rating in ratings.values():
        rating.interval_source = source
    ordered = dict(sorted(ratings.items(), key=lambda item: (item[1].rank, -item[1].mu, item[0])))
    headline = {
        model: {key: value for key in headline_keys if (value := _number(metrics[model].get(key))) is not None}
        for model in metrics
    }
    return BenchmarkBoard(name, ordered, headline, source)


def combine(boards: list[BenchmarkBoard]) -> dict[str, CombinedEntry]:
    """Mean percentile rank over the benchmarks each model played; sorted by combined rank."""
    points: dict[str, list[tuple[float, float, float]]] = {}
    for board in boards:
        if board.size < 2:
            continue  # a percentile needs at least two models
        for model, rating in board.ratings.items():
            points.setdefault(model, []).append(
                (board.percentile(rating.rank), board.percentile(rating.rank_hi), board.percentile(rating.rank_lo))
            )
    entries = {
        model: CombinedEntry(
            model,
            score=sum(p[0] for p in values) / len(values),
            score_lo=sum(p[1] for p in values) / len(values),
            score_hi=sum(p[2] for p in values) / len(values),
            benchmarks=len(values),
        )
        for model, values in points.items()
    }
    ranks = competition_ranks({m: round(e.score, 9) for m, e in entries.items()})
    bounds = interval_ranks({m: (e.score_lo, e.score_hi) for m, e in entries.items()})
    for model, entry in entries.items():
        entry.rank = ranks[model]
        entry.rank_lo = min(bounds[model][0], entry.rank)
        entry.rank_hi = max(bounds[model][1], entry.rank)
    return dict(sorted(entries.items(), key=lambda item: (item[1].rank, item[0])))


def _round(value: float | int | None) -> float | int | None:
    return value if value is None or isinstance(value, int) else round(value, DIGITS)


def flat_leaderboard(boards: list[BenchmarkBoard], combined: dict[str, CombinedEntry]) -> dict[str, dict[str, float | int]]:
    """`{model: {metric: number}}` with stable keys; a key absent means undefined for that model."""
    out: dict[str, dict[str, float | int]] = {}
    for model, entry in combined.items():
        out.setdefault(model, {}).update({
            "combined_score": _round(entry.score), "combined_score_lo": _round(entry.score_lo),
            "combined_score_hi": _round(entry.score_hi), "combined_rank": entry.rank,
            "combined_rank_lo": entry.rank_lo, "combined_rank_hi": entry.rank_hi,
            "combined_benchmarks": entry.benchmarks,
            "combined_not_separable": len(overlapping(combined, model)),
        })
    for board in boards:
        prefix = board.name
        for model, rating in board.ratings.items():
            row = out.setdefault(model, {})
            row[f"{prefix}_trueskill_mu"] = _round(rating.mu)
            for key, value in (("trueskill_sigma", rating.sigma), ("trueskill_mu_lo", rating.mu_lo),
                               ("trueskill_mu_hi", rating.mu_hi)):
                if value is not None:
                    row[f"{prefix}_{key}"] = _round(value)
            row[f"{prefix}_rank"] = rating.rank
            row[f"{prefix}_rank_lo"] = rating.rank_lo
            row[f"{prefix}_rank_hi"] = rating.rank_hi
            row[f"{prefix}_not_separable"] = len(board.not_separable(model))
            if board.size >= 2:
                row[f"{prefix}_percentile"] = _round(board.percentile(rating.rank))
        for model, values in board.headline.items():
            row = out.setdefault(model, {})
            for key, value in values.items():
                row[f"{prefix}_{key}"] = _round(value)
    return {model: {k: v for k, v in sorted(row.items()) if v is not None} for model, row in sorted(out.items())}


def rank_text(rank: int, lo: int, hi: int) -> str:
    """'3' when certain, else '3 (2-5)'."""
    return str(rank) if lo == hi else f"{rank} ({lo}–{hi})"
