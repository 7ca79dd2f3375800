"""Rounds of one-against-rest tables: one seat plays alone against a team of the others (a spy
against the civilians), and the schedule chooses both the table and the lone seat.

A team game is rated as one event, the lone player against the sum of the team (TrueSkill's team
model, `TeamMatch`), so a player's rating adds up its results: every game it plays alone moves it
by its own result, every game in the team by its team's. A player that plays more team games, or
more lone games, than the others is moved further by the count alone. Measured on real team games
between graded bots (docs/adaptive.md), every rule that let the counts drift apart (pair weights,
the lone player's closest rivals as its opponents, TrueSkill's team match quality, an expected
information gain under the team model) ranked worse than balanced random tables. So the choice is
made inside the balance:

- **Seats**: the players with the fewest games first (overdue players, e.g. a new one, before
  anyone), and among equals a seeded draw, as the fixed schedule seats them: seating the least
  certain ranks first ranked worse (measured: seed-mean Kendall tau over games 125-200 of 0.817
  against 0.836 with the draw, 48 seeds), since a random mix of teams is what lets the team rating
  tell the team-mates apart;
- **The lone seat**: among the table's players owed the most lone games (its games minus `seats`
  times its lone games, within one lone game of the most owed), the one whose rank is least
  certain (`rank_uncertainty`: the expected number of players it is misordered with), then the
  seeded key. A fair share is one lone game in `seats`, so every player is alone about as often as
  the others, and the lone games go to the players whose rank is open.

Each table comes back with its lone player first, the rest in name order. Deterministic: the keys
come from `seed_from("adaptive-schedule", "one-against-rest", seed, round)`, so the same standings,
counts, seed and round give the same tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from pipeline.core.artifacts import seed_from
from pipeline.core.rating.standings import AdaptiveSchedule, Round, Standing

__all__ = ["one_against_rest_round", "rank_uncertainty"]


def rank_uncertainty(standings: Mapping[str, Standing]) -> dict[str, float]:
    """Per player, the expected number of other players it is misordered with: the sum over the
    others of P(the order of their mus is wrong), ``Phi(-|mu_i - mu_j| / sqrt(sigma_i^2 + sigma_j^2))``.
    Kendall tau counts exactly these pairs, so the player with the largest value is where a game
    can correct the ranking most."""
    names = sorted(standings)
    found = dict.fromkeys(names, 0.0)
    for k, a in enumerate(names):
        for b in names[k + 1 :]:
            sa, sb = standings[a], standings[b]
            z = abs(sa.mu - sb.mu) / math.sqrt(sa.sigma**2 + sb.sigma**2)
            wrong = 0.5 * math.erfc(z / math.sqrt(2.0))
            found[a] += wrong
            found[b] += wrong
    return found


def one_against_rest_round(
    standings: Mapping[str, Standing],
    schedule: AdaptiveSchedule,
    seed: int,
    round_index: int,
    lone: Mapping[str, int],
) -> Round:
    """The next round's one-against-rest tables (module docstring), each with its lone player
    first. `lone`: lone games per player so far (a player missing has none); `standings` the
    pool, whose `games` and `idle_rounds` give the balance and the overdue players."""
    names = sorted(standings)
    tables = min(schedule.tables_per_round, len(names) // schedule.seats)
    if tables == 0:
        return Round(round_index, ())
    rng = np.random.default_rng(seed_from("adaptive-schedule", "one-against-rest", seed, round_index))
    key = dict(zip(names, (float(x) for x in rng.random(len(names)))))
    open_ = rank_uncertainty(standings)

    def seat_order(name: str) -> tuple[bool, int, float]:
        s = standings[name]
        # overdue first (a new model: placement), then the fewest games, then the seeded key: among
        # equals the seats stay a random draw, the contrast between tables the team rating needs
        return (s.idle_rounds < schedule.max_idle_rounds, s.games, key[name])

    order = sorted(names, key=seat_order)
    chosen: list[tuple[str, ...]] = []
    for t in range(tables):
        members = order[t * schedule.seats : (t + 1) * schedule.seats]
        owed = {name: standings[name].games - schedule.seats * lone.get(name, 0) for name in members}
        most = max(owed.values())
        # within one lone game of the most owed: the balance holds, the open rank decides
        candidates = [name for name in members if owed[name] >= most - schedule.seats]
        alone = max(candidates, key=lambda name: (open_[name], key[name]))
        chosen.append((alone, *sorted(name for name in members if name != alone)))
    return Round(round_index, tuple(chosen))
