"""The run plan of an adaptive benchmark: the rounds so far, and the games and dollars still to come.

Snakemake's dry run sees only the round already written, so `python -m pipeline plan` adds, for
each benchmark of its targets whose adaptive schedule is on (pipeline.core.run.rounds):

- the rounds and games so far: round files, games chosen, finished, still to play, a stop;
- the further games to the stopping rule, by simulating the schedule from the current standings
  (`simulate_outlook`: skills drawn from N(mu, sigma), outcomes from TrueSkill's model, seeded
  simulations): their mean and a high quantile;
- their cost, priced as the plan prices a game: the benchmark's own estimator prices the games of
  the round to play (the pending round's, else the next round's, chosen in memory and not
  written), and their mean cost a game times the games expected.

Nothing is written; the same results give the same outlook.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipeline.core.models.roster import ModelsParams
from pipeline.core.run.plan import PlannedJob, TokenHistory, plan_table
from pipeline.core.run.rounds import (
    RoundGame,
    finished_events,
    game_parts,
    is_finished,
    ledger_state,
    load_setup,
    lone_counts,
    next_record,
    part_finished,
    read_rounds,
    rounds_dir,
)
from pipeline.core.run.workflow import adaptive_benchmarks

SIMULATIONS = 16
MIN_SIMULATIONS = 4
QUANTILE = 0.9
# simulated (round x model) steps the outlook affords: ~1 s on one core (a round of a 10-model field
# costs about 0.5 ms); a larger field or budget gets fewer simulations, never fewer than MIN_SIMULATIONS
WORK = 16_000


def simulations_for(pool: int, seats: int, tables_per_round: int, max_games: int, max_rounds: int) -> int:
    """How many simulations keep the plan fast for this field and budget (deterministic)."""
    tables = max(1, min(tables_per_round, pool // max(seats, 1)))
    rounds = max(1, min(max_rounds, -(-max_games // tables)))
    return max(MIN_SIMULATIONS, min(SIMULATIONS, WORK // (rounds * max(pool, 1))))


@dataclass(frozen=True)
class AdaptiveOutlook:
    """One adaptive benchmark's rounds so far and what is left to play (see the module docstring)."""

    benchmark: str
    rounds: int  # round files written
    games: int  # games chosen by them
    finished: int
    to_play: int  # chosen and not finished
    stop: str | None  # the last round's stop, when it still holds
    further_mean: float  # games still to play to the stopping rule (those chosen included)
    further_high: float
    quantile: float
    simulations: int
    stops: dict[str, int]  # how the simulations stopped
    cost_per_game: float | None  # None: unknown (a model without a price)
    priced_games: int  # the games the price per game comes from

    @property
    def cost_mean(self) -> float | None:
        return None if self.cost_per_game is None else self.cost_per_game * self.further_mean

    @property
    def cost_high(self) -> float | None:
        return None if self.cost_per_game is None else self.cost_per_game * self.further_high

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "cost_mean_usd": self.cost_mean, "cost_high_usd": self.cost_high}

    def line(self) -> str:
        money = "unknown" if self.cost_per_game is None else f"${self.cost_per_game:.4f}"
        spend = (
            "cost unknown (a model without a price: set gateway.prices)"
            if self.cost_per_game is None
            else f"${self.cost_mean or 0.0:.4f} mean, ${self.cost_high or 0.0:.4f} high"
        )
        so_far = (
            f"adaptive {self.benchmark}: {self.rounds} round(s), {self.games} game(s) chosen "
            f"({self.finished} finished, {self.to_play} to play)"
        )
        if self.stop is not None:
            return f"{so_far}; stopped ({self.stop}): no further games"
        how = ", ".join(f"{k} {v}" for k, v in self.stops.items())
        return (
            f"{so_far}; expected further games to the stopping rule: {self.further_mean:.1f} mean, "
            f"{self.further_high:.0f} at the {self.quantile:.0%} quantile ({self.simulations} simulations; "
            f"stops: {how}); at {money} a game (the plan's estimate of {self.priced_games} game(s)): {spend}"
        )


def price_per_game(
    bench: Any,
    games: Sequence[RoundGame],
    models: ModelsParams,
    *,
    root: Path,
    models_path: str,
    params_dir: str,
    preview: bool,
) -> float | None:
    """The mean cost of `games` as the plan prices them: the benchmark's estimator of its play rule,
    then the plan's table (measured tokens where there are some, prices from the roster). A game
    played as parts (`AdaptiveSpec.parts`) costs its parts not played yet, each priced once: a seat's
    play that an earlier table made is paid already."""
    from pipeline.core.run.estimates import PlanContext
    from pipeline.core.run.plan_estimators import estimate_jobs

    if not games:
        return 0.0
    spec = bench.adaptive
    context = PlanContext(
        root, models, models_path, params_dir=params_dir, preview={bench.name: tuple(games)} if preview else {}
    )
    parts = list(dict.fromkeys(part for g in games for part in game_parts(spec, g)))
    if spec.parts is not None:
        parts = [part for part in parts if not part_finished(spec, root / bench.results, part)]
        if not parts:
            return 0.0
    jobs = [PlannedJob(spec.play_rule, "adaptive round", {spec.job_wildcard: part}) for part in parts]
    table = plan_table(estimate_jobs(jobs, context), models, TokenHistory.load(root / "results"))
    costs = table["cost_usd"]
    if costs.null_count():
        return None
    return float(costs.sum()) / len(games)


def lone_first(seats: Sequence[str], alone: str) -> tuple[str, ...]:
    """A table's seats with its lone player first, as the ledger chose the table."""
    return (alone, *(p for p in seats if p != alone))


def outlook(
    bench: Any,
    models: ModelsParams,
    *,
    root: Path = Path("."),
    params_dir: str = "params",
    models_path: str | None = None,
    simulations: int | None = None,
    quantile: float = QUANTILE,
) -> AdaptiveOutlook | None:
    """The outlook of one benchmark (None: no adaptive schedule, or it is off). `simulations`:
    default `simulations_for` the field and budget."""
    from pipeline.core.rating.adaptive import simulate_outlook

    setup = load_setup(bench, root, params_dir)
    if setup is None or not setup.enabled:
        return None
    s = setup.settings
    if simulations is None:
        simulations = simulations_for(len(setup.pool), setup.seats, s.tables_per_round, s.max_games, s.max_rounds)
    spec = bench.adaptive
    results = root / bench.results
    records = read_rounds(rounds_dir(results))
    events, costs = finished_events(spec, results, records)
    state = ledger_state(setup, records, events, costs)
    chosen = [g for r in records for g in r.games]
    last = records[-1] if records else None
    unfinished = [g for g in (last.games if last else ()) if not is_finished(spec, results, g)]
    unchanged = last is not None and last.pool == tuple(sorted(setup.pool)) and last.settings_digest == setup.digest
    stopped = last is not None and last.stop is not None and unchanged
    models_file = models_path or f"{params_dir}/models.yaml"
    base = {
        "benchmark": bench.name,
        "rounds": len(records),
        "games": len(chosen),
        "finished": len({g.id for g in chosen} & set(costs)),
        "to_play": len(unfinished),
        "quantile": quantile,
        "simulations": simulations,
    }
    if stopped:
        assert last is not None
        return AdaptiveOutlook(
            **base,
            stop=last.stop,
            further_mean=0.0,
            further_high=0.0,
            stops={str(last.stop): simulations},
            cost_per_game=0.0,
            priced_games=0,
        )
    if unfinished:
        priced, preview = unfinished, False
    else:  # the next round as the ledger would choose it now (not written)
        params_file = root / params_dir / f"{bench.name}.yaml"
        record = next_record(bench.name, spec, setup, records, results, params_file, root / models_file)
        priced, preview = list(record.games), True
    cost = price_per_game(
        bench, priced, models, root=root, models_path=models_file, params_dir=params_dir, preview=preview
    )
    lone = lone_counts(spec, records, state.read, setup.pool)
    pending = [g.seats if spec.lone is None else lone_first(g.seats, spec.lone(g)) for g in unfinished]
    found = simulate_outlook(
        state.standings,
        setup.settings.schedule(setup.seats),
        setup.rating,
        setup.settings.seed,
        len(records) + 1,
        state.met,
        budget=setup.budget(),
        games=state.stretch_games - len(unfinished),
        rounds=state.stretch_rounds - (1 if unfinished else 0),
        spent_usd=state.stretch_spent_usd,
        pending=pending,
        cost_per_game=cost,
        simulations=simulations,
        quantile=quantile,
        shape=setup.shape,
        events_per_table=setup.events_per_game,
        lone=lone,
    )
    return AdaptiveOutlook(
        **base,
        stop=None,
        further_mean=found.mean,
        further_high=found.high,
        stops=found.stops,
        cost_per_game=cost,
        priced_games=len(priced),
    )


def adaptive_outlooks(
    targets: Sequence[str],
    models: ModelsParams,
    *,
    root: Path = Path("."),
    params_dir: str = "params",
    models_path: str | None = None,
) -> list[AdaptiveOutlook]:
    """The outlook of every adaptive benchmark the targets need whose schedule is on."""
    found = []
    for bench in adaptive_benchmarks(targets):
        item = outlook(bench, models, root=Path(root), params_dir=params_dir, models_path=models_path)
        if item is not None:
            found.append(item)
    return found


__all__ = ["AdaptiveOutlook", "adaptive_outlooks", "outlook", "price_per_game", "simulations_for"]
