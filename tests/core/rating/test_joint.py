"""The joint rating over benchmarks: known orders recovered, every benchmark weighted equally,
provisional models that never move the full-coverage ones, the anchor, and the events table."""

from __future__ import annotations

import math
import random
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.rating.events import FreeForAll, Pairwise, TeamMatch
from pipeline.core.rating.joint import (
    JointSettings,
    comparisons,
    events_frame,
    joint_fit,
    kendall_tau,
    read_rating_events,
    write_rating_events,
)

SKILLS = {"ace": 2.0, "bold": 1.0, "calm": 0.0, "dull": -1.0}


def ffa_games(skills: dict[str, float], games: int, seed: int, prefix: str) -> list[tuple[str, FreeForAll]]:
    """Free-for-all games of everyone, placed by skill plus Gumbel noise (Plackett-Luce)."""
    rng = random.Random(seed)
    out = []
    for g in range(games):
        perf = {m: s - math.log(-math.log(rng.random())) for m, s in skills.items()}
        order = sorted(perf, key=lambda m: -perf[m])
        out.append((f"{prefix}{g}", FreeForAll({m: i + 1 for i, m in enumerate(order)})))
    return out


def pair_games(skills: dict[str, float], games: int, seed: int, prefix: str) -> list[tuple[str, Pairwise]]:
    rng = random.Random(seed)
    names = sorted(skills)
    out = []
    for g in range(games):
        a, b = rng.sample(names, 2)
        p = 1 / (1 + math.exp(skills[b] - skills[a]))
        out.append((f"{prefix}{g}", Pairwise(a, b, "a" if rng.random() < p else "b")))
    return out


def settings(**kw: object) -> JointSettings:
    return JointSettings(**{"resamples": 50, **kw})  # type: ignore[arg-type]


def test_known_order_is_recovered_with_settled_intervals() -> None:
    tables = {
        "ffa": events_frame(ffa_games(SKILLS, 60, 1, "f")),
        "duel": events_frame(pair_games(SKILLS, 120, 2, "d")),
    }
    fit = joint_fit(tables, settings())
    order = list(fit.ratings)
    assert order == ["ace", "bold", "calm", "dull"]
    assert kendall_tau(order, {m: r.score for m, r in fit.ratings.items()}) == 1.0
    for r in fit.ratings.values():
        assert r.complete and r.settled and r.score_lo < r.score < r.score_hi
        assert r.games_by_benchmark["ffa"] == 60
    # the mean of the full-coverage models is 1000
    assert sum(r.score for r in fit.ratings.values()) / 4 == pytest.approx(1000.0)
    # the same inputs give the same numbers
    again = joint_fit(tables, settings())
    assert [(r.score, r.score_lo, r.score_hi) for r in again.ratings.values()] == [
        (r.score, r.score_lo, r.score_hi) for r in fit.ratings.values()
    ]


def test_every_benchmark_weighs_the_same_whatever_its_games() -> None:
    """ace wins every one of 200 games of one benchmark, bold every one of 10 of another: one benchmark
    each, so neither is ahead; counting games would put ace far ahead."""
    big = [(f"b{g}", Pairwise("ace", "bold", "a")) for g in range(200)]
    small = [(f"s{g}", Pairwise("ace", "bold", "b")) for g in range(10)]
    fit = joint_fit({"big": events_frame(big), "small": events_frame(small)}, settings(resamples=0))
    assert fit.ratings["ace"].score == pytest.approx(fit.ratings["bold"].score, abs=1e-6)
    assert fit.weights == {"big": pytest.approx(105 / 200), "small": pytest.approx(105 / 10)}


def test_a_model_that_missed_a_benchmark_is_provisional_and_moves_no_one() -> None:
    tables = {
        "ffa": ffa_games(SKILLS, 40, 3, "f"),
        "duel": pair_games(SKILLS, 80, 4, "d"),
    }
    before = joint_fit({k: events_frame(v) for k, v in tables.items()}, settings())
    # a newcomer who plays only the duels and wins them all
    extra = [(f"n{g}", Pairwise("newcomer", m, "a")) for g, m in enumerate(sorted(SKILLS) * 5)]
    after = joint_fit({"ffa": events_frame(tables["ffa"]), "duel": events_frame(tables["duel"] + extra)}, settings())
    newcomer = after.ratings["newcomer"]
    assert newcomer.provisional and newcomer.games_by_benchmark == {"duel": 20}
    assert newcomer.rank == 5 and list(after.ratings)[-1] == "newcomer"  # listed after every full-coverage model
    assert newcomer.score > after.ratings["ace"].score  # its own score still says it won
    # the full-coverage models' point scores do not change (the duel benchmark's weight does, their
    # comparisons keep their ratio, so the scores stay put up to the solver's tolerance)
    for model in SKILLS:
        assert after.ratings[model].score == pytest.approx(before.ratings[model].score, abs=1e-6)
        assert after.ratings[model].rank == before.ratings[model].rank


def test_the_anchor_holds_its_score_in_every_resample() -> None:
    tables = {"ffa": events_frame(ffa_games(SKILLS, 40, 5, "f"))}
    fit = joint_fit(tables, settings(anchor="calm"))
    calm = fit.ratings["calm"]
    assert calm.score == calm.score_lo == calm.score_hi == 1000.0
    assert fit.ratings["ace"].score > 1000.0 > fit.ratings["dull"].score


def test_few_games_are_unsettled_and_span_their_section() -> None:
    tables = {"ffa": events_frame(ffa_games(SKILLS, 5, 6, "f"))}
    fit = joint_fit(tables, settings())
    for r in fit.ratings.values():
        assert not r.settled and (r.rank_lo, r.rank_hi) == (1, 4)


def test_events_table_round_trips_and_breaks_into_weighted_pairs(tmp_path: Path) -> None:
    events = [
        ("g1", FreeForAll({"a": 1, "b": 2, "c": 2})),
        ("g2", Pairwise("a", "b", "draw")),
        ("g3", TeamMatch(a=("spy",), b=("a", "b"), outcome="a")),
    ]
    path = tmp_path / "rating_events.parquet"
    write_rating_events(path, events)
    table = read_rating_events(path)
    assert table.height == 3 + 2 + 3
    assert table.filter(pl.col("game") == "g3").sort("player").rows() == [
        ("g3", 2, "a", 1, 2),
        ("g3", 2, "b", 1, 2),
        ("g3", 2, "spy", 0, 1),
    ]
    data = comparisons({"x": table})
    pairs = sorted(
        (data.players[i], data.players[j], s, round(w, 4))
        for i, j, s, w in zip(data.i, data.j, data.score, data.weight)
    )
    # a 3-seat free-for-all: each pair 1/2 (b and c tie); a 1v1 draw: 1; a 1 vs 2 team match: 1/2 a pair
    assert pairs == [
        ("a", "b", 0.5, 1.0),
        ("a", "b", 1.0, 0.5),
        ("a", "c", 1.0, 0.5),
        ("b", "c", 0.5, 0.5),
        ("spy", "a", 1.0, 0.5),
        ("spy", "b", 1.0, 0.5),
    ]


def test_kendall_tau() -> None:
    assert kendall_tau(["a", "b", "c"], {"a": 3, "b": 2, "c": 1}) == 1.0
    assert kendall_tau(["a", "b", "c"], {"a": 1, "b": 2, "c": 3}) == -1.0
    assert kendall_tau(["a"], {"a": 1}) is None


def test_the_hierarchical_variant_shrinks_to_the_plain_fit_and_keeps_the_order() -> None:
    tables = {
        "ffa": events_frame(ffa_games(SKILLS, 40, 7, "f")),
        "duel": events_frame(pair_games(SKILLS, 80, 8, "d")),
    }
    plain = joint_fit(tables, settings(resamples=0))
    tight = joint_fit(tables, settings(resamples=0, deviation_sd=1e-3))
    for model in SKILLS:  # deviations held at zero: one skill for every benchmark, the plain model
        assert tight.ratings[model].score == pytest.approx(plain.ratings[model].score, abs=0.5)
    loose = joint_fit(tables, settings(deviation_sd=0.5))
    assert list(loose.ratings) == ["ace", "bold", "calm", "dull"]
    # a deviation explains part of each benchmark's margins: the general skills spread less
    plain_spread = plain.ratings["ace"].score - plain.ratings["dull"].score
    assert 0 < loose.ratings["ace"].score - loose.ratings["dull"].score < plain_spread
