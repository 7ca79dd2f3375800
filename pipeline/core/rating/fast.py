"""Fast TrueSkill passes: one game's update applied to many independent rating rows.

Every pass of `multi_pass` (and every pass of every bootstrap resample) applies the same
kind of update, a free-for-all among single-player teams, to its own ratings in its own
order. This module runs all those rows side by side: the state is an array
``[rows, players]`` of mu and sigma, and step s applies, in every row r, the game
``sequences[r, s]``. The update itself is the factor-graph schedule of
``trueskill.TrueSkill.rate`` written out for single-player teams:

- players sorted by rank (a stable sort of the name-sorted order, as trueskill does),
  prior variance ``sigma**2 + tau**2``, performance noise ``beta**2``;
- the chain of rank differences, each with a truncation factor: the win functions
  ``v_win``/``w_win`` for a strict order and ``v_draw``/``w_draw`` for a tie (ties need
  ``draw_probability > 0``, as in `pipeline.core.rating.multipass`);
- for more than two players the same sweep as trueskill (forward over differences
  0..n-3, backward over n-2..1) repeated until the largest truncation change of a sweep
  is at most ``min_delta`` (1e-4) or 10 sweeps, per row: a row that has converged keeps
  the messages of the sweep where it converged;
- trueskill's own approximations of the normal cdf/pdf (its pure-Python ``erfc``) and
  draw margin, so results agree with `pipeline.core.rating.multipass`'s reference path to about
  1e-12; the tests check every player after every pass against it within 1e-6.

Two engines run that schedule and give the same bits. "compiled" (default):
`pipeline.core.rating.kernel`, the numpy engine's arithmetic in numba, operation for
operation; each thread takes a block of rows and runs 16 of them in lockstep through their
whole sequences, about 2.5 microseconds of one core per 8-player game and row, so 100
passes of 4,000 games take about 1 s of CPU. "numpy": messages as (precision,
precision-adjusted mean) pairs (truncation messages also as mean and variance), one 1-D
array over rows per position in the chain, because the schedule is sequential along the
chain while every row is independent; one game costs about the same for 1 or 300 rows
(numpy's per-call overhead dominates), about 5 ms for 8 players, so 100 passes of 4,000
games take about 20 s. It stays as the benchmark's baseline and as the fallback where
numba cannot be imported. A single row is rated by the reference (`pipeline.core.rating.multipass`
switches to it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
import trueskill

from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, RatingParams

__all__ = ["Engine", "EventTable", "compile_events", "rate_rows"]

#: "compiled" (numba, `pipeline.core.rating.kernel`) or "numpy" (the vectorized rows below).
Engine: TypeAlias = Literal["compiled", "numpy"]

#: trueskill's default ``min_delta`` for ``rate`` and its cap on sweeps.
_MIN_DELTA = trueskill.DELTA
_MAX_SWEEPS = 10

_INV_2SQRT2 = 1 / (2 * math.sqrt(2))
_PDF_SCALE = 1 / math.sqrt(2 * math.pi)
_LOG_PDF_SCALE = math.log(_PDF_SCALE)
_LOG_HALF = math.log(0.5)


@dataclass(frozen=True)
class EventTable:
    """Events as arrays: per event its size, its players (indices) in rank order, and
    whether neighbours in that order tie."""

    size: np.ndarray  # int64 [events]
    players: np.ndarray  # int64 [events, max_size], -1 padded
    ties: np.ndarray  # bool [events, max_size - 1]

    @property
    def any_tie(self) -> bool:
        return bool(self.ties.any())


def compile_events(events: Sequence[RatingEvent], index: Mapping[str, int]) -> EventTable:
    """Rank order as trueskill sees it: FreeForAll players by (rank, name), Pairwise (a, b)
    reordered only when b won (a draw keeps a first)."""
    max_size = max((len(e.players) for e in events), default=2)
    size = np.zeros(len(events), dtype=np.int64)
    players = np.full((len(events), max_size), -1, dtype=np.int64)
    ties = np.zeros((len(events), max(max_size - 1, 1)), dtype=bool)
    for e, event in enumerate(events):
        if isinstance(event, FreeForAll):
            order = sorted(event.players, key=lambda p: event.ranks[p])  # stable: names sorted
            ranks = [event.ranks[p] for p in order]
        elif isinstance(event, Pairwise):
            if event.outcome == "b":
                order, ranks = [event.b, event.a], [0, 1]
            else:
                order, ranks = [event.a, event.b], [0, 1 if event.outcome == "a" else 0]
        else:
            raise TypeError(f"not a rating event: {event!r}")
        size[e] = len(order)
        players[e, : len(order)] = [index[p] for p in order]
        for k in range(len(order) - 1):
            ties[e, k] = ranks[k] == ranks[k + 1]
    return EventTable(size=size, players=players, ties=ties)


def rate_rows(
    table: EventTable,
    sequences: np.ndarray,
    n_players: int,
    params: RatingParams,
    start: tuple[np.ndarray, np.ndarray] | None = None,
    engine: Engine = "compiled",
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rate every row's sequence of events.

    `sequences` is ``[rows, steps]`` of indices into `table`; returns (mu, sigma), each
    ``[rows, n_players]``. Every row starts from `start` (mu, sigma arrays of that shape)
    or, without it, from the prior; a player a row never meets keeps its start.
    `engine`: see the module docstring ("compiled" falls back to "numpy" when numba is
    missing). `threads`: the compiled engine's threads (None: the usable cores); rows are
    independent, so the result is the same for any number.
    """
    if engine not in ("compiled", "numpy"):
        raise ValueError(f"engine must be 'compiled' or 'numpy', got {engine!r}")
    sequences = np.asarray(sequences, dtype=np.int64)
    if sequences.ndim != 2:
        raise ValueError(f"sequences must be 2-D [rows, steps], got shape {sequences.shape}")
    rows, steps = sequences.shape
    if start is None:
        mu = np.full((rows, n_players), params.mu, dtype=np.float64)
        sigma = np.full((rows, n_players), params.sigma, dtype=np.float64)
    else:
        mu = np.array(start[0], dtype=np.float64)
        sigma = np.array(start[1], dtype=np.float64)
        if mu.shape != (rows, n_players) or sigma.shape != (rows, n_players):
            raise ValueError(f"start arrays must have shape {(rows, n_players)}")
    if rows == 0 or steps == 0:
        return mu, sigma
    if table.any_tie and params.draw_probability <= 0:
        raise ValueError(
            "a game contains a tie, but draw_probability is 0: a tie is impossible under that "
            "model and trueskill's update for it is numerically meaningless; use "
            "draw_probability > 0 (e.g. the default 0.10) when games can tie"
        )
    if engine == "compiled":
        try:
            from pipeline.core.rating.kernel import rate_rows_compiled
        except ImportError:  # numba missing or broken: the numpy engine gives the same numbers
            engine = "numpy"
    if engine == "compiled":
        # The kernel writes in place: give it C-ordered float64 rows of its own.
        mu = np.ascontiguousarray(mu)
        sigma = np.ascontiguousarray(sigma)
        ok = rate_rows_compiled(
            np.ascontiguousarray(table.size),
            np.ascontiguousarray(table.players),
            np.ascontiguousarray(table.ties),
            np.ascontiguousarray(sequences),
            mu,
            sigma,
            params.tau**2,
            params.beta**2,
            _draw_margin(params),
            threads,
        )
        if not ok:
            raise _floating_point_error()
        return mu, sigma
    update = _Update(params)
    all_rows = np.arange(rows)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        for s in range(steps):
            ev = sequences[:, s]
            sizes = table.size[ev]
            first = sizes[0]
            if (sizes == first).all():
                groups = [(all_rows, ev, int(first))]
            else:
                groups = [(all_rows[sizes == n], ev[sizes == n], int(n)) for n in np.unique(sizes)]
            for group_rows, group_events, n in groups:
                who = table.players[group_events, :n]
                at = (group_rows[:, None], who)
                ties = table.ties[group_events, : n - 1] if table.any_tie else None
                new_mu, new_sigma = update(mu[at], sigma[at], ties)
                mu[at] = new_mu
                sigma[at] = new_sigma
    return mu, sigma


def _draw_margin(params: RatingParams) -> float:
    # Every difference compares two single-player teams: trueskill's size is 2.
    return float(trueskill.calc_draw_margin(params.draw_probability, 2, params.env()))


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    """trueskill.backends.cdf: 0.5 * erfc(-x / sqrt 2) with its Chebyshev-fitted erfc."""
    t = 1.0 / (1.0 + np.abs(x) * _INV_2SQRT2)
    r = t * np.exp(_erfc_exponent(t) - x * x * 0.5)
    return np.where(x > 0, 1.0 - 0.5 * r, 0.5 * r)


def _erfc_exponent(t: np.ndarray, shift: float = 0.0) -> np.ndarray:
    """The polynomial in trueskill's erfc, ``-1.26551223 + t * (1.00002368 + ...)``, plus `shift`."""
    return (-1.26551223 + shift) + t * (
        1.00002368
        + t
        * (
            0.37409196
            + t
            * (
                0.09678418
                + t
                * (
                    -0.18628806
                    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                )
            )
        )
    )


def _normal_pdf(x: np.ndarray) -> np.ndarray:
    return _PDF_SCALE * np.exp(-(x * x / 2))


def _floating_point_error() -> FloatingPointError:
    # trueskill's own message for the same failure, so both paths read alike.
    return FloatingPointError('Cannot calculate correctly, set backend to "mpmath"')


class _Update:
    """One game's update for a batch of rows with the same number of players.

    Notation along the chain of n players in rank order: team k's message from its player
    is fixed (``s``); difference k (team k minus team k+1) sends `right` to team k+1 and
    `left` to team k; its truncation factor's message is `trunc`. Messages to teams are
    kept as (pi, tau); the truncation message also as (mean, var), which is what the
    sum factors use. The cavities of a difference's two teams, computed on the way down,
    are reused on the way up within the same step (nothing changes them in between).
    """

    def __init__(self, params: RatingParams) -> None:
        self.tau2 = params.tau**2
        self.beta2 = params.beta**2
        self.draw_margin = _draw_margin(params)

    def __call__(self, mu: np.ndarray, sigma: np.ndarray, ties: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        rows, n = mu.shape
        # Prior with dynamics, then the performance likelihood (beta), then the team sum
        # (one player per team, weight 1) gives each team's message from its player.
        prior_pi = np.sqrt(sigma * sigma + self.tau2) ** -2.0
        prior_tau = prior_pi * mu
        a = 1.0 / (1.0 + self.beta2 * prior_pi)
        team_pi = a * prior_pi
        team_tau = a * prior_tau
        self.s_pi = list(team_pi.T)
        self.s_tau = list(team_tau.T)
        zero = np.zeros(rows)
        # left/right have one extra zero entry: right[-1] and left[n-1] are the chain's
        # open ends, so no special case is needed at k = 0 or k = n-2.
        self.left_pi = [zero] * n
        self.left_tau = [zero] * n
        self.right_pi = [zero] * n
        self.right_tau = [zero] * n
        self.trunc_mean = [zero] * (n - 1)
        self.trunc_var = [zero] * (n - 1)
        self.trunc_pi = [zero] * (n - 1)
        self.trunc_tau = [zero] * (n - 1)
        self.ties = None if ties is None or not ties.any() else list(ties.T)
        # Per row, the largest changes of a sweep's truncation messages (trueskill's
        # delta is max(|d tau|, sqrt|d pi|)), and the range of w (trueskill raises
        # unless 0 < w < 1 for a win).
        self.change_tau = np.zeros(rows)
        self.change_pi = np.zeros(rows)
        self.w_min = np.full(rows, 0.5)
        self.w_max = np.full(rows, 0.5)
        self.tie_failed = np.zeros(rows, dtype=bool)

        if n == 2:
            # One difference: trueskill's second sweep recomputes the same message, so the
            # first is final.
            self._down(0)
            self._truncate(0)
            if self._failed().any():
                raise _floating_point_error()
        else:
            self._sweeps(n)
        # Both ends of the chain, then back up through the sums and likelihoods.
        self._down(0)
        self._left(0)
        self._down(n - 2)
        self._right(n - 2)
        left_pi = np.stack(self.left_pi, axis=1)
        left_tau = np.stack(self.left_tau, axis=1)
        right_pi = np.stack([zero, *self.right_pi[: n - 1]], axis=1)
        right_tau = np.stack([zero, *self.right_tau[: n - 1]], axis=1)
        up_pi = left_pi + right_pi
        up_tau = left_tau + right_tau
        a_up = 1.0 / (1.0 + self.beta2 * up_pi)
        out_pi = prior_pi + a_up * up_pi
        out_tau = prior_tau + a_up * up_tau
        return out_tau / out_pi, np.sqrt(1.0 / out_pi)

    def _failed(self) -> np.ndarray:
        # Written so that NaN fails too.
        return ~((self.w_min > 0) & (self.w_max < 1)) | self.tie_failed

    def _sweeps(self, n: int) -> None:
        rows = self.change_tau.shape[0]
        active = np.ones(rows, dtype=bool)
        saved: dict[str, list[np.ndarray]] | None = None
        for _ in range(_MAX_SWEEPS):
            self.change_tau[:] = 0.0
            self.change_pi[:] = 0.0
            for k in range(n - 2):
                self._down(k)
                self._truncate(k)
                self._right(k)
            for k in range(n - 2, 0, -1):
                self._down(k)
                self._truncate(k)
                self._left(k)
            if (self._failed() & active).any():
                raise _floating_point_error()
            delta = np.maximum(self.change_tau, np.sqrt(self.change_pi))
            done = active & (delta <= _MIN_DELTA)
            if done.sum() == active.sum():
                break
            if done.any():
                # Rows that converged keep this sweep's messages; later sweeps run on
                # for the others only.
                saved = self._merge(saved, done)
                active &= ~done
        if saved is not None:
            self._restore(saved, active)

    _STATE = ("left_pi", "left_tau", "right_pi", "right_tau", "trunc_mean", "trunc_var")

    def _merge(self, saved: dict[str, list[np.ndarray]] | None, done: np.ndarray) -> dict[str, list[np.ndarray]]:
        current = {name: getattr(self, name) for name in self._STATE}
        if saved is None:
            return {name: [c.copy() for c in cols] for name, cols in current.items()}
        for name, cols in current.items():
            for old, new in zip(saved[name], cols):
                np.copyto(old, new, where=done)
        return saved

    def _restore(self, saved: dict[str, list[np.ndarray]], active: np.ndarray) -> None:
        # Rows still active at the end (converged in the last sweep, or ran to the cap)
        # take the current messages.
        for name in self._STATE:
            cols = saved[name]
            for old, new in zip(cols, getattr(self, name)):
                np.copyto(old, new, where=active)
            setattr(self, name, cols)

    def _down(self, k: int) -> None:
        """Difference k from its teams' cavities (each without this factor's message)."""
        a_pi = self.s_pi[k] + self.right_pi[k - 1]
        self.a_var = 1.0 / a_pi
        self.a_mean = (self.s_tau[k] + self.right_tau[k - 1]) * self.a_var
        b_pi = self.s_pi[k + 1] + self.left_pi[k + 1]
        self.b_var = 1.0 / b_pi
        self.b_mean = (self.s_tau[k + 1] + self.left_tau[k + 1]) * self.b_var
        self.d_var = self.a_var + self.b_var
        self.d_mean = self.a_mean - self.b_mean

    def _truncate(self, k: int) -> None:
        """Truncation k: the difference is above the margin (win) or within it (tie)."""
        d_var = self.d_var
        d_mean = self.d_mean
        sd = np.sqrt(d_var)
        x = (d_mean - self.draw_margin) / sd
        # v_win = pdf(x) / cdf(x), w_win = v (v + x). Where cdf(x) underflows to 0
        # trueskill takes v = -x, so w = 0 and it raises; here v and w are NaN, and NaN
        # fails the range check below just the same. The constant factors 1/2 of the cdf
        # and 1/sqrt(2 pi) of the pdf ride in the exponents (one numpy call fewer each).
        zz = x * x * 0.5
        t = 1.0 / (1.0 + np.abs(x) * _INV_2SQRT2)
        half_r = t * np.exp(_erfc_exponent(t, _LOG_HALF) - zz)
        cdf = np.where(x > 0, 1.0 - half_r, half_r)
        v = np.exp(_LOG_PDF_SCALE - zz) / cdf
        w = v * (v + x)
        w_checked = w
        if self.ties is not None:
            tie = self.ties[k]
            if tie.any():
                v_d, w_d = self._draw_vw(d_mean / sd, self.draw_margin / sd)
                v = np.where(tie, v_d, v)
                w = np.where(tie, w_d, w)
                # trueskill range-checks w only for a win; a tie fails when its cdf
                # difference is 0 (w_d is NaN then).
                w_checked = np.where(tie, 0.5, w_checked)
                self.tie_failed |= tie & ~np.isfinite(w_d)
        np.minimum(self.w_min, w_checked, out=self.w_min)
        np.maximum(self.w_max, w_checked, out=self.w_max)
        # trunc = (updated difference) / (its cavity), as mean and variance and as (pi, tau).
        inv_w = 1.0 / w
        trunc_mean = d_mean + v * sd * inv_w
        trunc_var = d_var * (inv_w - 1.0)  # d_var (1 - w) / w
        trunc_pi = 1.0 / trunc_var
        trunc_tau = trunc_mean * trunc_pi
        change = np.abs(self.trunc_tau[k] - trunc_tau)
        np.maximum(self.change_tau, change, out=self.change_tau)
        change = np.abs(self.trunc_pi[k] - trunc_pi)
        np.maximum(self.change_pi, change, out=self.change_pi)
        self.trunc_mean[k] = trunc_mean
        self.trunc_var[k] = trunc_var
        self.trunc_pi[k] = trunc_pi
        self.trunc_tau[k] = trunc_tau

    @staticmethod
    def _draw_vw(diff: np.ndarray, margin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """trueskill's v_draw and w_draw."""
        abs_diff = np.abs(diff)
        a = margin - abs_diff
        b = -margin - abs_diff
        denom = _normal_cdf(a) - _normal_cdf(b)
        pdf_a = _normal_pdf(a)
        pdf_b = _normal_pdf(b)
        v_abs = np.where(denom != 0, (pdf_b - pdf_a) / denom, a)
        v = np.where(diff < 0, -v_abs, v_abs)
        w = v_abs * v_abs + (a * pdf_a - b * pdf_b) / denom
        w = np.where(denom != 0, w, np.nan)
        return v, w

    def _right(self, k: int) -> None:
        """Message from difference k up to team k+1 (after `_down(k)`)."""
        pi = 1.0 / (self.a_var + self.trunc_var[k])
        self.right_pi[k] = pi
        self.right_tau[k] = (self.a_mean - self.trunc_mean[k]) * pi

    def _left(self, k: int) -> None:
        """Message from difference k up to team k (after `_down(k)`)."""
        pi = 1.0 / (self.trunc_var[k] + self.b_var)
        self.left_pi[k] = pi
        self.left_tau[k] = (self.trunc_mean[k] + self.b_mean) * pi
