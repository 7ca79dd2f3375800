"""Adaptive tournaments: play the games that separate the models, stop when the ranking is settled.

A fixed schedule decides every table before any game. This one works in rounds: after each round
the ratings are updated (`update_standings`, one online TrueSkill step per game through the
compiled engine; team games through trueskill's own update), and `next_round` picks the next
round's tables from them:

- a pair of models is worth playing when its game would most reduce the doubt in the ranking:
  `pair_values` keeps, beside TrueSkill's per-model sigma, the covariance of all skills that the
  games so far imply (a Laplace view under Thurstone's model), weighs each pair of models by how
  much their order is in doubt, and scores a game by how much it would shrink the variance of
  every difference it informs; pairs that already met often are discounted, because the final
  rating is TrueSkill's, which ranks worse when games concentrate on few pairs;
- each table starts from an anchor, an overdue model (a new model is placed first this way) or
  else a model of the most valuable free pair, and is filled greedily with the unseated models
  that add the most value; ties are broken by a seeded numpy Generator (`seed_from`), so the same
  inputs always give the same tables;
- no model starves: one that has sat out `max_idle_rounds` rotations (`overdue_after`) is seated
  before anyone else.

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
    "comparison_information",
    "overdue_after",
    "pair_values",
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


_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def comparison_information(dmu: np.ndarray, beta: float) -> np.ndarray:
    """Fisher information on ``mu_i - mu_j`` that one comparison of two models carries, under
    TrueSkill's performance model (each performs its skill plus noise of sd beta, so i finishes
    ahead with probability ``Phi(dmu / (sqrt(2) beta))``): ``phi(z)^2 / (Phi(z) Phi(-z))`` over
    ``2 beta^2``. Largest for an even pair; a foregone result tells almost nothing."""
    z = np.abs(dmu) / (_SQRT2 * beta)
    tail = 0.5 * _erfc(z / _SQRT2)  # Phi(-z), accurate far out in the tail
    density = np.exp(-0.5 * z * z) / _SQRT2PI
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        ratio = np.where(tail > 0.0, density**2 / (tail * (1.0 - tail)), 0.0)
    return ratio / (2.0 * beta**2)


def _laplacian(weights: np.ndarray) -> np.ndarray:
    """The graph Laplacian of symmetric pair `weights` (their diagonal ignored)."""
    block = weights.copy()
    np.fill_diagonal(block, 0.0)
    return np.diag(block.sum(axis=1)) - block


def _laplacian_add(matrix: np.ndarray, weights: np.ndarray, members: Sequence[int] | None = None) -> None:
    """Adds the Laplacian of `weights` (restricted to `members`; None: all) to `matrix` in place."""
    if members is None:
        matrix += _laplacian(weights)
    else:
        index = np.ix_(np.asarray(members), np.asarray(members))
        matrix[index] += _laplacian(weights[index])


class _Design:
    """What the games so far tell about every difference of skills, and what one more game would add.

    TrueSkill keeps one sigma per model and no covariance: it cannot tell that two neighbours
    who played each other twenty times know their difference well while the gap to the next
    couple was never tested. This is the Laplace view of the same games under Thurstone's model:
    the precision matrix of the skills is the prior's plus, per pair, the games it played times the
    information of one comparison at the current gap (`comparison_information`; a table of k
    counts each of its pairs ``2 / k`` of a game, about the k - 1 comparisons a ranking carries).
    Its inverse gives the variance of every difference, chains of games included."""

    def __init__(
        self,
        mu: np.ndarray,
        together: np.ndarray,
        adjacent_open: np.ndarray,
        params: RatingParams,
        schedule: AdaptiveSchedule,
    ) -> None:
        self.mu = mu
        self.together = together
        self.adjacent_open = adjacent_open
        self.bonus = schedule.adjacency_bonus
        self.information = (2.0 / schedule.seats) * comparison_information(mu[:, None] - mu[None, :], params.beta)
        self.precision = np.eye(len(mu)) / params.sigma**2
        _laplacian_add(self.precision, together * self.information)

    def add_table(self, members: Sequence[int]) -> None:
        """Counts a table chosen this round as played (its result is not known yet, its information is)."""
        _laplacian_add(self.precision, self.information, members)

    def values(self) -> np.ndarray:
        """``[n, n]`` worth of a game between each pair (0 on the diagonal).

        The ranking is unsettled where two models' order is in doubt: the pair (i, j) weighs
        ``phi(dmu / sd) / sd^2`` (sd: the sd of their difference; times ``1 + adjacency_bonus``
        for neighbours by mu not yet separable, the pairs the stopping rule waits on). A game
        between k and l shrinks the variance of every difference it informs, its own and those
        chained through k or l, by ``(c_i - c_j)^2 r`` with ``c = Sigma (e_k - e_l)`` and ``r = w / (1
        + w var_kl)`` (w: its information). Summed with those weights that is ``r (e_k - e_l)' M (e_k -
        e_l)``, ``M = Sigma L Sigma`` with L the weights' Laplacian: one matrix product a table for all
        candidates. Last, the worth is divided by ``1 + games the pair already played together``:
        the final rating is TrueSkill's, which ranks a field worse when its games concentrate on
        few pairs (measured: a schedule without it ranked 48 models to tau 0.92 where its own exact
        fit reached 0.96), so repeated pairs give way to fresh ones."""
        sigma = np.linalg.inv(self.precision)
        own = np.diag(sigma)
        var = np.maximum(own[:, None] + own[None, :] - 2.0 * sigma, 1e-12)
        gap = self.mu[:, None] - self.mu[None, :]
        weight = np.exp(-0.5 * gap * gap / var) / var * (1.0 + self.bonus * self.adjacent_open)
        spread = sigma @ _laplacian(weight) @ sigma
        reach = np.diag(spread)
        gain = self.information / (1.0 + self.information * var)
        worth = np.maximum(gain * (reach[:, None] + reach[None, :] - 2.0 * spread), 0.0) / (1.0 + self.together)
        np.fill_diagonal(worth, 0.0)
        return worth


def _design(
    standings: Mapping[str, Standing],
    names: Sequence[str],
    params: RatingParams,
    schedule: AdaptiveSchedule,
    met: Mapping[tuple[str, str], int] | None,
) -> _Design:
    mu, _ = _arrays(standings, names)
    index = {name: i for i, name in enumerate(names)}
    together = np.zeros((len(names), len(names)))
    for (a, b), count in (met or {}).items():
        if a in index and b in index:
            together[index[a], index[b]] = together[index[b], index[a]] = count
    adjacent_open = np.zeros_like(together)
    for high, low in adjacent_unseparated(standings, schedule.z):
        adjacent_open[index[high], index[low]] = adjacent_open[index[low], index[high]] = 1.0
    return _Design(mu, together, adjacent_open, params, schedule)


def pair_values(
    standings: Mapping[str, Standing],
    names: Sequence[str],
    params: RatingParams,
    schedule: AdaptiveSchedule,
    met: Mapping[tuple[str, str], int] | None = None,
) -> np.ndarray:
    """``[n, n]`` worth of a game between each pair of `names` (0 on the diagonal): the expected
    fall of the doubt in the ranking, over every pair's difference the game informs, discounted
    for pairs that already met (`met`, from `meetings`). See `_Design.values`."""
    return _design(standings, names, params, schedule, met).values()


def overdue_after(n_players: int, schedule: AdaptiveSchedule) -> int:
    """Idle rounds after which a model is seated first: `max_idle_rounds` rotations, where a
    rotation is the rounds a field needs to seat everyone once (``ceil(players / (seats * tables))``).
    With fewer tables than the field fills, sitting out is the rule, not starvation: counted in
    rounds alone, everyone would be overdue and the schedule would only rotate (measured: 48
    models at two 6-seat tables a round ranked to tau 0.83 instead of 0.96)."""
    tables = _tables_this_round(n_players, schedule)
    rotation = math.ceil(n_players / (schedule.seats * tables)) if tables else 1
    return schedule.max_idle_rounds * rotation


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

    Table by table: the anchor is an overdue model (idle for `overdue_after` rounds or more, most
    idle first; a new model is placed this way by `decide_round`), else the model of the most
    valuable pair still free (`pair_values`). Each open seat then goes to the unseated model whose
    values with those already seated sum highest, overdue models first. Each table chosen counts
    as played for the next one's values (its information, not its result), so a round spreads over
    the open questions instead of asking one twice. Every choice breaks ties with a seeded random
    key, drawn once per model and round, so the result depends only on the inputs. A round seats
    at most ``players // seats`` tables. `met`: the pair counts of the games so far (`meetings`).
    """
    names = sorted(standings)
    n = len(names)
    tables = _tables_this_round(n, schedule)
    if tables == 0:
        return Round(round_index, ())
    rng = _round_rng("adaptive", seed, round_index)
    jitter = rng.random(n)  # one key per model: breaks exact ties, never outweighs a real difference
    design = _design(standings, names, params, schedule, met)
    idle = np.array([standings[name].idle_rounds for name in names])
    overdue = idle >= overdue_after(n, schedule)
    seated = np.zeros(n, dtype=bool)
    chosen: list[tuple[str, ...]] = []
    for _ in range(tables):
        values = design.values()
        # In units of the best value, to 9 decimals: values equal to 9 digits are ties, broken by
        # the seeded key (its weight is below one unit of the last decimal), whatever the last bits
        # of the inverse and the matrix products are on this CPU and BLAS build.
        scale = float(values.max()) if values.size else 0.0
        values = np.round(values / scale, 9) if scale > 0 else np.zeros_like(values)
        tiny = 1e-11
        waiting = np.flatnonzero(overdue & ~seated)
        if len(waiting):
            anchor = int(waiting[np.lexsort((-jitter[waiting], -idle[waiting]))[0]])
        else:
            free = ~seated
            best = np.where(free[None, :], values, -np.inf).max(axis=1)
            anchor = int(np.argmax(np.where(free, best + tiny * jitter, -np.inf)))
        members = [anchor]
        seated[anchor] = True
        for _seat in range(schedule.seats - 1):
            gain = values[:, members].sum(axis=1) + tiny * jitter
            # Overdue models take the open seats first, so starvation ends this round.
            score = np.where(overdue, gain + schedule.seats + 1.0, gain)  # values are at most 1
            pick = int(np.argmax(np.where(seated, -np.inf, score)))
            members.append(pick)
            seated[pick] = True
        design.add_table(members)
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
    tables = schedule.tables_per_round
    if budget.max_games is not None:
        tables = min(tables, budget.max_games - games)
    step = replace(schedule, tables_per_round=tables)
    marked = dict(standings)
    if unplaced and len(unplaced) < len(standings):
        most_idle = max(standing.idle_rounds for standing in standings.values())
        overdue = max(overdue_after(len(standings), step), most_idle + 1)
        for name in unplaced:
            marked[name] = Standing(standings[name].mu, standings[name].sigma, 0, overdue)
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
