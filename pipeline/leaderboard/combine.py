"""Per-benchmark ratings with rank intervals, and the combined rating over benchmarks.

The combined rating (`combined.method`): `joint` (the default), one Bradley-Terry fit over every
benchmark's rated games with each benchmark weighted equally (pipeline/core/rating/joint.py,
docs/ratings.md): models that played every combined benchmark are ranked first, the others are
"provisional" and ranked after them. `mean_percentile`: the earlier board, described below.

Rank intervals come from the benchmark (its bootstrap `trueskill_rank_lo/hi`) when it gives them.
Otherwise they are derived from rating intervals (bootstrap `mu_lo/mu_hi`, else
mu +/- z * sigma): a model's best possible rank counts only the models whose whole interval lies
above its own; its worst counts every model not wholly below it.

Each benchmark's ratings come from its metrics.json, read as the metrics record
(pipeline/core/artifacts/metrics_record.py): a file that is not one stops the build, naming the file,
the model and the key.

Honest uncertainty: an interval counts only when `pipeline.core.rating.multipass.interval_settled` says
so, from the evidence the record gives (each model's rated `games` and the `resamples`): a bootstrap
of at least MIN_SETTLED_RESAMPLES resamples over at least MIN_SETTLED_GAMES games per model.
Otherwise (no bootstrap, a few games) the
model's rank interval is the whole field, it is marked "unsettled", and its rating interval does
not narrow anyone else's rank interval.

Mean percentile (`mean_percentile`): the mean over the benchmarks a model played (with at least two models rated) of
its percentile rank, 100 * (n - rank) / (n - 1): 100 = first, 0 = last. The score interval uses
the same formula on the rank interval's ends; combined rank intervals follow from score intervals.
A combined entry is settled when every benchmark rating behind it is. Two models whose rank
intervals overlap are not separable; "separable" is said only of two settled models whose
intervals do not overlap (`separation`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from pipeline.core.artifacts.metrics_record import DIGITS, MetricsRecord, MetricValue, rounded
from pipeline.core.rating import MIN_SETTLED_GAMES, MIN_SETTLED_RESAMPLES
from pipeline.core.rating.joint import JointSettings, joint_fit, kendall_tau
from pipeline.core.rating.multipass import (
    competition_ranks,
    evidence_text,
    interval_ranks,
    interval_settled,
    resamples_text,
    settled_rank_interval,
)

#: The rule in words, for the tables' notes and verdicts.
SETTLED_RULE = (
    f"a rank interval counts only from a bootstrap of at least {MIN_SETTLED_RESAMPLES} resamples "
    f"over at least {MIN_SETTLED_GAMES} games per model"
)
SETTLED_NEEDS = f"needs {MIN_SETTLED_GAMES}+ games per model and {MIN_SETTLED_RESAMPLES}+ resamples"


@dataclass
class Rating:
    model: str
    mu: float
    sigma: float
    mu_lo: float | None
    mu_hi: float | None
    games: int  # its rated games on the benchmark (the metrics record's one definition)
    resamples: int  # bootstrap resamples behind the intervals (0: no bootstrap)
    rank: int = 0
    rank_lo: int = 0
    rank_hi: int = 0
    interval_source: str = ""  # "bootstrap ranks" | "bootstrap ratings" | "mu ± z·sigma"
    # the rating interval the rank interval was derived from (bootstrap, else mu +/- z sigma)
    interval: tuple[float, float] | None = None
    settled: bool = False  # interval_settled(games, resamples) with a bootstrap interval
    # what a chart draws: the rating interval when settled, else TrueSkill's own mu +/- z sigma
    chart_interval: tuple[float, float] | None = None

    @property
    def evidence(self) -> str:
        return evidence_text(self.games, self.resamples)


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

    @property
    def unsettled(self) -> list[str]:
        return [model for model, rating in self.ratings.items() if not rating.settled]

    def evidence(self) -> str:
        """The evidence behind the board's intervals, e.g. "1–2 games per model, 20 resamples"."""
        games = sorted({r.games for r in self.ratings.values()})
        played = (f"{games[0]}" if len(games) == 1 else f"{games[0]}–{games[-1]}") + " games per model"
        resamples = sorted({r.resamples for r in self.ratings.values()})
        if len(resamples) == 1:
            boot = resamples_text(resamples[0])
        else:
            boot = "/".join(str(v) for v in resamples) + " resamples"
        return f"{played}, {boot}"

    def settled_note(self) -> str:
        """One sentence: whether the board's rankings are settled, and the evidence."""
        if not self.ratings:
            return ""
        unsettled = self.unsettled
        if not unsettled:
            return f"Rankings settled ({self.evidence()})."
        return (
            f"Rankings not settled for {len(unsettled)} of {self.size} models ({self.evidence()}; "
            f"{SETTLED_NEEDS}): their rank interval is the whole field."
        )


@dataclass
class CombinedEntry:
    """One model's row of the combined board (either method)."""

    model: str
    score: float
    score_lo: float | None
    score_hi: float | None
    played: tuple[str, ...]  # the benchmarks it played, in board order
    rank: int = 0
    rank_lo: int = 0
    rank_hi: int = 0
    settled: bool = False
    games: int | None = None  # games behind the combined rating (joint: over every benchmark)
    provisional: bool = False  # it missed a benchmark the board combines
    missed: tuple[str, ...] = ()
    bot: bool = False  # a scripted bot (the models-only view hides it)
    unsettled: list[str] = field(default_factory=list)  # mean_percentile: benchmarks where its rating is unsettled

    @property
    def benchmarks(self) -> int:
        return len(self.played)


def _shown(value: MetricValue) -> float | int | None:
    """A headline metric's value as the board shows it: a number (a yes/no or a list is not one)."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def overlapping(entries: dict[str, Any], model: str) -> list[str]:
    """Other models whose rank interval overlaps this model's."""
    own = entries[model]
    return [
        name
        for name, other in entries.items()
        if name != model and other.rank_lo <= own.rank_hi and own.rank_lo <= other.rank_hi
    ]


def benchmark_board(name: str, metrics: MetricsRecord, headline_keys: list[str], z: float) -> BenchmarkBoard:
    """Ratings of one benchmark from its metrics record (a model without a rating is left out)."""
    ratings: dict[str, Rating] = {}
    given_ranks: dict[str, tuple[int, int, int]] = {}
    for model, (rated, row) in metrics.rated().items():
        ratings[model] = Rating(model, rated.mu, rated.sigma, rated.mu_lo, rated.mu_hi, row.games, rated.resamples)
        if rated.rank_lo is not None and rated.rank_hi is not None:
            given_ranks[model] = (rated.rank, rated.rank_lo, rated.rank_hi)
    n = len(ratings)
    if ratings and len(given_ranks) == len(ratings):
        source = "bootstrap ranks"
        for model, (rank, lo, hi) in given_ranks.items():
            rating = ratings[model]
            rating.settled = interval_settled(rating.games, rating.resamples)
            rating.rank = rank
            rating.rank_lo, rating.rank_hi = settled_rank_interval(rank, lo, hi, n, rating.settled)
    else:
        point_ranks = competition_ranks({m: r.mu for m, r in ratings.items()})
        bootstrap = all(r.mu_lo is not None and r.mu_hi is not None for r in ratings.values())
        if bootstrap:
            source = "bootstrap ratings"
            intervals = {m: (r.mu_lo, r.mu_hi) for m, r in ratings.items()}
        else:
            source = "mu ± z·sigma"
            intervals = {m: (r.mu - z * r.sigma, r.mu + z * r.sigma) for m, r in ratings.items()}
        for rating in ratings.values():
            # without a bootstrap nothing is settled, whatever the games
            rating.settled = bootstrap and interval_settled(rating.games, rating.resamples)
        # an unsettled interval says nothing: it spans everything, so it narrows no one's rank
        honest = {m: intervals[m] if ratings[m].settled else (-math.inf, math.inf) for m in ratings}
        bounds = interval_ranks(honest)  # type: ignore[arg-type]
        for model, rating in ratings.items():
            rating.interval = intervals[model]  # type: ignore[assignment]
            rating.rank = point_ranks[model]
            # the point rank lies inside its interval even when a bootstrap interval excludes mu
            rating.rank_lo, rating.rank_hi = settled_rank_interval(
                rating.rank, bounds[model][0], bounds[model][1], n, rating.settled
            )
    for rating in ratings.values():
        rating.interval_source = source
        bootstrap_interval = (
            (rating.mu_lo, rating.mu_hi) if rating.mu_lo is not None and rating.mu_hi is not None else None
        )
        own = (rating.mu - z * rating.sigma, rating.mu + z * rating.sigma)
        rating.chart_interval = (bootstrap_interval or rating.interval) if rating.settled else own
    ordered = dict(sorted(ratings.items(), key=lambda item: (item[1].rank, -item[1].mu, item[0])))
    headline = {
        model: {key: value for key in headline_keys if (value := _shown(row.metrics.get(key))) is not None}
        for model, row in metrics.models.items()
    }
    return BenchmarkBoard(name, ordered, headline, source)


def mean_percentile(boards: list[BenchmarkBoard]) -> dict[str, CombinedEntry]:
    """The `mean_percentile` method: mean percentile rank over the benchmarks each model played;
    sorted by combined rank."""
    points: dict[str, list[tuple[float, float, float]]] = {}
    unsettled: dict[str, list[str]] = {}
    for board in boards:
        if board.size < 2:
            continue  # a percentile needs at least two models
        for model, rating in board.ratings.items():
            points.setdefault(model, []).append(
                (board.percentile(rating.rank), board.percentile(rating.rank_hi), board.percentile(rating.rank_lo))
            )
            if not rating.settled:
                unsettled.setdefault(model, []).append(board.name)
    counted = [b.name for b in boards if b.size >= 2]
    entries = {
        model: CombinedEntry(
            model,
            score=sum(p[0] for p in values) / len(values),
            score_lo=sum(p[1] for p in values) / len(values),
            score_hi=sum(p[2] for p in values) / len(values),
            played=tuple(b for b in counted if model in next(x for x in boards if x.name == b).ratings),
            unsettled=unsettled.get(model, []),
            settled=not unsettled.get(model),
        )
        for model, values in points.items()
    }
    for entry in entries.values():
        entry.missed = tuple(b for b in counted if b not in entry.played)
        entry.provisional = bool(entry.missed)
    ranks = competition_ranks({m: round(e.score, 9) for m, e in entries.items()})
    bounds = interval_ranks({m: (e.score_lo, e.score_hi) for m, e in entries.items()})  # type: ignore[misc]
    for model, entry in entries.items():
        entry.rank = ranks[model]
        entry.rank_lo = min(bounds[model][0], entry.rank)
        entry.rank_hi = max(bounds[model][1], entry.rank)
    return dict(sorted(entries.items(), key=lambda item: (item[1].rank, item[0])))


def flat_leaderboard(
    boards: list[BenchmarkBoard], combined: dict[str, CombinedEntry]
) -> dict[str, dict[str, float | int]]:
    """`{model: {metric: number}}` with stable keys; a key absent means undefined for that model."""
    out: dict[str, dict[str, float | int | None]] = {}  # None: undefined, left out below
    for model, entry in combined.items():
        out.setdefault(model, {}).update(
            {
                "combined_score": rounded(entry.score),
                "combined_score_lo": rounded(entry.score_lo),
                "combined_score_hi": rounded(entry.score_hi),
                "combined_rank": entry.rank,
                "combined_rank_lo": entry.rank_lo,
                "combined_rank_hi": entry.rank_hi,
                "combined_benchmarks": entry.benchmarks,
                "combined_games": entry.games,
                "combined_not_separable": len(overlapping(combined, model)),
                "combined_settled": int(entry.settled),
                "combined_provisional": int(entry.provisional),
            }
        )
    for board in boards:
        prefix = board.name
        for model, rating in board.ratings.items():
            row = out.setdefault(model, {})
            row[f"{prefix}_trueskill_mu"] = rounded(rating.mu)
            row[f"{prefix}_trueskill_sigma"] = rounded(rating.sigma)
            for key, value in (("trueskill_mu_lo", rating.mu_lo), ("trueskill_mu_hi", rating.mu_hi)):
                if value is not None:
                    row[f"{prefix}_{key}"] = rounded(value)
            row[f"{prefix}_rank"] = rating.rank
            row[f"{prefix}_rank_lo"] = rating.rank_lo
            row[f"{prefix}_rank_hi"] = rating.rank_hi
            row[f"{prefix}_not_separable"] = len(board.not_separable(model))
            row[f"{prefix}_settled"] = int(rating.settled)
            row[f"{prefix}_trueskill_games"] = rating.games
            row[f"{prefix}_trueskill_resamples"] = rating.resamples
            if board.size >= 2:
                row[f"{prefix}_percentile"] = rounded(board.percentile(rating.rank))
        for model, values in board.headline.items():
            row = out.setdefault(model, {})
            for key, value in values.items():
                row[f"{prefix}_{key}"] = rounded(value)
    return {model: {k: v for k, v in sorted(row.items()) if v is not None} for model, row in sorted(out.items())}


def leaderboard_note(boards: list[BenchmarkBoard]) -> str:
    """One line over the whole leaderboard: are its rankings settled, and on what evidence."""
    rated = [b for b in boards if b.ratings]
    if not rated:
        return ""
    short = [b for b in rated if b.unsettled]
    if not short:
        return (
            f"Rankings settled: every benchmark rating rests on a bootstrap of at least {MIN_SETTLED_RESAMPLES} "
            f"resamples over at least {MIN_SETTLED_GAMES} games per model."
        )
    where = "; ".join(f"{b.name} ({len(b.unsettled)} of {b.size} models; {b.evidence()})" for b in short)
    return (
        f'Rankings not settled: {SETTLED_RULE}. Short of that: {where}. Rows marked "unsettled" take '
        "the whole field as their rank interval: their games do not order them."
    )


def mu_text(rating: Rating, digits: int = 2) -> str:
    """mu with its bootstrap interval, '11.79 [9.99, 12.80]', or '11.79' without one (an unsettled
    interval is shown too: the row's rank says it is unsettled)."""
    mu = f"{rating.mu:.{digits}f}"
    if rating.mu_lo is None or rating.mu_hi is None:
        return mu
    return f"{mu} [{rating.mu_lo:.{digits}f}, {rating.mu_hi:.{digits}f}]"


def rank_text(rank: int, lo: int, hi: int, settled: bool = True) -> str:
    """'3' when certain, else '3 (2–5)'; ' unsettled' follows when the interval is not settled
    (it is then the whole field: see `pipeline.core.rating.multipass.interval_settled`)."""
    text = str(rank) if lo == hi else f"{rank} ({lo}–{hi})"
    return text if settled else f"{text} unsettled"


def separation(
    a_settled: bool, b_settled: bool, a_interval: tuple[int, int], b_interval: tuple[int, int], evidence: str
) -> str:
    """The verdict on two models' rank intervals, with the evidence it rests on: "separable" only
    when both are settled and their intervals do not overlap."""
    if not (a_settled and b_settled):
        return f"not enough games to tell ({evidence}; {SETTLED_NEEDS})"
    overlap = a_interval[0] <= b_interval[1] and b_interval[0] <= a_interval[1]
    return f"not separable: rank intervals overlap ({evidence})" if overlap else f"separable ({evidence})"


def rating_separation(a: Rating | None, b: Rating | None) -> str:
    """`separation` of one benchmark's ratings; the evidence: each model's games and resamples."""
    if a is None or b is None:
        return "–"
    return separation(a.settled, b.settled, (a.rank_lo, a.rank_hi), (b.rank_lo, b.rank_hi), _pair_evidence(a, b))


def _pair_evidence(a: Rating, b: Rating) -> str:
    """e.g. "2 vs 1 games per model, 20 resamples"."""
    games = f"{a.games} vs {b.games} games per model"
    if a.resamples == b.resamples:
        boot = resamples_text(a.resamples)
    else:
        boot = f"{a.resamples} vs {b.resamples} resamples"
    return f"{games}, {boot}"


def combined_separation(a: CombinedEntry, b: CombinedEntry) -> str:
    """`separation` of two combined entries; the evidence: where their ratings are unsettled."""
    if a.settled and b.settled:
        evidence = "every rating behind both settled"
    elif a.unsettled or b.unsettled:  # mean_percentile: where the benchmark ratings are short
        evidence = "; ".join(f"{e.model} unsettled in {', '.join(e.unsettled)}" for e in (a, b) if e.unsettled)
    else:
        evidence = "; ".join(f"{e.model} {e.games} games" for e in (a, b) if not e.settled)
    return separation(a.settled, b.settled, (a.rank_lo, a.rank_hi), (b.rank_lo, b.rank_hi), evidence)


def joint_combined(
    events: Mapping[str, pl.DataFrame], settings: JointSettings, bots: frozenset[str] = frozenset()
) -> dict[str, CombinedEntry]:
    """The `joint` method: one Bradley-Terry fit over every benchmark's rated events
    (pipeline.core.rating.joint); full-coverage models first, then the provisional ones."""
    fit = joint_fit(events, settings)
    entries = {}
    for model, r in fit.ratings.items():
        played = tuple(b for b in fit.benchmarks if r.games_by_benchmark.get(b))
        entries[model] = CombinedEntry(
            model,
            score=r.score,
            score_lo=r.score_lo,
            score_hi=r.score_hi,
            played=played,
            rank=r.rank,
            rank_lo=r.rank_lo,
            rank_hi=r.rank_hi,
            settled=r.settled,
            games=r.games,
            provisional=r.provisional,
            missed=tuple(b for b in fit.benchmarks if b not in played),
            bot=model in bots,
        )
    return entries


@dataclass
class Calibration:
    """How well a board recovers the known order of the graded bots (`bot: graded`, by skill)."""

    board: str
    bots: list[tuple[str, float]]  # (model, skill), best first, those on the board
    tau: float | None  # Kendall's tau of the board's ratings against skill
    settled: bool  # every one of their rows settled
    separated: int  # neighbouring pairs whose rank intervals do not overlap

    @property
    def in_order(self) -> bool:
        return self.tau == 1.0

    def line(self) -> str:
        if self.tau is None:
            return (
                f"calibration ({self.board}): fewer than two of the roster's graded bots rated here, nothing to "
                "check (seat them in every benchmark: docs/ratings.md#calibration-graded-bots-with-a-known-order)"
            )
        order = " > ".join(f"{m} ({s:g})" for m, s in self.bots)
        verdict = "in their known order" if self.in_order else "NOT in their known order"
        settled = "all settled" if self.settled else "not all settled"
        return (
            f"calibration: {len(self.bots)} graded bots {verdict} (Kendall tau {self.tau:.2f}; {settled}; "
            f"{self.separated} of {len(self.bots) - 1} neighbouring pairs separated): {order}"
        )

    def as_metrics(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {"graded_bots": len(self.bots), "settled": int(self.settled)}
        if self.tau is not None:
            out.update(kendall_tau=round(self.tau, DIGITS), in_order=int(self.in_order), separated=self.separated)
        return out


def calibration(board: str, rows: Mapping[str, Any], skills: Mapping[str, float], score: str) -> Calibration:
    """`rows`: model -> a rated row with `score` (attribute), `settled`, `rank_lo`, `rank_hi`."""
    rated = sorted(((m, s) for m, s in skills.items() if m in rows), key=lambda ms: (-ms[1], ms[0]))
    tau = kendall_tau([m for m, _ in rated], {m: float(getattr(rows[m], score)) for m, _ in rated})
    separated = sum(1 for (a, _), (b, _) in zip(rated, rated[1:]) if rows[a].rank_hi < rows[b].rank_lo)
    return Calibration(board, rated, tau, all(bool(rows[m].settled) for m, _ in rated), separated)


def score_text(entry: CombinedEntry, digits: int = 0) -> str:
    """'1042 [987, 1101]': the score and its bootstrap interval (an unsettled row says so in its rank)."""
    score = f"{entry.score:.{digits}f}"
    if entry.score_lo is None or entry.score_hi is None:
        return score
    return f"{score} [{entry.score_lo:.{digits}f}, {entry.score_hi:.{digits}f}]"
