"""Reference TrueSkill rating core, built on the `trueskill` package.

This module is the slow, obviously-correct baseline: every update is one call to
`trueskill.TrueSkill.rate`. Faster implementations elsewhere are checked against it, so
its orderings (player order inside a game, event order in each pass, bootstrap draws)
are all spelled out and depend only on the inputs and an explicit seed; no global
random state is touched.

Ties and ``draw_probability == 0``: with the default (pure Python) backend, trueskill
does not refuse a tie when the draw probability is zero. Its approximate inverse normal
CDF gives ``ppf(0.5) ~ 3.8e-8`` instead of 0, so the draw margin is a tiny positive
number, the truncated-Gaussian update divides two nearly equal CDF values, and the result
is numerically meaningless (two fresh players who tie come out with sigma ~9.59, larger
than the prior 8.33, which a Bayesian update can never produce; repeated ties keep
inflating it). With the exact ``mpmath`` backend the same call raises
``FloatingPointError``. A tie is impossible under a zero draw probability anyway, so
`apply_event` raises ValueError for ties in that case instead of returning bad numbers.
Very small positive draw probabilities (below about 1e-5) are numerically unreliable in
trueskill for the same reason; they are allowed but not recommended.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import polars as pl
import trueskill

__all__ = [
    "BOOTSTRAP_TAG",
    "FreeForAll",
    "Pairwise",
    "RatingEvent",
    "RatingParams",
    "apply_event",
    "bootstrap_intervals",
    "conservative",
    "event_counts",
    "multi_pass",
    "pass_orders",
    "rate_sequence",
]

#: Integer tag mixed into the bootstrap seed so resample draws never coincide with the
#: pass-order streams (which use ``[seed, p]``). Resample b uses
#: ``numpy.random.default_rng([seed, BOOTSTRAP_TAG, b])``.
BOOTSTRAP_TAG: int = 0xB007


@dataclass(frozen=True)
class RatingParams:
    """TrueSkill environment settings; the defaults are trueskill's own defaults."""

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    tau: float = 25.0 / 300.0
    draw_probability: float = 0.10

    def __post_init__(self) -> None:
        # Fail at construction rather than deep inside a rating pass.
        for name in ("mu", "sigma", "beta", "tau", "draw_probability"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"RatingParams.{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"RatingParams.{name} must be finite, got {value!r}")
            # Store plain floats so equality, hashing and repr do not depend on the input type.
            object.__setattr__(self, name, float(value))
        if self.sigma <= 0:
            raise ValueError(f"RatingParams.sigma must be > 0, got {self.sigma!r}")
        if self.beta <= 0:
            raise ValueError(f"RatingParams.beta must be > 0, got {self.beta!r}")
        if self.tau < 0:
            raise ValueError(f"RatingParams.tau must be >= 0, got {self.tau!r}")
        if not 0.0 <= self.draw_probability < 1.0:
            raise ValueError(
                f"RatingParams.draw_probability must be in [0, 1), got {self.draw_probability!r}"
            )

    def env(self) -> trueskill.TrueSkill:
        """A fresh trueskill environment with these settings (default backend)."""
        return trueskill.TrueSkill(
            mu=self.mu,
            sigma=self.sigma,
            beta=self.beta,
            tau=self.tau,
            draw_probability=self.draw_probability,
        )

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> RatingParams:
        """Build from a config mapping; unknown keys are errors so typos are not ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        for key in d:
            if key not in known:
                raise ValueError(
                    f"unknown rating parameter {key!r}; expected some of {sorted(known)}"
                )
        return cls(**{key: d[key] for key in d})


def _as_rank(player: str, value: Any) -> int:
    """Ranks must be true integers so that 'equal rank' means exactly a tie."""
    if isinstance(value, bool):
        raise ValueError(f"rank for {player!r} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"rank for {player!r} must be an integer, got {value!r}") from None


@dataclass(frozen=True)
class FreeForAll:
    """One game among several players: player -> rank, lower is better, equal ranks tie."""

    ranks: Mapping[str, int]

    def __post_init__(self) -> None:
        if len(self.ranks) < 2:
            raise ValueError(f"a FreeForAll needs at least 2 players, got {len(self.ranks)}")
        cleaned: dict[str, int] = {}
        for player, rank in self.ranks.items():
            if not isinstance(player, str) or not player:
                raise ValueError(f"player names must be non-empty strings, got {player!r}")
            cleaned[player] = _as_rank(player, rank)
        # Own a private copy so later mutation of the caller's dict cannot change the event.
        object.__setattr__(self, "ranks", cleaned)

    @property
    def players(self) -> tuple[str, ...]:
        """Players in sorted name order (the order used for the trueskill call)."""
        return tuple(sorted(self.ranks))

    @property
    def has_tie(self) -> bool:
        return len(set(self.ranks.values())) < len(self.ranks)


@dataclass(frozen=True)
class Pairwise:
    """One 1v1 game between `a` and `b`; `outcome` names the winner or says "draw"."""

    a: str
    b: str
    outcome: Literal["a", "b", "draw"]

    def __post_init__(self) -> None:
        for name in (self.a, self.b):
            if not isinstance(name, str) or not name:
                raise ValueError(f"player names must be non-empty strings, got {name!r}")
        if self.a == self.b:
            raise ValueError(f"a Pairwise game needs two different players, got {self.a!r} twice")
        if self.outcome not in ("a", "b", "draw"):
            raise ValueError(f"Pairwise outcome must be 'a', 'b' or 'draw', got {self.outcome!r}")

    @property
    def players(self) -> tuple[str, ...]:
        return (self.a, self.b)

    @property
    def has_tie(self) -> bool:
        return self.outcome == "draw"


RatingEvent: TypeAlias = FreeForAll | Pairwise

_PAIRWISE_RANKS: dict[str, list[int]] = {"a": [0, 1], "b": [1, 0], "draw": [0, 0]}


def apply_event(
    env: trueskill.TrueSkill, ratings: dict[str, trueskill.Rating], event: RatingEvent
) -> None:
    """Update `ratings` in place with one game; unseen players start at the env's prior.

    FreeForAll: one ``env.rate`` call with one single-player team per player, players in
    sorted name order so the result never depends on dict insertion order.
    Pairwise: ``env.rate([(ra,), (rb,)], ranks=...)`` with ranks [0, 1], [1, 0] or [0, 0].

    Raises ValueError for a tie when ``env.draw_probability == 0`` (see the module
    docstring: trueskill would otherwise return meaningless numbers). On any error the
    ratings are left untouched.
    """
    if event.has_tie and env.draw_probability <= 0:
        raise ValueError(
            f"{event!r} contains a tie, but draw_probability is 0: a tie is impossible under "
            "that model and trueskill's update for it is numerically meaningless; "
            "use draw_probability > 0 (e.g. the default 0.10) when games can tie"
        )
    if isinstance(event, FreeForAll):
        players = list(event.players)
        ranks = [event.ranks[p] for p in players]
    elif isinstance(event, Pairwise):
        players = [event.a, event.b]
        ranks = _PAIRWISE_RANKS[event.outcome]
    else:
        raise TypeError(f"not a rating event: {event!r}")
    teams = [(ratings[p] if p in ratings else env.create_rating(),) for p in players]
    new = env.rate(teams, ranks=ranks)
    for player, (rating,) in zip(players, new):
        ratings[player] = rating


def rate_sequence(
    events: Iterable[RatingEvent], params: RatingParams
) -> dict[str, trueskill.Rating]:
    """One pass over `events` in the given order, from fresh priors."""
    env = params.env()
    ratings: dict[str, trueskill.Rating] = {}
    for event in events:
        apply_event(env, ratings, event)
    return ratings


def pass_orders(n_events: int, passes: int, seed: int) -> list[np.ndarray]:
    """Event orders for each pass: pass p is ``default_rng([seed, p]).permutation(n_events)``.

    Pass p's order depends only on (seed, p), never on `passes`, so the first k passes
    of a longer run are exactly a k-pass run. Any faster implementation must use these
    same orders to be comparable. `seed` must be a non-negative integer (numpy's rule for
    seed sequences).
    """
    if n_events < 0:
        raise ValueError(f"n_events must be >= 0, got {n_events}")
    if passes < 1:
        raise ValueError(f"passes must be >= 1, got {passes}")
    return [np.random.default_rng([seed, p]).permutation(n_events) for p in range(passes)]


def event_counts(events: Iterable[RatingEvent]) -> dict[str, int]:
    """How many events each player took part in."""
    counts: dict[str, int] = {}
    for event in events:
        for player in event.players:
            counts[player] = counts.get(player, 0) + 1
    return counts


_MULTI_PASS_SCHEMA: dict[str, Any] = {
    "player": pl.String,
    "mu": pl.Float64,
    "sigma": pl.Float64,
    "mu_sd": pl.Float64,
    "events": pl.Int64,
    "passes": pl.Int64,
}


def multi_pass(
    events: Sequence[RatingEvent], params: RatingParams, passes: int, seed: int
) -> pl.DataFrame:
    """Average ratings over several random event orders, since TrueSkill is order-dependent.

    For p in range(passes) the events are rated once in the order ``pass_orders(...)[p]``
    (a permutation from ``numpy.random.default_rng([seed, p])``). Per player the result
    holds the mean over passes of the final mu and sigma, `mu_sd` (the ddof=0 standard
    deviation over passes of the final mu, a measure of order sensitivity), `events`
    (games played) and `passes`. Rows are sorted by mu descending, then player ascending.
    """
    events = list(events)
    orders = pass_orders(len(events), passes, seed)
    counts = event_counts(events)
    players = sorted(counts)
    mus = np.empty((passes, len(players)), dtype=np.float64)
    sigmas = np.empty((passes, len(players)), dtype=np.float64)
    for p, order in enumerate(orders):
        final = rate_sequence((events[i] for i in order), params)
        for j, player in enumerate(players):
            mus[p, j] = final[player].mu
            sigmas[p, j] = final[player].sigma
    frame = pl.DataFrame(
        {
            "player": players,
            "mu": mus.mean(axis=0) if players else [],
            "sigma": sigmas.mean(axis=0) if players else [],
            "mu_sd": mus.std(axis=0, ddof=0) if players else [],
            "events": [counts[p] for p in players],
            "passes": [passes] * len(players),
        },
        schema=_MULTI_PASS_SCHEMA,
    )
    return frame.sort(["mu", "player"], descending=[True, False])


def bootstrap_intervals(
    events: Sequence[RatingEvent],
    params: RatingParams,
    passes: int,
    seed: int,
    resamples: int = 200,
    level: float = 0.95,
) -> pl.DataFrame:
    """Percentile bootstrap intervals for multi-pass mu, to show how much the data pins it.

    Resample b draws ``len(events)`` events with replacement using
    ``numpy.random.default_rng([seed, BOOTSTRAP_TAG, b])`` and runs
    ``multi_pass(resample, params, passes, seed)``. A player absent from a resample
    contributes nothing for it. Per player (every player of the original events, sorted
    by name): `mu_lo` / `mu_hi` are the (1-level)/2 and 1-(1-level)/2 quantiles (numpy's
    default linear interpolation) of the resampled mus, null when the player was in no
    resample, and `resamples_present` counts the resamples that included the player.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    events = list(events)
    n = len(events)
    players = sorted(event_counts(events))
    samples: dict[str, list[float]] = {p: [] for p in players}
    if n:
        for b in range(resamples):
            rng = np.random.default_rng([seed, BOOTSTRAP_TAG, b])
            picks = rng.integers(0, n, size=n)
            frame = multi_pass([events[i] for i in picks], params, passes, seed)
            for player, mu in zip(frame["player"].to_list(), frame["mu"].to_list()):
                samples[player].append(mu)
    alpha = (1.0 - level) / 2.0
    lo: list[float | None] = []
    hi: list[float | None] = []
    for player in players:
        values = samples[player]
        if values:
            q_lo, q_hi = np.quantile(np.asarray(values), [alpha, 1.0 - alpha])
            lo.append(float(q_lo))
            hi.append(float(q_hi))
        else:
            lo.append(None)
            hi.append(None)
    return pl.DataFrame(
        {
            "player": players,
            "mu_lo": lo,
            "mu_hi": hi,
            "resamples_present": [len(samples[p]) for p in players],
        },
        schema={
            "player": pl.String,
            "mu_lo": pl.Float64,
            "mu_hi": pl.Float64,
            "resamples_present": pl.Int64,
        },
    )


def conservative(mu: float, sigma: float, k: float = 3.0) -> float:
    """``mu - k * sigma``: a skill we are fairly sure a player exceeds, used for ranking.

    Plain arithmetic, so numpy arrays and polars Series/expressions work too.
    """
    return mu - k * sigma
