"""The adaptive schedule (pipeline.core.rating.adaptive): its tables, its stopping rule, its
determinism, and that ratings stay valid and corrected rates stay unbiased under it, on a
synthetic field with known skills (outcomes from TrueSkill's own performance model)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from pipeline.core.rating import (
    AdaptiveSchedule,
    FreeForAll,
    Pairwise,
    RatingEvent,
    RatingParams,
    Standing,
    fixed_round,
    meetings,
    multi_pass,
    new_standing,
    next_round,
    opponent_rates,
    overdue_after,
    pair_values,
    stop_reason,
    update_standings,
)

PARAMS = RatingParams(mu=25.0, sigma=25.0 / 3.0, beta=25.0 / 6.0, tau=0.0, draw_probability=0.0)
SEEDS = range(6)


def field(n: int) -> dict[str, float]:
    """Known skills: the prior's normal quantiles; names in an order unrelated to skill."""
    skills = [PARAMS.mu + PARAMS.sigma * NormalDist().inv_cdf((i + 0.5) / n) for i in range(n)]
    order = np.random.default_rng(99).permutation(n)
    return {f"m{int(order[i]):02d}": skills[i] for i in range(n)}


def true_uniform_rate(skills: dict[str, float]) -> dict[str, float]:
    """P(beat a uniformly chosen other model) under the performance model."""
    scale = math.sqrt(2) * PARAMS.beta
    return {
        a: float(np.mean([NormalDist().cdf((sa - sb) / scale) for b, sb in skills.items() if b != a]))
        for a, sa in skills.items()
    }


def simulate(kind: str, skills: dict[str, float], seats: int, rounds: int, seed: int) -> list[RatingEvent]:
    schedule = AdaptiveSchedule(seats=seats, tables_per_round=len(skills) // seats)
    standings = {name: new_standing(PARAMS) for name in skills}
    games = dict.fromkeys(skills, 0)
    met: dict[tuple[str, str], int] = {}
    rng = np.random.default_rng([seed, 7])
    events: list[RatingEvent] = []
    for r in range(rounds):
        if kind == "adaptive":
            round_ = next_round(standings, schedule, PARAMS, seed, r, met)
        else:
            round_ = fixed_round(games, schedule, seed, r)
        played: list[RatingEvent] = []
        for table in round_.tables:
            perf = [skills[name] + rng.normal(0.0, PARAMS.beta) for name in table]
            if seats == 2:
                played.append(Pairwise(table[0], table[1], "a" if perf[0] > perf[1] else "b"))
            else:
                order = np.argsort(-np.array(perf))
                played.append(FreeForAll({table[k]: place for place, k in enumerate(order, start=1)}))
        standings = update_standings(standings, played, PARAMS)
        met = meetings(played, met)
        for name in round_.players:
            games[name] += 1
        events.extend(played)
    return events


def kendall_tau(skills: dict[str, float], mu: dict[str, float]) -> float:
    names = sorted(skills)
    pairs = [(a, b) for k, a in enumerate(names) for b in names[k + 1 :]]
    agree = sum(np.sign(skills[a] - skills[b]) * np.sign(mu[a] - mu[b]) for a, b in pairs)
    return float(agree / len(pairs))


def rated(events: list[RatingEvent]) -> dict[str, Standing]:
    table = multi_pass(events, PARAMS, passes=4, seed=0)
    return {p: Standing(mu=m, sigma=s) for p, m, s in zip(table["player"], table["mu"], table["sigma"])}


@pytest.fixture(scope="module")
def runs() -> dict[str, list[list[RatingEvent]]]:
    """Pairwise games on a 10-model field, both schedules, several seeds (shared by the tests
    on bias so the simulation runs once)."""
    skills = field(10)
    return {kind: [simulate(kind, skills, 2, 60, seed) for seed in SEEDS] for kind in ("fixed", "adaptive")}


def test_same_inputs_and_seed_give_the_same_tables() -> None:
    standings = {f"m{i}": Standing(mu=20.0 + i, sigma=3.0 + 0.1 * (i % 3)) for i in range(12)}
    schedule = AdaptiveSchedule(seats=6, tables_per_round=2)
    first = next_round(standings, schedule, PARAMS, seed=5, round_index=3)
    again = next_round(dict(reversed(list(standings.items()))), schedule, PARAMS, seed=5, round_index=3)
    assert first == again
    assert [len(t) for t in first.tables] == [6, 6]
    assert len(first.players) == 12  # no one seated twice
    runs = [simulate("adaptive", field(8), 2, 10, seed=1) for _ in range(2)]
    assert runs[0] == runs[1]


def test_a_round_never_seats_more_tables_than_the_field_fills() -> None:
    standings = {f"m{i}": new_standing(PARAMS) for i in range(7)}
    round_ = next_round(standings, AdaptiveSchedule(seats=2, tables_per_round=10), PARAMS, seed=0, round_index=0)
    assert len(round_.tables) == 3
    assert next_round(standings, AdaptiveSchedule(seats=8), PARAMS, 0, 0).tables == ()


def test_a_new_model_gets_placement_games_first() -> None:
    rated_field = {f"m{i}": Standing(mu=15.0 + 2 * i, sigma=1.5, games=36) for i in range(10)}
    # their games: a round robin, each pair four times
    met = {(a, b): 4 for k, a in enumerate(sorted(rated_field)) for b in sorted(rated_field)[k + 1 :]}
    rated_field["newcomer"] = new_standing(PARAMS)
    # One game a round; starvation is not in play here (the rule would seat the idle first).
    schedule = AdaptiveSchedule(seats=2, tables_per_round=1, max_idle_rounds=50)
    standings = dict(rated_field)
    rng = np.random.default_rng(3)
    seated = []
    for r in range(4):
        round_ = next_round(standings, schedule, PARAMS, seed=11, round_index=r, met=met)
        seated.append("newcomer" in round_.players)
        a, b = round_.tables[0]
        winner = "a" if rng.random() < 0.5 else "b"
        game = Pairwise(a, b, winner)
        standings = update_standings(standings, [game], PARAMS)
        met = meetings([game], met)
    assert all(seated), "the model nothing is known of plays every round until it is placed"


def test_no_model_starves() -> None:
    skills = field(12)
    schedule = AdaptiveSchedule(seats=2, tables_per_round=3, max_idle_rounds=2)
    standings = {name: new_standing(PARAMS) for name in skills}
    rng = np.random.default_rng(0)
    longest_idle = 0
    for r in range(60):
        round_ = next_round(standings, schedule, PARAMS, seed=2, round_index=r)
        games = []
        for a, b in round_.tables:
            better = skills[a] + rng.normal(0, PARAMS.beta) > skills[b] + rng.normal(0, PARAMS.beta)
            games.append(Pairwise(a, b, "a" if better else "b"))
        standings = update_standings(standings, games, PARAMS)
        longest_idle = max(longest_idle, max(s.idle_rounds for s in standings.values()))
    # 6 seats a round for 12 models: a rotation is 2 rounds, so a model is overdue after sitting
    # out 2 rotations (4 rounds) and seated the round after.
    assert overdue_after(len(skills), schedule) == 4
    assert longest_idle <= overdue_after(len(skills), schedule) + 1


def test_stops_when_every_neighbour_is_separable_or_the_budget_is_spent() -> None:
    apart = {"a": Standing(30.0, 1.0), "b": Standing(25.0, 1.0), "c": Standing(20.0, 1.0)}
    close = {**apart, "c": Standing(24.0, 1.0)}
    schedule = AdaptiveSchedule(z=2.0, budget_games=100)
    assert stop_reason(apart, schedule, games_played=10) == "separated"
    assert stop_reason(close, schedule, games_played=10) is None
    assert stop_reason(close, schedule, games_played=100) == "budget"
    assert stop_reason(close, AdaptiveSchedule(z=0.4), games_played=10) == "separated"


def test_adaptive_ratings_order_the_field_as_well_and_are_not_shifted(runs: dict) -> None:
    skills = field(10)
    tau = {kind: [kendall_tau(skills, {p: s.mu for p, s in rated(ev).items()}) for ev in runs[kind]] for kind in runs}
    assert np.mean(tau["adaptive"]) >= np.mean(tau["fixed"]) - 0.02
    # mu against the true skill: the same line (slope and offset) under both schedules.
    for kind in runs:
        mus = [rated(ev) for ev in runs[kind]]
        x = np.array([skills[p] for table in mus for p in table])
        y = np.array([table[p].mu for table in mus for p in table])
        slope, offset = np.polyfit(x - PARAMS.mu, y - PARAMS.mu, 1)
        assert abs(offset) < 0.5, (kind, offset)
        assert 0.85 < slope < 1.15, (kind, slope)  # adaptive: about 0.90, fixed about 1.03 (extremes play less)


def test_naive_win_rate_is_biased_under_adaptive_sampling_and_the_corrected_one_is_not(runs: dict) -> None:
    skills = field(10)
    truth = true_uniform_rate(skills)
    error: dict[str, dict[str, float]] = {}
    for kind in runs:
        naive, uniform = [], []
        for events in runs[kind]:
            rates = opponent_rates(events, rated(events), PARAMS)
            naive.append(np.mean([abs(rates.naive[p] - truth[p]) for p in skills]))
            uniform.append(np.mean([abs(rates.uniform[p] - truth[p]) for p in skills]))
        error[kind] = {"naive": float(np.mean(naive)), "uniform": float(np.mean(uniform))}
    # A fixed, balanced schedule's naive rate is already the uniform-opponent rate.
    assert error["fixed"]["naive"] < 0.06
    # Adaptive sampling pairs close models, pulling every naive rate towards 1/2 ...
    assert error["adaptive"]["naive"] > 2 * error["fixed"]["naive"]
    # ... and averaging per-opponent rates removes that bias.
    assert error["adaptive"]["uniform"] < 0.06
    assert error["adaptive"]["uniform"] < error["adaptive"]["naive"] / 2


def test_a_game_is_worth_less_when_its_result_is_known_through_other_games() -> None:
    standings = {name: Standing(mu=25.0 + k, sigma=3.0, games=10) for k, name in enumerate("abcd")}
    names = sorted(standings)
    schedule = AdaptiveSchedule(seats=2)
    fresh = pair_values(standings, names, PARAMS, schedule, met={})
    assert np.allclose(fresh, fresh.T) and np.all(np.diag(fresh) == 0.0) and np.all(fresh >= 0.0)
    # a and c never met, but each met b often: their order is known through b
    chained = pair_values(standings, names, PARAMS, schedule, met={("a", "b"): 12, ("b", "c"): 12})
    a, c, d = names.index("a"), names.index("c"), names.index("d")
    assert chained[a, c] < fresh[a, c]
    # d met nobody: the pairs that tie it to the others are now the ones worth most to c
    assert chained[c, d] > chained[a, c]


def test_with_few_tables_a_round_the_schedule_chooses_who_plays_and_nobody_starves() -> None:
    skills = field(24)
    schedule = AdaptiveSchedule(seats=2, tables_per_round=2)  # 4 of 24 play a round
    standings = {name: new_standing(PARAMS) for name in skills}
    met: dict[tuple[str, str], int] = {}
    rng = np.random.default_rng(4)
    longest_idle = 0
    for r in range(240):
        round_ = next_round(standings, schedule, PARAMS, seed=3, round_index=r, met=met)
        games = []
        for a, b in round_.tables:
            better = skills[a] + rng.normal(0, PARAMS.beta) > skills[b] + rng.normal(0, PARAMS.beta)
            games.append(Pairwise(a, b, "a" if better else "b"))
        standings = update_standings(standings, games, PARAMS)
        met = meetings(games, met)
        longest_idle = max(longest_idle, max(s.idle_rounds for s in standings.values()))
    # a rotation is 6 rounds: nobody sits out more than 3 of them and a round
    assert longest_idle <= overdue_after(len(skills), schedule) + 1 == 19
    # ... but the schedule is no rotation: the ends of the field, settled early, play less
    by_skill = sorted(skills, key=skills.get)
    played = np.array([standings[name].games for name in by_skill])
    ends, middle = np.r_[played[:3], played[-3:]].mean(), played[9:15].mean()
    assert ends < 0.8 * middle, (ends, middle)
