"""The fast (compiled) TrueSkill passes against the reference, one trueskill call per game."""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import trueskill

from pipeline.core.rating.fast import compile_events, rate_rows
from pipeline.core.rating.multipass import (
    METHOD_ENV,
    FreeForAll,
    Pairwise,
    RatingEvent,
    RatingParams,
    bootstrap_intervals,
    multi_pass,
    pass_ratings,
    rating_summary,
)

TOLERANCE = 1e-6
ZERO_DRAW = RatingParams(draw_probability=0.0)
ELIMINATION = RatingParams(mu=4.0, sigma=8.3333, beta=4.1667, tau=0.0, draw_probability=0.0)


def corpus(seed: int, *, n_events: int = 120, ties: bool = False) -> list[RatingEvent]:
    """Free-for-alls of 2-8 players and pairwise games among 14 players of uneven skill.

    Two players are rare (in a few games only), so many pass prefixes and bootstrap
    resamples miss them. With `ties`, some free-for-all ranks repeat and some pairwise
    games are draws.
    """
    rng = np.random.default_rng(seed)
    names = [f"m{i:02d}" for i in range(12)]
    skill = rng.normal(0.0, 2.0, size=len(names))
    events: list[RatingEvent] = []
    for _ in range(n_events):
        if rng.random() < 0.35:
            a, b = (int(i) for i in rng.choice(len(names), size=2, replace=False))
            gap = skill[a] - skill[b] + rng.normal()
            outcome = "draw" if ties and abs(gap) < 0.3 else ("a" if gap > 0 else "b")
            events.append(Pairwise(names[a], names[b], outcome))  # type: ignore[arg-type]
            continue
        size = int(rng.integers(2, 9))
        table = rng.choice(len(names), size=size, replace=False)
        performance = skill[table] + rng.normal(size=size)
        if ties:
            performance = np.round(performance)  # equal performances tie
        order = np.argsort(-performance, kind="stable")
        ranks = {names[table[i]]: int(np.sum(performance > performance[i])) for i in order}
        events.append(FreeForAll(ranks))
    events.append(FreeForAll({"rare-1": 0, "m00": 1, "m01": 2}))
    events.append(Pairwise("rare-2", "m03", "b"))
    events.append(Pairwise("rare-1", "rare-2", "a"))
    return events


def assert_passes_equal(events: list[RatingEvent], params: RatingParams, passes: int, seed: int) -> None:
    fast_players, fast_mu, fast_sigma = pass_ratings(events, params, passes, seed, method="fast")
    ref_players, ref_mu, ref_sigma = pass_ratings(events, params, passes, seed, method="reference")
    assert fast_players == ref_players
    np.testing.assert_allclose(fast_mu, ref_mu, rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(fast_sigma, ref_sigma, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "params",
    [ZERO_DRAW, ELIMINATION, RatingParams(beta=1.0, tau=0.5, draw_probability=0.0)],
    ids=["defaults-no-draw", "elimination", "small-beta"],
)
def test_every_pass_equals_reference_without_ties(seed: int, params: RatingParams) -> None:
    assert_passes_equal(corpus(seed), params, passes=6, seed=seed + 10)


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("draw_probability", [0.1, 0.4])
def test_every_pass_equals_reference_with_ties_and_draws(seed: int, draw_probability: float) -> None:
    events = corpus(seed, ties=True)
    assert any(e.has_tie for e in events if isinstance(e, FreeForAll))
    assert any(e.has_tie for e in events if isinstance(e, Pairwise))
    assert_passes_equal(events, RatingParams(draw_probability=draw_probability), passes=4, seed=seed)


def test_pairwise_only_corpus_equals_reference() -> None:
    rng = np.random.default_rng(8)
    players = [f"q{i}" for i in range(6)]
    events: list[RatingEvent] = []
    for _ in range(150):
        a, b = (str(p) for p in rng.choice(players, size=2, replace=False))
        events.append(Pairwise(a, b, str(rng.choice(["a", "b", "draw"]))))  # type: ignore[arg-type]
    assert_passes_equal(events, RatingParams(draw_probability=0.25), passes=5, seed=1)
    decisive = [e for e in events if not e.has_tie]
    assert_passes_equal(decisive, ZERO_DRAW, passes=5, seed=1)


def test_hard_updates_from_given_ratings_match_trueskill() -> None:
    """Extreme upsets from confident ratings: many sweeps (up to trueskill's cap of 10),
    rows converging at different sweeps; each row is one trueskill.rate call."""
    rng = np.random.default_rng(5)
    params = RatingParams(beta=0.2, tau=0.0, draw_probability=0.0)
    env = params.env()
    n_players, rows = 3, 400
    names = ["a", "b", "c"]
    table = compile_events([FreeForAll({"a": 0, "b": 1, "c": 2})], dict(zip(names, range(3))))
    want_mu = np.empty((rows, n_players))
    want_sigma = np.empty((rows, n_players))
    start_mu = np.empty((rows, n_players))
    start_sigma = np.empty((rows, n_players))
    kept = 0
    while kept < rows:
        mu = rng.normal(25.0, 3.0, size=n_players)
        sigma = rng.uniform(0.1, 0.5, size=n_players)
        try:
            rated = env.rate([(env.create_rating(m, s),) for m, s in zip(mu, sigma)], ranks=[0, 1, 2])
        except FloatingPointError:
            continue  # trueskill cannot rate this row; tested below
        start_mu[kept], start_sigma[kept] = mu, sigma
        want_mu[kept] = [r.mu for (r,) in rated]
        want_sigma[kept] = [r.sigma for (r,) in rated]
        kept += 1
    got_mu, got_sigma = rate_rows(
        table, np.zeros((rows, 1), dtype=np.int64), n_players, params, start=(start_mu, start_sigma)
    )
    np.testing.assert_allclose(got_mu, want_mu, rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(got_sigma, want_sigma, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("size", [2, 5])
def test_update_trueskill_cannot_compute_raises_in_both(size: int) -> None:
    # Confident favourites finishing last: trueskill's w leaves (0, 1) and it raises.
    params = RatingParams(beta=0.2, tau=0.0, draw_probability=0.0)
    env = params.env()
    mu = np.linspace(0.0, 200.0, size)
    sigma = np.full(size, 0.1)
    with pytest.raises(FloatingPointError):
        env.rate([(env.create_rating(m, s),) for m, s in zip(mu, sigma)], ranks=list(range(size)))
    names = [f"p{i}" for i in range(size)]
    table = compile_events([FreeForAll({p: i for i, p in enumerate(names)})], dict(zip(names, range(size))))
    # The same game where the favourites win by a modest margin is fine in both.
    fine = np.linspace(2.0 * (size - 1), 0.0, size)
    env.rate([(env.create_rating(m, s),) for m, s in zip(fine, sigma)], ranks=list(range(size)))
    fine_mu, _ = rate_rows(table, np.zeros((1, 1), dtype=np.int64), size, params, start=(fine[None], sigma[None]))
    assert np.isfinite(fine_mu).all()
    # One failing row of two fails the whole call, as the reference pass would.
    start = (np.stack([fine, mu]), np.stack([sigma, sigma]))
    with pytest.raises(FloatingPointError):
        rate_rows(table, np.zeros((2, 1), dtype=np.int64), size, params, start=start)


def test_public_frames_agree_between_methods() -> None:
    events = corpus(6)
    fast = multi_pass(events, ZERO_DRAW, passes=5, seed=2, method="fast")
    reference = multi_pass(events, ZERO_DRAW, passes=5, seed=2, method="reference")
    assert fast.columns == reference.columns == ["player", "mu", "sigma", "mu_sd", "events", "passes"]
    assert fast["player"].to_list() == reference["player"].to_list()
    assert fast.select("events", "passes").equals(reference.select("events", "passes"))
    for column in ("mu", "sigma", "mu_sd"):
        np.testing.assert_allclose(fast[column].to_numpy(), reference[column].to_numpy(), atol=TOLERANCE)

    boot_fast = bootstrap_intervals(events, ZERO_DRAW, passes=2, seed=2, resamples=6, method="fast")
    boot_ref = bootstrap_intervals(events, ZERO_DRAW, passes=2, seed=2, resamples=6, method="reference")
    assert boot_fast.select("player", "resamples_present").equals(boot_ref.select("player", "resamples_present"))
    for column in ("mu_lo", "mu_hi"):
        np.testing.assert_allclose(boot_fast[column].to_numpy(), boot_ref[column].to_numpy(), atol=TOLERANCE)
    # The rare players (2 of 123 games) are missing from some resamples: both paths agree.
    rare = boot_fast.filter(pl.col("player").str.starts_with("rare"))["resamples_present"]
    assert rare.min() < 6

    summary_fast = rating_summary(events, ZERO_DRAW, 3, 2, resamples=5, bootstrap_passes=2, method="fast")
    summary_ref = rating_summary(events, ZERO_DRAW, 3, 2, resamples=5, bootstrap_passes=2, method="reference")
    assert summary_fast.select("player", "rank", "rank_lo", "rank_hi", "events").equals(
        summary_ref.select("player", "rank", "rank_lo", "rank_hi", "events")
    )


def test_method_switch_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    events = corpus(7, n_events=30)
    monkeypatch.setenv(METHOD_ENV, "reference")
    by_env = multi_pass(events, ZERO_DRAW, passes=2, seed=0)
    assert by_env.equals(multi_pass(events, ZERO_DRAW, passes=2, seed=0, method="reference"))
    for gone in ("quick", "numpy"):  # "numpy": the removed numpy engine
        monkeypatch.setenv(METHOD_ENV, gone)
        with pytest.raises(ValueError, match="'fast' or 'reference'"):
            multi_pass(events, ZERO_DRAW, passes=2, seed=0)


def test_ties_with_zero_draw_probability_raise_in_fast_path() -> None:
    with pytest.raises(ValueError, match="draw_probability"):
        multi_pass([Pairwise("a", "b", "draw")], ZERO_DRAW, passes=2, seed=0, method="fast")
    with pytest.raises(ValueError, match="draw_probability"):
        multi_pass([FreeForAll({"a": 0, "b": 0, "c": 1})], ZERO_DRAW, passes=1, seed=0, method="fast")


def test_trueskill_default_backend_is_what_fast_path_copies() -> None:
    # The fast path reimplements trueskill's pure-Python cdf/pdf; a different default
    # backend (scipy, mpmath) would make the reference disagree slightly.
    env = trueskill.TrueSkill()
    assert env.cdf is trueskill.backends.cdf
    assert env.pdf is trueskill.backends.pdf


def _rows_of(events: list[RatingEvent], rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(len(events)) for _ in range(rows)])


def test_compiled_engine_same_bytes_for_any_threads() -> None:
    events = corpus(12)
    players = sorted({p for e in events for p in e.players})
    table = compile_events(events, {p: j for j, p in enumerate(players)})
    sequences = _rows_of(events, 50, seed=4)
    one = rate_rows(table, sequences, len(players), ELIMINATION, threads=1)
    for threads in (2, 3, 7, None):
        again = rate_rows(table, sequences, len(players), ELIMINATION, threads=threads)
        assert again[0].tobytes() == one[0].tobytes()
        assert again[1].tobytes() == one[1].tobytes()


def test_kernel_cache_stays_out_of_the_source_tree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pipeline.core.rating import kernel as rating_kernel

    # pipeline/core is a DVC dependency: numba's own default (__pycache__ beside the source)
    # would change its hash.
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert rating_kernel.cache_dir() == tmp_path / "tournament-pipeline" / "numba"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert rating_kernel.cache_dir() == tmp_path / "mine"
    # Nowhere writable: no cache (compiled in memory), never the source directory.
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker / "under-a-file"))
    assert rating_kernel.cache_dir() is None
    source_dir = Path(rating_kernel.__file__).parent
    assert not glob.glob(str(source_dir / "__pycache__" / "kernel*.nb*"))


def test_kernel_schedule_constants_are_trueskills() -> None:
    from pipeline.core.rating import kernel as rating_kernel

    assert rating_kernel._MIN_DELTA == trueskill.DELTA
    assert rating_kernel._MAX_SWEEPS == 10
