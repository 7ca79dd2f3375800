"""TrueSkill rating core, built on the `trueskill` package.

Two engines give the same numbers (to about 1e-12; tests hold them to 1e-6):

- "fast" (default): `pipeline.core.rating.fast`, trueskill's update for single-player
  teams compiled with numba (`pipeline.core.rating.kernel`), all the passes (and bootstrap
  resamples) rated side by side, row after row over the cores;
- "reference": the `trueskill` package itself, one `trueskill.TrueSkill.rate` call per
  game: the tests' oracle, and what rates team games and a single row on every path (the
  compiled engine has no team update, and one row gains nothing from it).

`method="reference"` or the environment variable ``PIPELINE_RATING_METHOD=reference``
selects the baseline. Orderings (player order inside a game, event order in each pass,
bootstrap draws) are all spelled out and depend only on the inputs and an explicit seed;
no global random state is touched.

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

import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import polars as pl
import trueskill

from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, RatingParams, TeamMatch
from pipeline.core.rating.fast import compile_events, rate_rows

__all__ = [
    "BOOTSTRAP_TAG",
    "MIN_SETTLED_GAMES",
    "MIN_SETTLED_RESAMPLES",
    "FreeForAll",
    "Pairwise",
    "RatingEvent",
    "RatingParams",
    "TeamMatch",
    "apply_event",
    "bootstrap_intervals",
    "conservative",
    "event_counts",
    "evidence_text",
    "interval_settled",
    "multi_pass",
    "pass_orders",
    "pass_ratings",
    "rate_sequence",
    "rating_summary",
    "resamples_text",
    "settled_rank_interval",
    "unsettled_reason",
]

#: Integer tag mixed into the bootstrap seed so resample draws never coincide with the
#: pass-order streams (which use ``[seed, p]``). Resample b uses
#: ``numpy.random.default_rng([seed, BOOTSTRAP_TAG, b])``.
BOOTSTRAP_TAG: int = 0xB007

#: Fewest rating events ("games": an Elimination game, a Who is Spy game, a ranked xent map, a
#: SKATE pairwise comparison) a player needs before its bootstrap interval is shown as one. Below
#: it, resampling a handful of games mostly copies the same few results, and the percentile
#: interval comes out narrow (a model with 2 games can get rank interval 1-1) however little is
#: known.
MIN_SETTLED_GAMES: int = 20

#: Fewest bootstrap resamples behind an interval: the 95% interval's ends are the 2.5% and
#: 97.5% quantiles, which a few resamples cannot place (with 10 they are simply the extremes).
MIN_SETTLED_RESAMPLES: int = 20


def interval_settled(
    games: int | None,
    resamples: int | None,
    min_games: int = MIN_SETTLED_GAMES,
    min_resamples: int = MIN_SETTLED_RESAMPLES,
) -> bool:
    """The one rule for whether a player's bootstrap interval is informative ("settled").

    True only with the evidence for it: a bootstrap of at least `min_resamples` resamples over
    games where the player took part in at least `min_games`. Unknown evidence (None), no
    bootstrap (0 resamples) or fewer games: False, and whoever shows the interval must show the
    widest honest one instead (`settled_rank_interval`: the whole field) and say it is unsettled
    (`unsettled_reason`). Every table, the leaderboard, `compare` and the import printout use it.
    """
    if games is None or resamples is None:
        return False
    return games >= min_games and resamples >= min_resamples


def unsettled_reason(
    games: int | None,
    resamples: int | None,
    min_games: int = MIN_SETTLED_GAMES,
    min_resamples: int = MIN_SETTLED_RESAMPLES,
) -> str:
    """Why `interval_settled` says no, in words ("" when it says yes)."""
    reasons = []
    if resamples is None:
        reasons.append("bootstrap resamples unknown")
    elif resamples == 0:
        reasons.append("no bootstrap")
    elif resamples < min_resamples:
        reasons.append(f"{resamples} bootstrap resamples (fewer than {min_resamples})")
    if games is None:
        reasons.append("games unknown")
    elif games < min_games:
        reasons.append(f"{games} game{'' if games == 1 else 's'} (fewer than {min_games})")
    return "; ".join(reasons)


def resamples_text(resamples: int | None) -> str:
    """ "20 resamples", "no bootstrap" (0) or "resamples unknown" (None)."""
    if resamples is None:
        return "resamples unknown"
    return "no bootstrap" if resamples == 0 else f"{resamples} resamples"


def evidence_text(games: int | None, resamples: int | None) -> str:
    """The evidence behind an interval, e.g. "2 games, 20 resamples" or "48 games, no bootstrap"."""
    played = "games unknown" if games is None else f"{games} game{'' if games == 1 else 's'}"
    return f"{played}, {resamples_text(resamples)}"


def competition_ranks(values: dict[str, float]) -> dict[str, int]:
    """1 = highest value; equal values share the better rank."""
    return {name: 1 + sum(1 for other in values.values() if other > value) for name, value in values.items()}


def interval_ranks(intervals: dict[str, tuple[float, float]]) -> dict[str, tuple[int, int]]:
    """Best and worst rank each model can hold given the others' intervals: no better than the
    models wholly above its interval allow, no worse than those wholly below."""
    n = len(intervals)
    out = {}
    for name, (lo, hi) in intervals.items():
        surely_above = sum(1 for o, (olo, _) in intervals.items() if o != name and olo > hi)
        surely_below = sum(1 for o, (_, ohi) in intervals.items() if o != name and ohi < lo)
        out[name] = (1 + surely_above, n - surely_below)
    return out


def settled_rank_interval(rank: int, lo: int, hi: int, field_size: int, settled: bool) -> tuple[int, int]:
    """The rank interval to show: the given one when settled, else the whole field 1..field_size
    (nothing narrower is known). Always contains `rank`."""
    if not settled:
        return 1, max(field_size, rank)
    return min(lo, rank), max(hi, rank)


_PAIRWISE_RANKS: dict[str, list[int]] = {"a": [0, 1], "b": [1, 0], "draw": [0, 0]}


def apply_event(env: trueskill.TrueSkill, ratings: dict[str, trueskill.Rating], event: RatingEvent) -> None:
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
    if isinstance(event, TeamMatch):
        groups = [
            tuple(ratings[p] if p in ratings else env.create_rating() for p in team) for team in (event.a, event.b)
        ]
        updated = env.rate(groups, ranks=_PAIRWISE_RANKS[event.outcome])
        for team, new_team in zip((event.a, event.b), updated):
            for player, rating in zip(team, new_team):
                ratings[player] = rating
        return
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


def rate_sequence(events: Iterable[RatingEvent], params: RatingParams) -> dict[str, trueskill.Rating]:
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


#: Environment variable choosing the implementation when `method` is not given:
#: "fast" (default, `pipeline.core.rating.fast` compiled) or "reference" (one trueskill call per game).
METHOD_ENV = "PIPELINE_RATING_METHOD"
RatingMethod: TypeAlias = Literal["fast", "reference"]


def _method(method: str | None) -> RatingMethod:
    chosen = method if method is not None else os.environ.get(METHOD_ENV, "fast")
    if chosen not in ("fast", "reference"):
        raise ValueError(f"rating method must be 'fast' or 'reference', got {chosen!r}")
    return chosen  # type: ignore[return-value]


def _final_ratings(
    events: list[RatingEvent],
    players: list[str],
    sequences: np.ndarray,
    params: RatingParams,
    method: RatingMethod,
) -> tuple[np.ndarray, np.ndarray]:
    """Final mu and sigma ``[rows, players]`` after rating each row of `sequences`
    (indices into `events`) from fresh priors; NaN for a player a row never met."""
    rows = sequences.shape[0]
    if method == "fast":
        index = {player: j for j, player in enumerate(players)}
        table = compile_events(events, index)
        mus, sigmas = rate_rows(table, sequences, len(players), params)
        met = np.zeros((rows, len(players)), dtype=bool)
        if sequences.size:
            used = np.zeros(len(events), dtype=bool)
            for r in range(rows):
                # A mask over events rather than np.unique: no sort of every row.
                used[:] = False
                used[sequences[r]] = True
                who = table.players[used]
                met[r, who[who >= 0]] = True
        mus[~met] = np.nan
        sigmas[~met] = np.nan
        return mus, sigmas
    mus = np.full((rows, len(players)), np.nan, dtype=np.float64)
    sigmas = np.full((rows, len(players)), np.nan, dtype=np.float64)
    for r in range(rows):
        final = rate_sequence((events[i] for i in sequences[r]), params)
        for j, player in enumerate(players):
            if player in final:
                mus[r, j] = final[player].mu
                sigmas[r, j] = final[player].sigma
    return mus, sigmas


#: Rows rated together by the fast method (the rest waits for the next batch): bounds the
#: index arrays at about this many times the number of events.
_ROWS_PER_BATCH = 1024


@dataclass(frozen=True)
class _RowPlan:
    """Which events each rated row sees, in order: `passes` multi-pass rows over all events,
    then `resamples` x `boot_passes` bootstrap rows (resample b, pass p) at
    ``passes + b * boot_passes + p``. Resample b is
    ``default_rng([seed, BOOTSTRAP_TAG, b]).integers(0, n_events, n_events)``, rated in
    pass p's order ``pass_orders(n_events, boot_passes, seed)[p]`` over its positions, which
    is exactly ``multi_pass(resample, params, boot_passes, seed)``."""

    n_events: int
    passes: int
    seed: int
    resamples: int = 0
    boot_passes: int = 0

    @property
    def total(self) -> int:
        return self.passes + self.resamples * self.boot_passes

    @functools.cached_property
    def _point_orders(self) -> list[np.ndarray]:
        return pass_orders(self.n_events, self.passes, self.seed) if self.passes else []

    @functools.cached_property
    def _boot_orders(self) -> list[np.ndarray]:
        return pass_orders(self.n_events, self.boot_passes, self.seed) if self.resamples else []

    def rows(self, start: int, stop: int) -> np.ndarray:
        n = self.n_events
        point, boot = self._point_orders, self._boot_orders
        picks: dict[int, np.ndarray] = {}
        out = np.empty((stop - start, n), dtype=np.int64)
        for i, r in enumerate(range(start, stop)):
            if r < self.passes:
                out[i] = point[r]
                continue
            b, p = divmod(r - self.passes, self.boot_passes)
            if b not in picks:
                rng = np.random.default_rng([self.seed, BOOTSTRAP_TAG, b])
                picks[b] = rng.integers(0, n, size=n)
            out[i] = picks[b][boot[p]]
        return out


def _rate_plan(
    events: list[RatingEvent],
    players: list[str],
    plan: _RowPlan,
    params: RatingParams,
    method: RatingMethod,
) -> tuple[np.ndarray, np.ndarray]:
    """Final mu and sigma ``[plan.total, players]`` of every row of the plan (NaN where a
    row never met the player). The fast method rates up to `_ROWS_PER_BATCH` rows at once;
    the reference rates row by row."""
    mus = np.full((plan.total, len(players)), np.nan, dtype=np.float64)
    sigmas = np.full((plan.total, len(players)), np.nan, dtype=np.float64)
    if plan.total == 1 or any(isinstance(e, TeamMatch) for e in events):
        # One row gains nothing from vectorizing, and trueskill's own loop is cheaper for
        # games of 3+ players; both give the same numbers. Team games: reference only.
        method = "reference"
    step = 1 if method == "reference" else _ROWS_PER_BATCH
    for start in range(0, plan.total, step):
        stop = min(start + step, plan.total)
        mus[start:stop], sigmas[start:stop] = _final_ratings(events, players, plan.rows(start, stop), params, method)
    return mus, sigmas


def pass_ratings(
    events: Sequence[RatingEvent],
    params: RatingParams,
    passes: int,
    seed: int,
    method: str | None = None,
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every pass's final ratings: (players sorted by name, mu and sigma ``[passes, players]``).

    Pass p rates the events in the order ``pass_orders(len(events), passes, seed)[p]``.
    `method` "fast" (default) or "reference" (environment variable
    ``PIPELINE_RATING_METHOD`` when not given); they agree to about 1e-12.
    """
    events = list(events)
    if passes < 1:
        raise ValueError(f"passes must be >= 1, got {passes}")
    players = sorted(event_counts(events))
    plan = _RowPlan(len(events), passes, seed)
    mus, sigmas = _rate_plan(events, players, plan, params, _method(method))
    return players, mus, sigmas


def multi_pass(
    events: Sequence[RatingEvent],
    params: RatingParams,
    passes: int,
    seed: int,
    method: str | None = None,
) -> pl.DataFrame:
    """Average ratings over several random event orders, since TrueSkill is order-dependent.

    For p in range(passes) the events are rated once in the order ``pass_orders(...)[p]``
    (a permutation from ``numpy.random.default_rng([seed, p])``). Per player the result
    holds the mean over passes of the final mu and sigma, `mu_sd` (the ddof=0 standard
    deviation over passes of the final mu, a measure of order sensitivity), `events`
    (games played) and `passes`. Rows are sorted by mu descending, then player ascending.
    `method`: see `pass_ratings`.
    """
    events = list(events)
    players, mus, sigmas = pass_ratings(events, params, passes, seed, method)
    return _multi_pass_frame(events, players, mus, sigmas, passes)


def _multi_pass_frame(
    events: list[RatingEvent], players: list[str], mus: np.ndarray, sigmas: np.ndarray, passes: int
) -> pl.DataFrame:
    counts = event_counts(events)
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


def _resample_means(boot_mus: np.ndarray, resamples: int, boot_passes: int) -> np.ndarray:
    """Mean over each resample's passes: ``[resamples * boot_passes, players]`` ->
    ``[resamples, players]``; NaN where the resample lacks the player."""
    return boot_mus.reshape(resamples, boot_passes, -1).mean(axis=1)


def _bootstrap_mus(
    events: Sequence[RatingEvent],
    params: RatingParams,
    passes: int,
    seed: int,
    resamples: int,
    method: str | None = None,
) -> tuple[list[str], np.ndarray]:
    """Multi-pass mu of every player in every bootstrap resample.

    Returns (players sorted by name, array [resamples, players]) with NaN where a player is
    absent from a resample. Resample b draws ``len(events)`` events with replacement using
    ``numpy.random.default_rng([seed, BOOTSTRAP_TAG, b])`` and is rated as
    ``multi_pass(resample, params, passes, seed)`` (see `_RowPlan`).
    """
    events = list(events)
    players = sorted(event_counts(events))
    if not events:
        return players, np.full((resamples, 0), np.nan)
    plan = _RowPlan(len(events), 0, seed, resamples, passes)
    mus, _ = _rate_plan(events, players, plan, params, _method(method))
    return players, _resample_means(mus, resamples, passes)


def _check_bootstrap_args(resamples: int, level: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def bootstrap_intervals(
    events: Sequence[RatingEvent],
    params: RatingParams,
    passes: int,
    seed: int,
    resamples: int = 200,
    level: float = 0.95,
    method: str | None = None,
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
    _check_bootstrap_args(resamples, level)
    players, mus = _bootstrap_mus(events, params, passes, seed, resamples, method)
    alpha = (1.0 - level) / 2.0
    lo: list[float | None] = []
    hi: list[float | None] = []
    present: list[int] = []
    for j in range(len(players)):
        values = mus[:, j][~np.isnan(mus[:, j])]
        present.append(int(values.size))
        if values.size:
            q_lo, q_hi = np.quantile(values, [alpha, 1.0 - alpha])
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
            "resamples_present": present,
        },
        schema={
            "player": pl.String,
            "mu_lo": pl.Float64,
            "mu_hi": pl.Float64,
            "resamples_present": pl.Int64,
        },
    )


_SUMMARY_SCHEMA: dict[str, Any] = {
    "player": pl.String,
    "mu": pl.Float64,
    "sigma": pl.Float64,
    "mu_sd": pl.Float64,
    "mu_lo": pl.Float64,
    "mu_hi": pl.Float64,
    "rank": pl.Int64,
    "rank_lo": pl.Int64,
    "rank_hi": pl.Int64,
    "events": pl.Int64,
    "resamples": pl.Int64,
    "settled": pl.Boolean,
}


def _ranks_by_mu(players: Sequence[str], mus: np.ndarray) -> np.ndarray:
    """Rank 1 = highest mu; equal mus are ordered by player name (as multi_pass sorts).

    NaN entries (players absent) get rank 0 and do not take a place.
    """
    ranks = np.zeros(len(players), dtype=np.int64)
    present = [j for j in range(len(players)) if not np.isnan(mus[j])]
    present.sort(key=lambda j: (-mus[j], players[j]))
    for place, j in enumerate(present, start=1):
        ranks[j] = place
    return ranks


def rating_summary(
    events: Sequence[RatingEvent],
    params: RatingParams,
    passes: int,
    seed: int,
    resamples: int,
    bootstrap_passes: int | None = None,
    level: float = 0.95,
    method: str | None = None,
) -> pl.DataFrame:
    """Multi-pass ratings with bootstrap intervals for mu and for the rank.

    Point estimates (mu, sigma, mu_sd, events) are ``multi_pass(events, params, passes,
    seed)``; `rank` is the place by mu (1 = best; equal mus by player name). With
    ``resamples > 0`` the games are resampled exactly as `bootstrap_intervals` does (same
    seeds, ``bootstrap_passes`` passes per resample, default `passes`). In each resample
    every present player gets a rank by its resampled mu among the players present
    there; a player absent from a resample does not count in it. `mu_lo`/`mu_hi` and
    `rank_lo`/`rank_hi` are the (1-level)/2 and 1-(1-level)/2 quantiles over the
    resamples where the player is present (mu: numpy's linear interpolation; rank:
    method "lower" for rank_lo and "higher" for rank_hi, so the interval is made of
    observed ranks and never narrower than the interpolated one). Each interval is then
    widened to contain the point estimate: resampling duplicates games, which makes
    TrueSkill more confident than the data is, so the resampled mus of extreme players
    sit slightly outside the original estimate; a displayed "rank 3 (3-5)" must contain
    its 3. With ``resamples == 0``, mu_lo/mu_hi are null. A player present in no resample
    gets null mu_lo/mu_hi.

    `resamples` repeats the number of resamples on every row, and `settled` is
    ``interval_settled(events, resamples)``: a bootstrap of at least `MIN_SETTLED_RESAMPLES`
    resamples over at least `MIN_SETTLED_GAMES` events of the player. An unsettled player's
    rank interval is the whole field, rank_lo = 1 and rank_hi = the number of players (so
    without a bootstrap, or with a handful of games, no interval is narrower than what is
    known); mu, sigma and the mu interval are left as computed. Rows are sorted by rank.
    `method`: see `pass_ratings`; the fast method rates the multi-pass rows and every
    resample's rows side by side, so a bootstrap costs far less than `resamples` separate runs.
    """
    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")
    if resamples:
        _check_bootstrap_args(resamples, level)
    if bootstrap_passes is None:
        bootstrap_passes = passes
    if passes < 1 or bootstrap_passes < 1:
        raise ValueError(f"passes and bootstrap_passes must be >= 1, got {passes} and {bootstrap_passes}")
    events = list(events)
    names = sorted(event_counts(events))
    # The multi-pass rows and the bootstrap rows in one plan: the fast method rates them
    # side by side.
    plan = _RowPlan(len(events), passes, seed, resamples if events else 0, bootstrap_passes)
    all_mus, all_sigmas = _rate_plan(events, names, plan, params, _method(method))
    point = _multi_pass_frame(events, names, all_mus[:passes], all_sigmas[:passes], passes)
    players = point["player"].to_list()  # sorted by mu descending, then name
    n_players = len(players)
    rank = np.arange(1, n_players + 1, dtype=np.int64)
    mu_point = point["mu"].to_numpy()
    mu_lo: list[float | None] = [None] * n_players
    mu_hi: list[float | None] = [None] * n_players
    rank_lo = rank.copy()
    rank_hi = rank.copy()
    if resamples and n_players:
        mus = _resample_means(all_mus[passes:], resamples, bootstrap_passes)
        column = {player: j for j, player in enumerate(names)}
        boot_ranks = np.stack([_ranks_by_mu(names, mus[b]) for b in range(resamples)])
        alpha = (1.0 - level) / 2.0
        for i, player in enumerate(players):
            j = column[player]
            present = ~np.isnan(mus[:, j])
            if not present.any():
                rank_lo[i], rank_hi[i] = 1, n_players
                continue
            values = mus[present, j]
            q_lo, q_hi = np.quantile(values, [alpha, 1.0 - alpha])
            mu_lo[i] = float(min(q_lo, mu_point[i]))
            mu_hi[i] = float(max(q_hi, mu_point[i]))
            places = boot_ranks[present, j]
            rank_lo[i] = min(int(np.quantile(places, alpha, method="lower")), int(rank[i]))
            rank_hi[i] = max(int(np.quantile(places, 1.0 - alpha, method="higher")), int(rank[i]))
    events_of = point["events"].to_list()
    settled = [interval_settled(games, resamples) for games in events_of]
    for i in range(n_players):
        rank_lo[i], rank_hi[i] = settled_rank_interval(
            int(rank[i]), int(rank_lo[i]), int(rank_hi[i]), n_players, settled[i]
        )
    return pl.DataFrame(
        {
            "player": players,
            "mu": point["mu"],
            "sigma": point["sigma"],
            "mu_sd": point["mu_sd"],
            "mu_lo": mu_lo,
            "mu_hi": mu_hi,
            "rank": rank,
            "rank_lo": rank_lo,
            "rank_hi": rank_hi,
            "events": point["events"],
            "resamples": [resamples] * n_players,
            "settled": settled,
        },
        schema=_SUMMARY_SCHEMA,
    )


def conservative(mu: float, sigma: float, k: float = 3.0) -> float:
    """``mu - k * sigma``: a skill we are fairly sure a player exceeds, used for ranking.

    Plain arithmetic, so numpy arrays and polars Series/expressions work too.
    """
    return mu - k * sigma
