"""Adaptive tournaments: play the games that separate the models, stop when the ranking is settled.

A fixed schedule decides every table before any game. This one works in rounds: after each round
the ratings are updated (`update_standings`, one online TrueSkill step per game through the
compiled engine; team games through trueskill's own update), and `next_round` picks the next
round's tables from them:

- a pair of models is worth playing when TrueSkill's match quality is high (the outcome is
  uncertain, so it moves the ratings) and their sigmas are large (there is much to learn), and
  more so when they are neighbours by mu whose intervals still overlap (the ranking is unsettled
  exactly there); `pair_weights` is that score;
- each table starts from an anchor, the model that most needs games (overdue first, then the
  largest sigma, so a new model gets its placement games at once), and is filled greedily with
  the unseated models that add the most pair weight; ties are broken by a seeded numpy Generator
  (`seed_from`), so the same inputs always give the same tables;
- no model starves: one that has sat out `max_idle_rounds` rounds is seated before anyone else.

`stop_reason` says when to stop: every adjacent pair by mu separable (intervals mu +- z*sigma
apart), or the games budget spent. `fixed_round` is the fixed schedule's balanced random tables,
kept beside it so the two are compared on equal terms (`bench/adaptive.py`).

`decide_round` is one step of a tournament with budgets in games, rounds and dollars and with
placement (models without a game are seated first): the workflow's round ledger
(pipeline.core.run.rounds) takes each round from it, and `simulate_outlook` runs it forward on
simulated results, for the games the run plan expects to reach the stopping rule.

Validity (docs/adaptive.md): TrueSkill's posterior is a likelihood-based estimate, and a choice
of opponents that depends only on past results is ignorable for it, so ratings and their ordering
need no correction. Rates are different: a strong model that the schedule keeps pairing with
strong opponents wins less often than against the field. `opponent_rates` gives the naive rate
and the corrected one, the mean over opponents of the per-opponent rate (a uniform mix of
opponents, whatever the schedule chose).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from pipeline.core.artifacts import seed_from
from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, RatingParams, TeamMatch
from pipeline.core.rating.fast import compile_events, rate_rows
from pipeline.core.rating.one_against_rest import one_against_rest_round
from pipeline.core.rating.standings import AdaptiveSchedule, Round, Standing, new_standing

__all__ = [
    "AdaptiveSchedule",
    "Budget",
    "Outlook",
    "RoundStop",
    "decide_round",
    "simulate_outlook",
    "RateEstimate",
    "Round",
    "Standing",
    "StopReason",
    "TableShape",
    "adjacent_unseparated",
    "fixed_round",
    "meetings",
    "new_standing",
    "next_round",
    "opponent_rates",
    "pair_weights",
    "separable",
    "stop_reason",
    "update_standings",
]

StopReason = Literal["separated", "budget"]
#: why a tournament with budgets stopped (`decide_round`): the ranking is settled, or a budget is spent;
#: "exhausted" is the round ledger's (pipeline.core.run.rounds): the benchmark had nothing left to play
#: at the tables chosen
RoundStop = Literal["separated", "max_games", "max_rounds", "max_cost_usd", "exhausted"]
#: how `simulate_outlook` scores a simulated table: "ranked" (two seats: a pairwise game; more: a
#: free-for-all by performance) or "one_against_rest" (a team game: one seat, drawn at random,
#: against a team of the others, e.g. a spy against the civilians)
TableShape = Literal["ranked", "one_against_rest"]


def separable(a: Standing, b: Standing, z: float) -> bool:
    """Whether the intervals mu +- z*sigma of two models no longer overlap."""
    high, low = (a, b) if a.mu >= b.mu else (b, a)
    return high.mu - z * high.sigma > low.mu + z * low.sigma


def _by_mu(standings: Mapping[str, Standing]) -> list[str]:
    # Highest mu first; equal mus by name, as rating_summary ranks them.
    return sorted(standings, key=lambda name: (-standings[name].mu, name))


def adjacent_unseparated(standings: Mapping[str, Standing], z: float) -> list[tuple[str, str]]:
    """Neighbours by mu (higher first) whose intervals still overlap: where the ranking is open."""
    order = _by_mu(standings)
    return [(high, low) for high, low in zip(order, order[1:]) if not separable(standings[high], standings[low], z)]


def stop_reason(standings: Mapping[str, Standing], schedule: AdaptiveSchedule, games_played: int) -> StopReason | None:
    """ "budget" once `budget_games` games are played, "separated" once every adjacent pair is
    separable (a field of one model counts as separated), None to play on."""
    if schedule.budget_games is not None and games_played >= schedule.budget_games:
        return "budget"
    if standings and not adjacent_unseparated(standings, schedule.z):
        return "separated"
    return None


def _arrays(standings: Mapping[str, Standing], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([standings[n].mu for n in names], dtype=np.float64),
        np.array([standings[n].sigma for n in names], dtype=np.float64),
    )


def meetings(
    events: Sequence[RatingEvent], before: Mapping[tuple[str, str], int] | None = None
) -> dict[tuple[str, str], int]:
    """How often each pair (names sorted) sat at the same table: the tally `before` (a new dict;
    None: from nothing) plus `events`."""
    met: dict[tuple[str, str], int] = dict(before or {})
    for event in events:
        players = sorted(event.players)
        for k, a in enumerate(players):
            for b in players[k + 1 :]:
                met[a, b] = met.get((a, b), 0) + 1
    return met


def pair_weights(
    standings: Mapping[str, Standing],
    names: Sequence[str],
    params: RatingParams,
    schedule: AdaptiveSchedule,
    met: Mapping[tuple[str, str], int] | None = None,
) -> np.ndarray:
    """``[n, n]`` worth of a game between each pair (0 on the diagonal).

    TrueSkill's two-player match quality, ``sqrt(2 beta^2 / c^2) * exp(-dmu^2 / (2 c^2))`` with
    ``c^2 = 2 beta^2 + sigma_i^2 + sigma_j^2``, is the chance of a draw relative to the most even
    game: high where the outcome is least predictable, so where a result moves the ratings most.
    It is multiplied by ``sigma_i^2 + sigma_j^2`` (how much is still unknown about the two) and by
    ``1 + adjacency_bonus`` for neighbours by mu that are not yet separable, the pairs that decide
    whether the ranking is settled. Finally it is divided by ``1 + games the pair already
    played together`` (`met`, from `meetings`): TrueSkill keeps one sigma per model and no
    covariance, so it cannot see that the hundredth game between the same two neighbours adds
    almost nothing (the variance of their estimated difference falls like 1/n) while the gap to
    the next neighbour has never been tested. Without it the schedule settles into fixed
    couples and the order between couples is never checked (measured: Kendall tau fell with
    more games).
    """
    mu, sigma = _arrays(standings, names)
    var = sigma**2
    c2 = 2 * params.beta**2 + var[:, None] + var[None, :]
    quality = np.sqrt(2 * params.beta**2 / c2) * np.exp(-((mu[:, None] - mu[None, :]) ** 2) / (2 * c2))
    weights = quality * (var[:, None] + var[None, :])
    index = {name: i for i, name in enumerate(names)}
    for high, low in adjacent_unseparated(standings, schedule.z):
        i, j = index[high], index[low]
        weights[i, j] *= 1 + schedule.adjacency_bonus
        weights[j, i] = weights[i, j]
    if met:
        together = np.zeros_like(weights)
        for (a, b), count in met.items():
            if a in index and b in index:
                together[index[a], index[b]] = together[index[b], index[a]] = count
        weights = weights / (1.0 + together)
    np.fill_diagonal(weights, 0.0)
    return weights


def _round_rng(kind: str, seed: int, round_index: int) -> np.random.Generator:
    # Content-addressed: the round's draws depend on the tournament's seed and the round only.
    return np.random.default_rng(seed_from("adaptive-schedule", kind, seed, round_index))


def _tables_this_round(n_players: int, schedule: AdaptiveSchedule) -> int:
    return min(schedule.tables_per_round, n_players // schedule.seats)


def next_round(
    standings: Mapping[str, Standing],
    schedule: AdaptiveSchedule,
    params: RatingParams,
    seed: int,
    round_index: int,
    met: Mapping[tuple[str, str], int] | None = None,
) -> Round:
    """The next round's tables, chosen to reduce the ranking's uncertainty the most.

    Anchors, in order of need: models overdue (idle for `max_idle_rounds` rounds or more, most
    idle first), then by ``sigma^2 * (1 + adjacency_bonus * open neighbours)``, so a new model
    (prior sigma, the largest) anchors a table, and plays its placement games, before anyone
    else. Each table is filled greedily: the next seat goes to the unseated model whose pair
    weights (`pair_weights`) with those already seated sum highest. Every choice breaks ties with
    a seeded random key, drawn once per model and round, so the result depends only on the
    inputs. A round seats at most ``players // seats`` tables. `met`: the pair counts of the
    games so far (`meetings`), which discount pairs already played often (see `pair_weights`).
    """
    names = sorted(standings)
    n = len(names)
    tables = _tables_this_round(n, schedule)
    if tables == 0:
        return Round(round_index, ())
    rng = _round_rng("adaptive", seed, round_index)
    jitter = rng.random(n)  # one key per model: breaks exact ties, never outweighs a real difference
    weights = pair_weights(standings, names, params, schedule, met)
    _, sigma = _arrays(standings, names)
    open_neighbours = np.zeros(n)
    index = {name: i for i, name in enumerate(names)}
    for high, low in adjacent_unseparated(standings, schedule.z):
        open_neighbours[index[high]] += 1
        open_neighbours[index[low]] += 1
    need = sigma**2 * (1 + schedule.adjacency_bonus * open_neighbours)
    idle = np.array([standings[name].idle_rounds for name in names])
    overdue = idle >= schedule.max_idle_rounds
    # lexsort: the last key sorts first. Overdue before the rest, then most idle (among the
    # overdue), then greatest need, then the seeded key.
    anchor_order = np.lexsort((jitter, -need, -np.where(overdue, idle, 0), ~overdue))
    seated = np.zeros(n, dtype=bool)
    chosen: list[tuple[str, ...]] = []
    for _ in range(tables):
        anchor = next(int(i) for i in anchor_order if not seated[i])
        members = [anchor]
        seated[anchor] = True
        for _seat in range(schedule.seats - 1):
            gain = weights[:, members].sum(axis=1)
            # Overdue models take the open seats first, so starvation ends this round.
            score = np.where(overdue, gain + weights.max() * schedule.seats + 1.0, gain)
            score = np.where(seated, -np.inf, score)
            best = np.flatnonzero(score == score.max())
            pick = int(best[np.argmax(jitter[best])])
            members.append(pick)
            seated[pick] = True
        chosen.append(tuple(names[i] for i in members))
    return Round(round_index, tuple(chosen))


def fixed_round(
    games: Mapping[str, int],
    schedule: AdaptiveSchedule,
    seed: int,
    round_index: int,
) -> Round:
    """The fixed schedule's round: balanced random tables, blind to results.

    The models with the fewest games are seated first (random order among equals, from the
    seeded Generator), then shuffled into tables of `seats`: every model plays about equally
    often and meets a uniform mix of opponents, as the benchmarks' fixed schedules do.
    """
    names = sorted(games)
    tables = _tables_this_round(len(names), schedule)
    if tables == 0:
        return Round(round_index, ())
    rng = _round_rng("fixed", seed, round_index)
    keys = rng.random(len(names))
    order = sorted(range(len(names)), key=lambda i: (games[names[i]], keys[i]))
    seated = np.array(order[: tables * schedule.seats])
    rng.shuffle(seated)
    return Round(
        round_index,
        tuple(tuple(names[i] for i in seated[t * schedule.seats : (t + 1) * schedule.seats]) for t in range(tables)),
    )


def _rate_reference(
    events: Sequence[RatingEvent], names: Sequence[str], mu: np.ndarray, sigma: np.ndarray, params: RatingParams
) -> tuple[np.ndarray, np.ndarray]:
    """`events` in order through trueskill's own update (`multipass.apply_event`), from `mu` and
    `sigma`: the compiled engine rates single-player teams only, so a round with a team game
    takes this path (the multi-pass rating rates team games the same way)."""
    from pipeline.core.rating.multipass import apply_event  # polars and the summary load only here

    env = params.env()
    ratings = {name: env.create_rating(float(mu[i]), float(sigma[i])) for i, name in enumerate(names)}
    for event in events:
        apply_event(env, ratings, event)
    return (
        np.array([ratings[name].mu for name in names], dtype=np.float64),
        np.array([ratings[name].sigma for name in names], dtype=np.float64),
    )


def update_standings(
    standings: Mapping[str, Standing], events: Sequence[RatingEvent], params: RatingParams
) -> dict[str, Standing]:
    """The standings after one round's games: one online TrueSkill update per game (the
    compiled engine, one row; a round with a team game goes through trueskill's own update,
    `_rate_reference`), games counted, idle rounds reset for those who played and advanced for
    the rest. A round's tables share no player, so the order of its games does not change the
    result. Players not yet in `standings` start at the prior."""
    current = dict(standings)
    for event in events:
        for player in event.players:
            current.setdefault(player, new_standing(params))
    names = sorted(current)
    index = {name: i for i, name in enumerate(names)}
    mu, sigma = _arrays(current, names)
    if any(isinstance(event, TeamMatch) for event in events):
        mu, sigma = _rate_reference(events, names, mu, sigma, params)
    elif events:
        table = compile_events(events, index)
        sequence = np.arange(len(events), dtype=np.int64)[None, :]
        mus, sigmas = rate_rows(table, sequence, len(names), params, start=(mu[None, :], sigma[None, :]))
        mu, sigma = mus[0], sigmas[0]
    played: dict[str, int] = {}
    for event in events:
        for player in event.players:
            played[player] = played.get(player, 0) + 1
    return {
        name: Standing(
            mu=float(mu[i]),
            sigma=float(sigma[i]),
            games=current[name].games + played.get(name, 0),
            idle_rounds=0 if name in played else current[name].idle_rounds + 1,
        )
        for i, name in enumerate(names)
    }


@dataclass(frozen=True)
class RateEstimate:
    """Per model: `naive`, the share of opponent comparisons won over all its games (in a
    free-for-all, each table-mate finished behind counts 1, a tie 1/2; in a team game, each
    player of the other team counts 1 when its team won, 1/2 for a draw, and team-mates are no
    opponents); `uniform`, the same rate
    against a uniform mix of the other models: the mean over opponents of the per-opponent rate,
    so the schedule's choice of opponents cancels out. Opponents never met (`imputed` counts
    them) enter `uniform` at TrueSkill's predicted probability of finishing ahead."""

    naive: dict[str, float]
    uniform: dict[str, float]
    imputed: dict[str, int] = field(default_factory=dict)

    def metrics(self, models: Iterable[str], digits: int = 4) -> dict[str, dict[str, float | int | None]]:
        """Per model, the three fields an adaptive run's metrics.json adds: `opponent_win_rate`
        (naive), `opponent_win_rate_uniform` (corrected), rounded, null where undefined (no game),
        and `opponent_win_rate_imputed`."""

        def clean(value: float | None) -> float | None:
            return None if value is None or math.isnan(value) else round(value, digits)

        return {
            model: {
                "opponent_win_rate": clean(self.naive.get(model)),
                "opponent_win_rate_uniform": clean(self.uniform.get(model)),
                "opponent_win_rate_imputed": self.imputed.get(model, 0),
            }
            for model in models
        }


def _pair_scores(event: RatingEvent) -> list[tuple[str, str, float]]:
    """(i, j, score of i against j) for every ordered pair of the game."""
    if isinstance(event, Pairwise):
        s = {"a": 1.0, "b": 0.0, "draw": 0.5}[event.outcome]
        return [(event.a, event.b, s), (event.b, event.a, 1.0 - s)]
    if isinstance(event, FreeForAll):
        out = []
        for i, ri in event.ranks.items():
            for j, rj in event.ranks.items():
                if i != j:
                    out.append((i, j, 1.0 if ri < rj else 0.5 if ri == rj else 0.0))
        return out
    if isinstance(event, TeamMatch):
        s = {"a": 1.0, "b": 0.0, "draw": 0.5}[event.outcome]
        return [(i, j, s) for i in event.a for j in event.b] + [(j, i, 1.0 - s) for i in event.a for j in event.b]
    raise TypeError(f"opponent rates need Pairwise, FreeForAll or TeamMatch games, got {event!r}")


def _predicted(a: Standing, b: Standing, params: RatingParams) -> float:
    # P(a's performance > b's) under TrueSkill's model with both ratings uncertain.
    c = math.sqrt(2 * params.beta**2 + a.sigma**2 + b.sigma**2)
    return 0.5 * (1.0 + math.erf((a.mu - b.mu) / (c * math.sqrt(2.0))))


def opponent_rates(
    events: Sequence[RatingEvent], ratings: Mapping[str, Standing], params: RatingParams
) -> RateEstimate:
    """The naive rate and the rate against a uniform mix of opponents (see `RateEstimate`).

    Why the correction works: given who sits at a table, its outcome does not depend on how the
    table was chosen, so each per-opponent rate is an honest estimate of that pairing whatever
    the schedule did; averaging the pairings with equal weights is the estimand a fixed,
    balanced schedule's naive rate targets. The naive rate instead weights each opponent by how
    often the schedule chose it, and an adaptive schedule chooses close opponents, which pulls
    every rate towards 1/2. `ratings` (e.g. `update_standings` or a multi-pass mu and sigma)
    supply the predictions for pairs that never met.
    """
    won: dict[tuple[str, str], float] = {}
    met: dict[tuple[str, str], int] = {}
    for event in events:
        for i, j, s in _pair_scores(event):
            won[i, j] = won.get((i, j), 0.0) + s
            met[i, j] = met.get((i, j), 0) + 1
    players = sorted(set(ratings) | {p for pair in met for p in pair})
    naive: dict[str, float] = {}
    uniform: dict[str, float] = {}
    imputed: dict[str, int] = {}
    for i in players:
        total = sum(met.get((i, j), 0) for j in players)
        naive[i] = sum(won.get((i, j), 0.0) for j in players) / total if total else math.nan
        rates, missing = [], 0
        for j in players:
            if j == i:
                continue
            if met.get((i, j)):
                rates.append(won[i, j] / met[i, j])
            elif i in ratings and j in ratings:
                rates.append(_predicted(ratings[i], ratings[j], params))
                missing += 1
            else:
                missing += 1
        uniform[i] = float(np.mean(rates)) if rates else math.nan
        imputed[i] = missing
    return RateEstimate(naive=naive, uniform=uniform, imputed=imputed)


@dataclass(frozen=True)
class Budget:
    """What a tournament may spend: games chosen, rounds played, dollars of finished games (None: no limit)."""

    max_games: int | None = None
    max_rounds: int | None = None
    max_cost_usd: float | None = None


def budget_stop(budget: Budget, games: int, rounds: int, spent_usd: float) -> RoundStop | None:
    """The first budget spent, in the order games, rounds, dollars; None while all last."""
    if budget.max_games is not None and games >= budget.max_games:
        return "max_games"
    if budget.max_rounds is not None and rounds >= budget.max_rounds:
        return "max_rounds"
    if budget.max_cost_usd is not None and spent_usd >= budget.max_cost_usd:
        return "max_cost_usd"
    return None


def decide_round(
    standings: Mapping[str, Standing],
    schedule: AdaptiveSchedule,
    params: RatingParams,
    seed: int,
    round_index: int,
    met: Mapping[tuple[str, str], int] | None,
    *,
    budget: Budget,
    games: int,
    rounds: int,
    spent_usd: float = 0.0,
    lone: Mapping[str, int] | None = None,
) -> tuple[RoundStop | None, Round]:
    """One step of a tournament: (why it stops, no tables) or (None, the next round's tables).

    `standings` holds the pool (every model that may be seated). Models without a game are placed
    first: they are marked overdue and more idle than anyone, so `next_round` anchors tables on them
    and fills open seats with them before the others; a new model joining a settled field so gets
    its placement games in the very next round. A budget spent stops first; then the separation
    rule, which never holds while a model is unplaced (its prior sigma overlaps everyone). A round
    never chooses more games than `budget.max_games` has left. `lone`: for one-against-rest tables
    (a spy against the civilians), the lone games per model so far; the tables and their lone seat
    (first) then come from `one_against_rest_round` instead of `next_round`."""
    stop = budget_stop(budget, games, rounds, spent_usd)
    if stop is not None:
        return stop, Round(round_index, ())
    unplaced = [name for name, standing in standings.items() if standing.games == 0]
    if not unplaced and stop_reason(standings, schedule, games) == "separated":
        return "separated", Round(round_index, ())
    marked = dict(standings)
    if unplaced and len(unplaced) < len(standings):
        most_idle = max(standing.idle_rounds for standing in standings.values())
        overdue = max(schedule.max_idle_rounds, most_idle + 1)
        for name in unplaced:
            marked[name] = Standing(standings[name].mu, standings[name].sigma, 0, overdue)
    tables = schedule.tables_per_round
    if budget.max_games is not None:
        tables = min(tables, budget.max_games - games)
    step = replace(schedule, tables_per_round=tables)
    if lone is not None:
        return None, one_against_rest_round(marked, step, seed, round_index, lone)
    return None, next_round(marked, step, params, seed, round_index, met)


@dataclass(frozen=True)
class Outlook:
    """Further games to the stopping rule over seeded simulations: their mean, the `quantile`-th
    quantile (`high`), and how many simulations each stop ended."""

    mean: float
    high: float
    quantile: float
    simulations: int
    stops: dict[str, int]


def _simulated_event(
    table: Sequence[str],
    performance: Mapping[str, float],
    shape: TableShape,
    rng: np.random.Generator,
    lone_first: bool = False,
) -> RatingEvent:
    if shape == "one_against_rest":
        # TrueSkill's team model: a team performs the sum of its players' performances. The lone
        # seat is the table's first where the schedule chose it (`one_against_rest_round`), else
        # drawn uniformly (a benchmark's own rule, e.g. balancing spy games, is not simulated).
        lone = table[0] if lone_first else table[int(rng.integers(len(table)))]
        rest = tuple(name for name in table if name != lone)
        won = performance[lone] > sum(performance[name] for name in rest)
        return TeamMatch((lone,), rest, "a" if won else "b")
    if len(table) == 2:
        a, b = table
        return Pairwise(a, b, "a" if performance[a] > performance[b] else "b")
    order = sorted(table, key=lambda name: -performance[name])
    return FreeForAll({name: place for place, name in enumerate(order, start=1)})


def simulate_outlook(
    standings: Mapping[str, Standing],
    schedule: AdaptiveSchedule,
    params: RatingParams,
    seed: int,
    next_index: int,
    met: Mapping[tuple[str, str], int] | None,
    *,
    budget: Budget,
    games: int,
    rounds: int,
    spent_usd: float = 0.0,
    pending: Sequence[Sequence[str]] = (),
    cost_per_game: float | None = None,
    simulations: int = 16,
    quantile: float = 0.9,
    shape: TableShape = "ranked",
    events_per_table: int = 1,
    lone: Mapping[str, int] | None = None,
) -> Outlook:
    """How many more games the tournament plays before `decide_round` stops it, by simulation.

    `games` and `rounds` are those finished; `pending` the tables of a round chosen but not yet
    played (a round of its own, its games counted in the outlook); `next_index` the index of the
    first round still to choose. Each simulation draws every model's true skill from N(mu, sigma) of its standing (what is known
    of it), plays the games already chosen but not finished (`pending`, counted), then runs
    `decide_round` round after round on outcomes from TrueSkill's own model (skill plus Gaussian
    noise of sd beta, ranked), with the standings updated as the ledger updates them. Spending
    grows by `cost_per_game` a game (None: the dollar budget is not simulated). `shape`: how a
    table is scored (`TableShape`); a "one_against_rest" table is a team game under TrueSkill's
    team model (the team performs the sum of its players), so a lone seat against five equals
    almost never wins, the standings barely move and the outlook runs towards the budgets (the
    model's own forecast, and the costlier side). `events_per_table`: rating events a table yields
    (1; SKATE's table is compared once per question of its round). `lone`: the lone games per model
    so far where the schedule chooses the lone seat too (`decide_round`'s `lone`; the pending tables
    then have theirs first). Seeded from the inputs, so the same standings give the same outlook."""
    totals: list[int] = []
    stops: dict[str, int] = {}
    names = sorted(standings)
    for sim in range(simulations):
        rng = np.random.default_rng(seed_from("adaptive-outlook", seed, next_index, sim))
        mu, sigma = _arrays(standings, names)
        skill = dict(zip(names, rng.normal(mu, sigma)))
        current = dict(standings)
        together = dict(met or {})
        alone = None if lone is None else dict(lone)
        played_games, played_rounds, spent, extra = games, rounds, spent_usd, 0
        index = next_index
        tables: Sequence[Sequence[str]] = pending
        if pending:
            played_rounds += 1
        stop: RoundStop | None = None
        while True:
            if tables:
                # a table may yield several events (`events_per_table`: SKATE compares a table once per
                # question), each with its own performance draws
                events = [
                    _simulated_event(
                        table,
                        {name: skill[name] + rng.normal(0.0, params.beta) for name in table},
                        shape,
                        rng,
                        alone is not None,
                    )
                    for table in tables
                    for _ in range(events_per_table)
                ]
                if alone is not None:
                    for table in tables:
                        alone[table[0]] = alone.get(table[0], 0) + events_per_table
                current = update_standings(current, events, params)
                together = meetings(events, together)
                extra += len(tables)
                spent += (cost_per_game or 0.0) * len(tables)
            stop, chosen = decide_round(
                current,
                schedule,
                params,
                seed,
                index,
                together,
                budget=budget if cost_per_game is not None else Budget(budget.max_games, budget.max_rounds),
                games=played_games + extra,
                rounds=played_rounds,
                spent_usd=spent,
                lone=alone,
            )
            if stop is not None or not chosen.tables:
                break
            tables = chosen.tables
            played_rounds += 1
            index += 1
        totals.append(extra)
        key = stop or "no_table"
        stops[key] = stops.get(key, 0) + 1
    values = np.array(totals, dtype=np.float64)
    return Outlook(
        mean=float(values.mean()) if len(values) else 0.0,
        high=float(np.quantile(values, quantile)) if len(values) else 0.0,
        quantile=quantile,
        simulations=simulations,
        stops=dict(sorted(stops.items())),
    )
