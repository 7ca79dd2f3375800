"""Compiled TrueSkill rows: trueskill's update for single-player teams in numba, many rows at once.

The update is the factor-graph schedule of ``trueskill.TrueSkill.rate`` written out:

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
  draw margin, with messages as (precision, precision-adjusted mean) pairs, so results agree
  with the package to about 1e-12.

A thread takes a block of rows and runs `_LANES` of them in lockstep through their whole
sequences: the lanes are independent chains the CPU overlaps, where a single row would wait on
each division in turn. No fast-math and no fused multiply-add; exp and log are the C library's
(as trueskill's `math` calls). Rows are independent: a row's numbers never depend on which
thread or lane rated it or on the other rows, so the output is the same for any number of
threads. (A numpy engine of the same arithmetic, one numpy call per message over all rows,
was removed: 18x slower and on no user's path; see docs/ratings.md.)

Compiled code is cached (numba ``cache=True``) under ``$NUMBA_CACHE_DIR`` when the user set it,
else ``$XDG_CACHE_HOME/tournament-pipeline/numba`` (``~/.cache/...``), never next to the source:
``pipeline/core`` is a DVC dependency, and a cache file there would change its hash. The cache is
keyed by this file's content, not its path (`_SourceKeyedLocator`), so every checkout of the same
code (a CI clone, a test's copy of the project) shares one compiled kernel. Importing
this module compiles (about 7 s) or loads the cache (about a second with numba's import);
without a writable cache directory it compiles in memory in every process.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numba
import numpy as np

from pipeline.core.artifacts.io import user_cache_dir

__all__ = ["cache_dir", "rate_rows_compiled"]

#: trueskill's ``min_delta`` default and its cap on sweeps.
_MIN_DELTA = 1e-4
_MAX_SWEEPS = 10

_INV_2SQRT2 = 1 / (2 * math.sqrt(2))
_PDF_SCALE = 1 / math.sqrt(2 * math.pi)
_LOG_PDF_SCALE = math.log(_PDF_SCALE)
_LOG_HALF = math.log(0.5)
# The erfc polynomial's constant term, plain and with the cdf's factor 1/2 folded in (the cdf's
# 1/2 rides in the exponent, as the pdf's 1/sqrt(2 pi) does).
_ERFC_C0 = -1.26551223
_ERFC_C0_HALF = -1.26551223 + _LOG_HALF

#: Below this many row-steps a call stays on one thread (starting threads costs more).
_THREAD_MIN_WORK = 20_000


def cache_dir() -> Path | None:
    """Where numba keeps the compiled kernel; None when no writable place exists (numba would
    then fall back to the source's own directory, which must stay clean)."""
    user = os.environ.get("NUMBA_CACHE_DIR")
    path = Path(user) if user else user_cache_dir("numba")
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return None
    return path


def _numba_locator() -> Any:
    """numba's locator for a user-set cache directory, or None: the locators are an internal API,
    and another numba keeps its own, path-keyed cache."""
    try:
        from numba.core.caching import UserProvidedCacheLocator
    except ImportError:  # pragma: no cover - depends on the numba version
        return None
    return UserProvidedCacheLocator


_NumbaLocator: Any = _numba_locator()
_LOCATOR: str | None = None  # the import path numba is given for `_SourceKeyedLocator`, when it can take one
if _NumbaLocator is not None and hasattr(numba.config, "CACHE_LOCATOR_CLASSES"):

    class _SourceKeyedLocator(_NumbaLocator):
        """numba's place for the kernel's compiled code, named by this file's content instead of by
        its directory (numba's own choice): another checkout of the same code loads what one
        compiled (about 7 s saved per new checkout); changed code gets a place of its own."""

        def __init__(self, py_func: Any, py_file: str) -> None:
            super().__init__(py_func, py_file)
            digest = hashlib.sha256(Path(py_file).read_bytes()).hexdigest()[:20]
            config: Any = numba.config  # its settings are set at run time: untyped
            self._cache_path = os.path.join(config.CACHE_DIR, f"kernel-{digest}")

    _LOCATOR = f"{__name__}.{_SourceKeyedLocator.__name__}"


# Argument types, spelled out: each function is compiled once, for exactly these (C-ordered
# arrays, int64 indices), at import or from the cache, instead of once per literal a call site
# happens to pass.
_F8 = numba.float64
_I8 = numba.int64
_F8_2 = numba.float64[:, ::1]
_F8_3 = numba.float64[:, :, ::1]
_I8_1 = numba.int64[::1]
_I8_2 = numba.int64[:, ::1]
_B1_1 = numba.boolean[::1]
_B1_2 = numba.boolean[:, ::1]


def _jit(signature: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``njit`` for `signature` with numpy's error model (1/0 is inf, not an exception: a
    failed row is seen by its NaN), releasing the GIL, cached under `cache_dir` when there is one."""

    def compile_(func: Callable[..., Any]) -> Callable[..., Any]:
        options: dict[str, Any] = {"nogil": True, "error_model": "numpy"}
        where = cache_dir()
        if where is None:
            return numba.njit(signature, **options)(func)
        # numba reads its cache directory when the function is decorated: set it for this
        # decoration only, so other numba users in the process keep their own setting.
        # The locator is named by its import path (numba's NUMBA_CACHE_LOCATOR_CLASSES setting).
        config: Any = numba.config  # its settings are set at run time: untyped
        saved = config.CACHE_DIR, getattr(config, "CACHE_LOCATOR_CLASSES", None)
        config.CACHE_DIR = str(where)
        if _LOCATOR is not None:
            config.CACHE_LOCATOR_CLASSES = _LOCATOR
        try:
            return numba.njit(signature, cache=True, **options)(func)
        except (RuntimeError, OSError):  # no cache locator or a failed write: compile in memory
            return numba.njit(signature, **options)(func)
        finally:
            config.CACHE_DIR = saved[0]
            if _LOCATOR is not None:
                config.CACHE_LOCATOR_CLASSES = saved[1]

    return compile_


@_jit(_F8(_F8, _F8))
def _nan_max(a: float, b: float) -> float:
    # np.maximum: NaN wins, so a NaN change never counts as converged.
    if a != a or b != b:
        return math.nan
    return a if a >= b else b


@_jit(_F8(_F8, _F8))
def _erfc_poly(t: float, c0: float) -> float:
    return c0 + t * (
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


@_jit(_F8(_F8))
def _normal_cdf(x: float) -> float:
    t = 1.0 / (1.0 + abs(x) * _INV_2SQRT2)
    r = t * math.exp(_erfc_poly(t, _ERFC_C0) - x * x * 0.5)
    return 1.0 - 0.5 * r if x > 0 else 0.5 * r


@_jit(_F8(_F8))
def _normal_pdf(x: float) -> float:
    return _PDF_SCALE * math.exp(-(x * x / 2))


#: Rows rated in lockstep by one thread: independent chains that the CPU overlaps (and
#: vectorizes where there is no libm call), where one row alone waits on each division.
_LANES = 16

# Per-lane state in `_rate_group`'s scratch array ``work[q, k, lane]``, q:
_PRIOR_PI, _PRIOR_TAU, _S_PI, _S_TAU, _LEFT_PI, _LEFT_TAU, _RIGHT_PI, _RIGHT_TAU = range(8)
_STATE = 8  # the rows above travel with their lane when lanes are reordered
_CAV, _TMP, _CHANGE = 8, 9, 10  # scratch for the lane's current position, not state


@_jit(numba.void(_I8, _I8, _F8_3))
def _down(k: int, c: int, work: np.ndarray) -> None:
    """Difference k of lanes 0..c-1 from its teams' cavities into ``work[_CAV]`` rows (a_var,
    a_mean, b_var, b_mean, d_var, d_mean). The chain's open ends send nothing: no right
    message into team 0, and left[n-1] stays 0."""
    cav = work[_CAV]
    for j in range(c):
        from_right_pi = work[_RIGHT_PI, k - 1, j] if k > 0 else 0.0
        from_right_tau = work[_RIGHT_TAU, k - 1, j] if k > 0 else 0.0
        a_var = 1.0 / (work[_S_PI, k, j] + from_right_pi)
        a_mean = (work[_S_TAU, k, j] + from_right_tau) * a_var
        b_var = 1.0 / (work[_S_PI, k + 1, j] + work[_LEFT_PI, k + 1, j])
        b_mean = (work[_S_TAU, k + 1, j] + work[_LEFT_TAU, k + 1, j]) * b_var
        cav[0, j] = a_var
        cav[1, j] = a_mean
        cav[2, j] = b_var
        cav[3, j] = b_mean
        cav[4, j] = a_var + b_var
        cav[5, j] = a_mean - b_mean


@_jit(numba.void(_I8, _I8, _B1_1, _F8, _F8_3, _F8_3, _B1_1))
def _truncate(
    k: int, c: int, tie: np.ndarray, margin: float, work: np.ndarray, trunc: np.ndarray, bad: np.ndarray
) -> None:
    """Truncation k of lanes 0..c-1 into ``trunc[:, k]`` = (mean, var, pi, tau), the sweep's
    largest changes into ``work[_CHANGE]`` = (tau, pi); `bad` where trueskill would raise."""
    cav = work[_CAV]
    tmp = work[_TMP]
    change = work[_CHANGE]
    # The win case for every lane, in passes so that the libm calls sit in a loop of their
    # own and the arithmetic around them can be vectorized.
    for j in range(c):
        sd = math.sqrt(cav[4, j])
        x = (cav[5, j] - margin) / sd
        zz = x * x * 0.5
        t = 1.0 / (1.0 + abs(x) * _INV_2SQRT2)
        tmp[0, j] = sd
        tmp[1, j] = x
        tmp[2, j] = t
        tmp[3, j] = _erfc_poly(t, _ERFC_C0_HALF) - zz
        tmp[4, j] = _LOG_PDF_SCALE - zz
    for j in range(c):
        tmp[3, j] = math.exp(tmp[3, j])
        tmp[4, j] = math.exp(tmp[4, j])
    for j in range(c):
        x = tmp[1, j]
        half_r = tmp[2, j] * tmp[3, j]
        cdf = 1.0 - half_r if x > 0 else half_r
        v = tmp[4, j] / cdf
        tmp[5, j] = v
        tmp[6, j] = v * (v + x)
    for j in range(c):
        if tie[j]:
            # trueskill's v_draw / w_draw; a tie fails when its cdf difference is 0.
            sd = tmp[0, j]
            diff = cav[5, j] / sd
            m = margin / sd
            abs_diff = abs(diff)
            a = m - abs_diff
            b = -m - abs_diff
            denom = _normal_cdf(a) - _normal_cdf(b)
            pdf_a = _normal_pdf(a)
            pdf_b = _normal_pdf(b)
            v_abs = (pdf_b - pdf_a) / denom if denom != 0 else a
            tmp[5, j] = -v_abs if diff < 0 else v_abs
            tmp[6, j] = v_abs * v_abs + (a * pdf_a - b * pdf_b) / denom if denom != 0 else math.nan
    for j in range(c):
        sd = tmp[0, j]
        v = tmp[5, j]
        w = tmp[6, j]
        # trueskill raises unless 0 < w < 1 for a win (NaN fails too); a tie only on NaN.
        if (not math.isfinite(w)) if tie[j] else not (w > 0 and w < 1):
            bad[j] = True
        inv_w = 1.0 / w
        mean = cav[5, j] + v * sd * inv_w
        var = cav[4, j] * (inv_w - 1.0)
        pi = 1.0 / var
        tau = mean * pi
        change[0, j] = _nan_max(change[0, j], abs(trunc[3, k, j] - tau))
        change[1, j] = _nan_max(change[1, j], abs(trunc[2, k, j] - pi))
        trunc[0, k, j] = mean
        trunc[1, k, j] = var
        trunc[2, k, j] = pi
        trunc[3, k, j] = tau


@_jit(numba.void(_I8, _I8, _F8_3, _F8_3))
def _right(k: int, c: int, work: np.ndarray, trunc: np.ndarray) -> None:
    """Message from difference k up to team k+1 (after `_down(k)`)."""
    cav = work[_CAV]
    for j in range(c):
        pi = 1.0 / (cav[0, j] + trunc[1, k, j])
        work[_RIGHT_PI, k, j] = pi
        work[_RIGHT_TAU, k, j] = (cav[1, j] - trunc[0, k, j]) * pi


@_jit(numba.void(_I8, _I8, _F8_3, _F8_3))
def _left(k: int, c: int, work: np.ndarray, trunc: np.ndarray) -> None:
    """Message from difference k up to team k (after `_down(k)`)."""
    cav = work[_CAV]
    for j in range(c):
        pi = 1.0 / (trunc[1, k, j] + cav[2, j])
        work[_LEFT_PI, k, j] = pi
        work[_LEFT_TAU, k, j] = (trunc[0, k, j] + cav[3, j]) * pi


@_jit(numba.void(_I8, _I8, _I8, _F8_3, _F8_3, _I8_1, _I8_1))
def _swap_lanes(
    i: int, j: int, n: int, work: np.ndarray, trunc: np.ndarray, rows: np.ndarray, events: np.ndarray
) -> None:
    """Exchange lanes i and j: their state, row and event."""
    for q in range(_STATE):
        for k in range(n):
            work[q, k, i], work[q, k, j] = work[q, k, j], work[q, k, i]
    for q in range(4):
        for k in range(n - 1):
            trunc[q, k, i], trunc[q, k, j] = trunc[q, k, j], trunc[q, k, i]
    rows[i], rows[j] = rows[j], rows[i]
    events[i], events[j] = events[j], events[i]


@_jit(numba.boolean(_I8, _I8_1, _I8_1, _I8, _I8_2, _B1_2, _F8_2, _F8_2, _F8, _F8, _F8, _F8_3, _F8_3, _B1_2))
def _rate_group(
    c: int,
    rows: np.ndarray,
    events: np.ndarray,
    n: int,
    players: np.ndarray,
    ties: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    tau2: float,
    beta2: float,
    margin: float,
    work: np.ndarray,
    trunc: np.ndarray,
    flags: np.ndarray,
) -> bool:
    """One game of `n` players in each of lanes 0..c-1 (row rows[j] plays event events[j]),
    in lockstep; False where trueskill would raise. `work` and `trunc` are scratch arrays,
    `flags` = (bad, tie) per lane; `rows` and `events` come back reordered.

    The lanes still sweeping are always 0..active-1: a lane that converges swaps places with
    the last of them and keeps that sweep's messages, so the loops run without per-lane
    branches and do no work for converged lanes."""
    bad, tie = flags[0], flags[1]
    for k in range(n):
        for j in range(c):
            p = players[events[j], k]
            sg = sigma[rows[j], p]
            # Prior with dynamics, then the performance likelihood (beta) and the one-player
            # team sum: team k's message from its player.
            p_pi = math.sqrt(sg * sg + tau2) ** -2.0
            p_tau = p_pi * mu[rows[j], p]
            a = 1.0 / (1.0 + beta2 * p_pi)
            work[_PRIOR_PI, k, j] = p_pi
            work[_PRIOR_TAU, k, j] = p_tau
            work[_S_PI, k, j] = a * p_pi
            work[_S_TAU, k, j] = a * p_tau
            work[_LEFT_PI, k, j] = 0.0
            work[_LEFT_TAU, k, j] = 0.0
            work[_RIGHT_PI, k, j] = 0.0
            work[_RIGHT_TAU, k, j] = 0.0
    for q in range(4):
        for k in range(n - 1):
            for j in range(c):
                trunc[q, k, j] = 0.0
    for j in range(c):
        bad[j] = False
        work[_CHANGE, 0, j] = 0.0
        work[_CHANGE, 1, j] = 0.0
    if n == 2:
        # One difference: trueskill's second sweep recomputes the same message.
        for j in range(c):
            tie[j] = ties[events[j], 0]
        _down(0, c, work)
        _truncate(0, c, tie, margin, work, trunc, bad)
        for j in range(c):
            if bad[j]:
                return False
    else:
        active = c
        for _sweep in range(_MAX_SWEEPS):
            for j in range(active):
                work[_CHANGE, 0, j] = 0.0
                work[_CHANGE, 1, j] = 0.0
            for k in range(n - 2):
                for j in range(active):
                    tie[j] = ties[events[j], k]
                _down(k, active, work)
                _truncate(k, active, tie, margin, work, trunc, bad)
                _right(k, active, work, trunc)
            for k in range(n - 2, 0, -1):
                for j in range(active):
                    tie[j] = ties[events[j], k]
                _down(k, active, work)
                _truncate(k, active, tie, margin, work, trunc, bad)
                _left(k, active, work, trunc)
            j = 0
            while j < active:
                if bad[j]:
                    return False
                # trueskill's delta: max(|d tau|, sqrt |d pi|) over the sweep.
                if _nan_max(work[_CHANGE, 0, j], math.sqrt(work[_CHANGE, 1, j])) <= _MIN_DELTA:
                    active -= 1
                    _swap_lanes(j, active, n, work, trunc, rows, events)
                    bad[j], bad[active] = bad[active], bad[j]
                    work[_CHANGE, 0, j] = work[_CHANGE, 0, active]
                    work[_CHANGE, 1, j] = work[_CHANGE, 1, active]
                    # lane j now holds a lane not checked yet
                else:
                    j += 1
            if active == 0:
                break
    # Both ends of the chain, then back up through the sums and likelihoods (every lane).
    _down(0, c, work)
    _left(0, c, work, trunc)
    _down(n - 2, c, work)
    _right(n - 2, c, work, trunc)
    for k in range(n):
        for j in range(c):
            up_pi = work[_LEFT_PI, k, j] + (work[_RIGHT_PI, k - 1, j] if k > 0 else 0.0)
            up_tau = work[_LEFT_TAU, k, j] + (work[_RIGHT_TAU, k - 1, j] if k > 0 else 0.0)
            a_up = 1.0 / (1.0 + beta2 * up_pi)
            out_pi = work[_PRIOR_PI, k, j] + a_up * up_pi
            out_tau = work[_PRIOR_TAU, k, j] + a_up * up_tau
            p = players[events[j], k]
            mu[rows[j], p] = out_tau / out_pi
            sigma[rows[j], p] = math.sqrt(1.0 / out_pi)
    return True


@_jit(numba.void(_I8_1, _I8_2, _B1_2, _I8_2, _F8_2, _F8_2, _I8, _I8, _F8, _F8, _F8, _B1_1))
def _rate_rows_kernel(
    sizes: np.ndarray,
    players: np.ndarray,
    ties: np.ndarray,
    sequences: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    row_lo: int,
    row_hi: int,
    tau2: float,
    beta2: float,
    margin: float,
    failed: np.ndarray,
) -> None:
    """Rate rows row_lo..row_hi-1 in place, `_LANES` rows at a time; on an update trueskill
    cannot compute, set failed[row] and stop (the caller raises)."""
    width = players.shape[1]
    lanes = _LANES
    work = np.zeros((11, max(width, 7), lanes))
    trunc = np.zeros((4, max(width - 1, 1), lanes))
    flags = np.zeros((2, lanes), dtype=np.bool_)
    rows = np.empty(lanes, dtype=np.int64)
    events = np.empty(lanes, dtype=np.int64)
    group_rows = np.empty(lanes, dtype=np.int64)
    group_events = np.empty(lanes, dtype=np.int64)
    done = np.empty(lanes, dtype=np.bool_)
    steps = sequences.shape[1]
    for first in range(row_lo, row_hi, lanes):
        count = min(lanes, row_hi - first)
        for j in range(count):
            rows[j] = first + j
        for s in range(steps):
            for j in range(count):
                events[j] = sequences[rows[j], s]
                done[j] = False
            # Lanes whose games have the same size go together (usually all of them).
            for i in range(count):
                if done[i]:
                    continue
                n = sizes[events[i]]
                c = 0
                for j in range(i, count):
                    if not done[j] and sizes[events[j]] == n:
                        group_rows[c] = rows[j]
                        group_events[c] = events[j]
                        done[j] = True
                        c += 1
                if not _rate_group(
                    c, group_rows, group_events, n, players, ties, mu, sigma, tau2, beta2, margin, work, trunc, flags
                ):
                    for j in range(count):
                        failed[rows[j]] = True
                    return


def rate_rows_compiled(
    sizes: np.ndarray,
    players: np.ndarray,
    ties: np.ndarray,
    sequences: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    tau2: float,
    beta2: float,
    margin: float,
    threads: int | None = None,
) -> bool:
    """Rate every row of `sequences` in place in `mu`/`sigma` (``[rows, players]``, C order);
    False when some row hit an update trueskill cannot compute. Rows are split into one
    contiguous block per thread; `threads` None: the cores this process may use, or one for
    a small job."""
    rows, steps = sequences.shape
    failed = np.zeros(rows, dtype=np.bool_)
    if threads is None:
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        threads = 1 if rows * steps < _THREAD_MIN_WORK else usable or 1
    threads = max(1, min(threads, rows))
    args = (sizes, players, ties, sequences, mu, sigma)
    if threads == 1:
        _rate_rows_kernel(*args, 0, rows, tau2, beta2, margin, failed)
        return not failed.any()
    # Each thread writes only its own rows (and their `failed` entries): no shared sums.
    bounds = np.linspace(0, rows, threads + 1).astype(np.int64)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        jobs = [
            pool.submit(_rate_rows_kernel, *args, int(lo), int(hi), tau2, beta2, margin, failed)
            for lo, hi in zip(bounds[:-1], bounds[1:])
            if hi > lo
        ]
        for job in jobs:
            job.result()
    return not failed.any()
