"""The adaptive round ledger (pipeline/core/run/rounds.py) on a benchmark of its own: pairwise games
between scripted players of known strength, played by writing their result files (no Snakemake).

Covered: a round is written only when the last one is finished; the standings read every finished
game; the stops (separated, max_games, max_rounds, max_cost_usd) say which budget stopped it; a pool
change after a stop appends a round that places the new model first and leaves the earlier files as
they were; a rerun from the same results writes the same files and plays nothing; the run loop.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.artifacts import content_id, seed_from
from pipeline.core.rating.adaptive import (
    AdaptiveSchedule,
    Budget,
    decide_round,
    new_standing,
    simulate_outlook,
    update_standings,
)
from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, RatingParams, TeamMatch
from pipeline.core.rating.settings import AdaptiveSettings
from pipeline.core.run.registry import Benchmark, RegistryError
from pipeline.core.run.rounds import (
    AdaptiveSetup,
    AdaptiveSpec,
    RoundGame,
    RoundRecord,
    RoundRequest,
    advance,
    ledger_state,
    play_rounds,
    read_rounds,
    restrict,
    stretch_start,
)

NAME = "duel"
RATING = RatingParams(mu=25.0, sigma=25.0 / 3, beta=25.0 / 6, tau=0.0, draw_probability=0.0)
SKILL = {f"p{k}": float(k) for k in range(8)}  # p7 is the strongest


def _setup(params: Path, _models: Path) -> AdaptiveSetup:
    data = json.loads(params.read_text())
    return AdaptiveSetup(AdaptiveSettings(**data["adaptive"]), tuple(data["pool"]), 2, RATING)


def _games(request: RoundRequest) -> list[RoundGame]:
    seen: dict[tuple[str, ...], int] = {}
    for game in request.earlier:
        seen[game.seats] = seen.get(game.seats, 0) + 1
    found = []
    for table in request.tables:
        seats = tuple(sorted(table))
        replicate = seen.get(seats, 0)
        seen[seats] = replicate + 1
        found.append(RoundGame(content_id([NAME, seats, replicate]), seats, {"replicate": replicate}))
    return found


def _event(results: Path, game: RoundGame) -> RatingEvent:
    data = json.loads((results / "games" / game.id / "result.json").read_text())
    return Pairwise(data["a"], data["b"], data["outcome"])


SPEC = AdaptiveSpec(
    setup=_setup,
    games=_games,
    event=_event,
    play_target=f"{NAME}_rounds",
    play_rule=f"{NAME}_play",
    finished=("games/{game_id}/result.json",),
    calls="games/{game_id}/calls.parquet",
)
BENCH = Benchmark(name=NAME, title="Duel", package="tests", outputs=("games", "rounds"), adaptive=SPEC)


def write_params(root: Path, pool: Sequence[str], **adaptive: Any) -> None:
    settings = {"enabled": True, "tables_per_round": 2, "max_games": 40, "max_rounds": 40, **adaptive}
    (root / "params").mkdir(parents=True, exist_ok=True)
    (root / "params" / f"{NAME}.yaml").write_text(json.dumps({"pool": list(pool), "adaptive": settings}))
    (root / "params" / "models.yaml").write_text("{}")


def results(root: Path) -> Path:
    return root / "results" / NAME


def play(root: Path, cost: float = 0.0) -> list[str]:
    """Play every unfinished game of every round: the stronger player wins 80% of the time (seeded by
    the game id, so a replay gives the same result)."""
    played = []
    for record in read_rounds(results(root) / "rounds"):
        for game in record.games:
            folder = results(root) / "games" / game.id
            if (folder / "result.json").exists():
                continue
            a, b = game.seats
            favourite = "a" if SKILL[a] > SKILL[b] else "b"
            upset = random.Random(seed_from("duel", game.id)).random() < 0.2
            outcome = ("b" if favourite == "a" else "a") if upset else favourite
            folder.mkdir(parents=True)
            pl.DataFrame({"cost_usd": [cost]}).write_parquet(folder / "calls.parquet")
            (folder / "result.json").write_text(json.dumps({"a": a, "b": b, "outcome": outcome}))
            played.append(game.id)
    return played


def run_to_stop(root: Path, cost: float = 0.0, limit: int = 200) -> list[str]:
    """advance and play until the ledger stops; every game id played, in order."""
    played: list[str] = []
    for _ in range(limit):
        step = advance(BENCH, root)
        assert step is not None
        if step.state == "stopped":
            return played
        played += play(root, cost)
    raise AssertionError("the ledger never stopped")


def round_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((results(root) / "rounds").glob("round-*.json"))}


def test_a_round_waits_for_its_games_and_the_next_reads_them(tmp_path: Path) -> None:
    write_params(tmp_path, list(SKILL)[:6])
    first = advance(BENCH, tmp_path)
    assert first is not None and first.state == "playing" and first.round == 1 and len(first.pending) == 2
    again = advance(BENCH, tmp_path)  # nothing played: no new round
    assert again is not None and again.wrote is None and again.pending == first.pending
    assert list(round_files(tmp_path)) == ["round-001.json"]
    record = read_rounds(results(tmp_path) / "rounds")[0]
    assert record.pool == tuple(sorted(list(SKILL)[:6])) and record.stop is None and record.read == ()
    assert set(record.placement) == set(record.pool)  # nobody has played: everyone is placed first
    assert all(s.mu == RATING.mu and s.sigma == RATING.sigma for s in record.standings.values())
    ids = play(tmp_path)
    second = advance(BENCH, tmp_path)
    assert second is not None and second.round == 2 and second.wrote is not None
    saved = json.loads(second.wrote.read_text())
    assert sorted(saved["read_games"]) == sorted(ids)
    assert saved["games_before"] == 2 and saved["rounds_before"] == 1
    played = {name for table in record.tables for name in table}
    moved = {name for name, s in saved["standings"].items() if s["mu"] != RATING.mu}
    assert moved == played


def test_budgets_stop_and_say_which(tmp_path: Path) -> None:
    for budget, expected, games in (
        ({"max_games": 5}, "max_games", 5),
        ({"max_rounds": 3}, "max_rounds", 6),
        ({"max_cost_usd": 0.55}, "max_cost_usd", 6),
    ):
        root = tmp_path / expected
        write_params(root, list(SKILL)[:6], **budget)
        played = run_to_stop(root, cost=0.1)
        last = read_rounds(results(root) / "rounds")[-1]
        assert last.stop == expected and last.tables == () and last.games == ()
        assert len(played) == games, expected
        assert last.budget["games"] == games


def test_separated_field_stops_on_its_own(tmp_path: Path) -> None:
    write_params(tmp_path, ["p0", "p7"], tables_per_round=1, z=0.3, max_games=200, max_rounds=200)
    played = run_to_stop(tmp_path)
    last = read_rounds(results(tmp_path) / "rounds")[-1]
    assert last.stop == "separated" and len(played) < 200
    assert last.standings["p7"].mu > last.standings["p0"].mu


def test_a_new_model_is_placed_first_and_the_old_rounds_stay(tmp_path: Path) -> None:
    write_params(tmp_path, list(SKILL)[:6], max_rounds=3)
    first = run_to_stop(tmp_path)
    before = round_files(tmp_path)
    stopped = advance(BENCH, tmp_path)  # stopped, nothing changed: no new file
    assert stopped is not None and stopped.state == "stopped" and round_files(tmp_path) == before
    write_params(tmp_path, [*list(SKILL)[:6], "p6"], max_rounds=3)
    step = advance(BENCH, tmp_path)
    assert step is not None and step.state == "playing" and step.wrote is not None
    after = round_files(tmp_path)
    assert {k: after[k] for k in before} == before  # the earlier rounds are untouched
    record = read_rounds(results(tmp_path) / "rounds")[-1]
    assert record.placement == ("p6",)
    assert any("p6" in table for table in record.tables)
    assert record.budget["since_round"] == record.index and record.budget["games"] == 0
    second = run_to_stop(tmp_path)
    assert not set(second) & set(first)  # only new games
    assert read_rounds(results(tmp_path) / "rounds")[-1].stop == "max_rounds"


def test_raising_a_budget_goes_on_after_a_stop(tmp_path: Path) -> None:
    write_params(tmp_path, list(SKILL)[:4], max_games=4)
    run_to_stop(tmp_path)
    write_params(tmp_path, list(SKILL)[:4], max_games=8)
    more = run_to_stop(tmp_path)
    assert len(more) == 4
    records = read_rounds(results(tmp_path) / "rounds")
    assert records[-1].stop == "max_games" and records[-1].budget["games"] == 8


def test_a_rerun_from_the_same_results_writes_the_same_rounds_and_plays_nothing(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for root in (first, second):
        write_params(root, list(SKILL), max_games=16)
    run_to_stop(first)
    (results(second)).mkdir(parents=True)
    import shutil

    shutil.copytree(results(first) / "games", results(second) / "games")
    assert run_to_stop(second) == []  # every game chosen again is a game played already
    assert round_files(second) == round_files(first)


def test_the_run_loop_plays_rounds_and_refuses_to_spin(tmp_path: Path) -> None:
    write_params(tmp_path, list(SKILL)[:4], max_rounds=3)
    targets: list[list[str]] = []

    def snakemake(names: list[str]) -> int:
        targets.append(names)
        play(tmp_path)
        return 0

    messages: list[str] = []
    assert play_rounds([BENCH], snakemake, root=tmp_path, say=messages.append) == 0
    assert targets == [[f"{NAME}_rounds"]] * 3
    assert "stopped (max_rounds)" in messages[-1]
    write_params(tmp_path, list(SKILL)[:4], max_rounds=4)
    lines: list[str] = []
    assert play_rounds([BENCH], lambda _names: 0, root=tmp_path, say=lines.append) == 1  # plays nothing
    assert "still not finished" in lines[-1]
    assert play_rounds([BENCH], lambda _names: 7, root=tmp_path) == 7  # Snakemake's failure is the run's


def test_the_fixed_schedule_keeps_an_empty_ledger(tmp_path: Path) -> None:
    write_params(tmp_path, list(SKILL)[:4], enabled=False)
    step = advance(BENCH, tmp_path)
    assert step is not None and step.state == "off"
    assert (results(tmp_path) / "rounds").is_dir() and not round_files(tmp_path)


def test_a_torn_or_missing_round_is_named(tmp_path: Path) -> None:
    from pipeline.core.artifacts import ParamsError

    write_params(tmp_path, list(SKILL)[:4], max_rounds=3)
    run_to_stop(tmp_path)
    (results(tmp_path) / "rounds" / "round-002.json").unlink()
    with pytest.raises(ParamsError, match="round 2 is missing"):
        read_rounds(results(tmp_path) / "rounds")
    (results(tmp_path) / "rounds" / "round-001.json").write_text("{}")
    with pytest.raises(ParamsError, match="not a round file"):
        read_rounds(results(tmp_path) / "rounds")


def test_only_the_pool_counts() -> None:
    game = FreeForAll({"a": 1, "b": 2, "c": 3})
    assert restrict(game, frozenset("ac")) == FreeForAll({"a": 1, "c": 2})
    assert restrict(game, frozenset("a")) is None
    assert restrict(Pairwise("a", "b", "a"), frozenset("ab")) == Pairwise("a", "b", "a")
    assert restrict(Pairwise("a", "b", "a"), frozenset("ac")) is None


def test_ledger_state_counts_the_stretch_since_the_pool_changed(tmp_path: Path) -> None:
    write_params(tmp_path, list(SKILL)[:4], max_rounds=2)
    run_to_stop(tmp_path)
    records = read_rounds(results(tmp_path) / "rounds")
    setup = _setup(tmp_path / "params" / f"{NAME}.yaml", tmp_path)
    assert stretch_start(records, setup.pool) == 1
    assert stretch_start(records, [*setup.pool, "p5"]) == len(records) + 1
    ids = [g.id for r in records for g in r.games]
    events = {g.id: _event(results(tmp_path), g) for r in records for g in r.games}
    state = ledger_state(setup, records, events, dict.fromkeys(ids, 0.5))
    assert state.games == 4 and state.rounds == 2 and state.spent_usd == pytest.approx(2.0)
    assert state.stretch_games == 4 and state.read == tuple(sorted(ids))


def test_registry_requires_the_rounds_output() -> None:
    with pytest.raises(RegistryError, match="rounds"):
        Benchmark(name="duel2", title="Duel", package="tests", outputs=("games",), adaptive=SPEC)


def test_decide_round_places_new_models_first_and_respects_budgets() -> None:
    schedule = AdaptiveSchedule(seats=2, tables_per_round=1)
    standings = {name: new_standing(RATING) for name in ("a", "b", "c", "d")}
    standings = {
        **{n: type(s)(s.mu + k, 2.0, games=10) for k, (n, s) in enumerate(standings.items())},
        "new": new_standing(RATING),
    }
    stop, chosen = decide_round(standings, schedule, RATING, 0, 5, None, budget=Budget(), games=20, rounds=10)
    assert stop is None and "new" in chosen.tables[0]
    stop, chosen = decide_round(
        standings, schedule, RATING, 0, 5, None, budget=Budget(max_games=20), games=20, rounds=0
    )
    assert stop == "max_games" and chosen.tables == ()
    wide = AdaptiveSchedule(seats=2, tables_per_round=2)
    stop, chosen = decide_round(standings, wide, RATING, 0, 5, None, budget=Budget(max_games=21), games=20, rounds=0)
    assert stop is None and len(chosen.tables) == 1  # never more games than the budget has left


def test_simulated_outlook_is_seeded_and_bounded() -> None:
    schedule = AdaptiveSchedule(seats=2, tables_per_round=2)
    standings = {name: new_standing(RATING) for name in SKILL}
    kwargs: dict[str, Any] = {"budget": Budget(max_games=30, max_rounds=100), "games": 4, "rounds": 2}
    one = simulate_outlook(standings, schedule, RATING, 0, 3, None, pending=[("p0", "p1")], **kwargs)
    two = simulate_outlook(standings, schedule, RATING, 0, 3, None, pending=[("p0", "p1")], **kwargs)
    assert one == two
    assert 1 <= one.mean <= one.high <= 27  # the pending game plus at most the 26 the budget leaves
    assert sum(one.stops.values()) == one.simulations
    priced = simulate_outlook(
        standings, schedule, RATING, 0, 3, None, cost_per_game=1.0, **{**kwargs, "budget": Budget(max_cost_usd=5.0)}
    )
    # the spend is checked before each round, so the last round may pass the budget: 2 + 2 + 2 games
    assert priced.high == 6 and priced.stops == {"max_cost_usd": priced.simulations}


def test_a_game_may_yield_several_events_rated_in_order() -> None:
    """A game of several comparisons (SKATE: a table compared once per question) is read as a sequence
    of events, rated in order and restricted to the pool one by one; the plan's simulation can play
    as many a table."""
    setup = AdaptiveSetup(AdaptiveSettings(enabled=True), ("p0", "p1", "p2"), 2, RATING)
    game = RoundGame("g1", ("p0", "p1"))
    record = RoundRecord(1, NAME, "", {}, setup.pool, {}, (), 0, 0, 0.0, {}, (), None, (game.seats,), (game,))
    twice = (Pairwise("p0", "p1", "a"), Pairwise("p0", "p1", "a"), Pairwise("p0", "gone", "b"))
    state = ledger_state(setup, [record], {"g1": twice})
    start = {name: new_standing(RATING) for name in setup.pool}
    assert state.standings == update_standings(start, list(twice[:2]), RATING)  # the outsider's dropped
    assert state.read == ("g1",) and state.met == {("p0", "p1"): 2} and state.standings["p0"].games == 2
    schedule = AdaptiveSchedule(seats=2, tables_per_round=1)
    kwargs: dict[str, Any] = {"budget": Budget(max_games=40, max_rounds=40), "games": 0, "rounds": 0}
    one = simulate_outlook(start, schedule, RATING, 0, 1, None, simulations=4, **kwargs)
    assert simulate_outlook(start, schedule, RATING, 0, 1, None, simulations=4, events_per_table=1, **kwargs) == one
    many = simulate_outlook(start, schedule, RATING, 0, 1, None, simulations=4, events_per_table=8, **kwargs)
    assert many != one  # each simulated table is compared 8 times: other standings, other stops
    assert many == simulate_outlook(start, schedule, RATING, 0, 1, None, simulations=4, events_per_table=8, **kwargs)


# a one-against-rest benchmark: three seats, the first alone against the other two (a spy against
# civilians), the ledger choosing the table and the lone seat together (`AdaptiveSpec.lone`)
TRIO = "trio"


def _trio_setup(params: Path, _models: Path) -> AdaptiveSetup:
    data = json.loads(params.read_text())
    settings = AdaptiveSettings(**data["adaptive"])
    return AdaptiveSetup(settings, tuple(data["pool"]), 3, RATING, shape="one_against_rest")


def _trio_games(request: RoundRequest) -> list[RoundGame]:
    # the round's index makes every game new (no replicates to count in this test)
    return [
        RoundGame(content_id([TRIO, request.index, table]), tuple(sorted(table)), {"lone": table[0]})
        for table in request.tables
    ]


def _trio_event(results: Path, game: RoundGame) -> RatingEvent:
    data = json.loads((results / "games" / game.id / "result.json").read_text())
    return TeamMatch(tuple(data["a"]), tuple(data["b"]), data["outcome"])


TRIO_SPEC = AdaptiveSpec(
    setup=_trio_setup,
    games=_trio_games,
    event=_trio_event,
    play_target=f"{TRIO}_rounds",
    play_rule=f"{TRIO}_play",
    finished=("games/{game_id}/result.json",),
    calls=None,
    lone=lambda game: str(game.fields["lone"]),
)
TRIO_BENCH = Benchmark(name=TRIO, title="Trio", package="tests", outputs=("games", "rounds"), adaptive=TRIO_SPEC)


def play_trio(root: Path) -> None:
    """Every unfinished game: the lone seat wins when its skill beats the mean of the others'."""
    for record in read_rounds(root / "results" / TRIO / "rounds"):
        for game in record.games:
            folder = root / "results" / TRIO / "games" / game.id
            if folder.exists():
                continue
            lone = str(game.fields["lone"])
            rest = [name for name in game.seats if name != lone]
            won = SKILL[lone] > sum(SKILL[name] for name in rest) / len(rest)
            folder.mkdir(parents=True)
            (folder / "result.json").write_text(json.dumps({"a": [lone], "b": rest, "outcome": "a" if won else "b"}))


def test_a_one_against_rest_ledger_chooses_the_lone_seat_with_the_table(tmp_path: Path) -> None:
    pool = list(SKILL)[:6]
    for root in (tmp_path / "first", tmp_path / "second"):
        (root / "params").mkdir(parents=True)
        settings = {"enabled": True, "tables_per_round": 2, "max_games": 24, "max_rounds": 40}
        (root / "params" / f"{TRIO}.yaml").write_text(json.dumps({"pool": pool, "adaptive": settings}))
        (root / "params" / "models.yaml").write_text("{}")
        for _ in range(40):
            step = advance(TRIO_BENCH, root)
            assert step is not None
            if step.state == "stopped":
                break
            play_trio(root)
    records = read_rounds(tmp_path / "first" / "results" / TRIO / "rounds")
    assert records[-1].stop == "max_games" and sum(len(r.games) for r in records) == 24
    for record in records:
        for table, game in zip(record.tables, record.games):
            assert table[0] == game.fields["lone"] and list(table[1:]) == sorted(table[1:])
    games = [game for record in records for game in record.games]
    played = Counter(name for game in games for name in game.seats)
    alone = Counter(str(game.fields["lone"]) for game in games)
    assert set(played.values()) == {12}, played  # every model plays alike
    assert all(abs(alone[name] - 4) <= 1 for name in pool), alone  # and is alone its fair share, within one
    first = {p.name: p.read_bytes() for p in sorted((tmp_path / "first" / "results" / TRIO / "rounds").iterdir())}
    second = {p.name: p.read_bytes() for p in sorted((tmp_path / "second" / "results" / TRIO / "rounds").iterdir())}
    assert first == second  # the same results make the same choices


def test_a_fixed_schedules_rounds_folder_holds_a_note_not_nothing(tmp_path: Path) -> None:
    """DVC warns at every stage about an empty output folder: the ledger's folder gets a note while
    it holds nothing else, and a folder with rounds in it is left as it is."""
    from types import SimpleNamespace

    from pipeline.core.run.rounds import LEDGER_NOTE, ensure_ledgers

    fixed = SimpleNamespace(name="fixed", results="results/fixed", adaptive=object())
    played = SimpleNamespace(name="played", results="results/played", adaptive=object())
    (tmp_path / "results/played/rounds").mkdir(parents=True)
    (tmp_path / "results/played/rounds/round-001.json").write_text("{}")
    ensure_ledgers([fixed, played], tmp_path)  # type: ignore[list-item]
    assert (tmp_path / "results/fixed/rounds/README.md").read_text() == LEDGER_NOTE
    assert sorted(p.name for p in (tmp_path / "results/played/rounds").iterdir()) == ["round-001.json"]
