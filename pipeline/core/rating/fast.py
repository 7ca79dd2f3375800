"""Fast TrueSkill passes: one game's update applied to many independent rating rows.

Every pass of `multi_pass` (and every pass of every bootstrap resample) applies the same
kind of update, a free-for-all among single-player teams, to its own ratings in its own
order. The rows run side by side: the state is an array ``[rows, players]`` of mu and
sigma, and step s applies, in every row r, the game ``sequences[r, s]``. The update is the
factor-graph schedule of ``trueskill.TrueSkill.rate`` written out for single-player teams
and compiled with numba (`pipeline.core.rating.kernel`, where the schedule is described):
each thread takes a block of rows and runs 16 of them in lockstep through their whole
sequences, about 2.5 microseconds of one core per 8-player game and row, so 100 passes of
4,000 games take about 1 s of CPU. It agrees with the `trueskill` package (the tests'
oracle, `pipeline.core.rating.multipass`'s "reference") to about 1e-12; the tests check
every player after every pass against it within 1e-6. A single row, and any team game, is
rated by the package itself (`pipeline.core.rating.multipass` switches to it).

This module turns events into the arrays the kernel reads (`compile_events`) and runs it
(`rate_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import trueskill

from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, RatingParams

__all__ = ["EventTable", "compile_events", "rate_rows"]


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
    threads: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rate every row's sequence of events.

    `sequences` is ``[rows, steps]`` of indices into `table`; returns (mu, sigma), each
    ``[rows, n_players]``. Every row starts from `start` (mu, sigma arrays of that shape)
    or, without it, from the prior; a player a row never meets keeps its start.
    `threads`: the kernel's threads (None: the usable cores); rows are independent, so the
    result is the same for any number.
    """
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
    from pipeline.core.rating.kernel import rate_rows_compiled

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


def _draw_margin(params: RatingParams) -> float:
    # Every difference compares two single-player teams: trueskill's size is 2.
    return float(trueskill.calc_draw_margin(params.draw_probability, 2, params.env()))


def _floating_point_error() -> FloatingPointError:
    # trueskill's own message for the same failure, so both engines read alike.
    return FloatingPointError('Cannot calculate correctly, set backend to "mpmath"')
