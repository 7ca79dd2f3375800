"""Xent's adaptive schedule without Snakemake: the params and their checks, tables dealt maps (the first
map none of its players played, then reuse, then a free comparison, then nothing), content ids (the
fixed jobs' unchanged, a table's independent of its seat order), the round files as the schedule, the
events the ledger rates, the ledger run to its end on bots with the model-free judge (rerun from the
same results: the same files, nothing played), each play paid once, the plan's outlook, and the
opponent-corrected rates of an adaptive run's metrics."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts import ParamsError
from pipeline.core.rating.events import FreeForAll
from pipeline.core.run.adaptive_plan import outlook
from pipeline.core.run.rounds import RoundGame, advance, finished_costs, finished_games, read_rounds
from pipeline.xent import adaptive
from pipeline.xent.benchmark import BENCHMARK
from pipeline.xent.config import XentParams, load_xent
from pipeline.xent.schedule import build_schedule, map_catalogue, map_order, seated_games
from pipeline.xent.stages import build_stage, play_stage, rescore_stage
from tests.conftest import REPO, models_params

BOTS: list[dict[str, Any]] = [
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
    {"name": "terse-bot", "bot": "heuristic", "bot_options": {"words": 2}},
]
NAMES = [b["name"] for b in BOTS]
BASE: dict[str, Any] = {
    "players": NAMES,
    "opponent": "random-bot",
    "games": ["condense", "interception"],
    "maps_per_game": 2,
    "rounds": 1,
    "judge": "word",
    "rating": {"passes": 2, "bootstrap_resamples": 0},
}
# the fixed schedule's ids of BASE: the adaptive option left them as they were; they moved once since,
# when a seat's identity became the core's (RosterEntry.game_identity: the name in, a bot's sampling out)
FIXED_IDS = [
    ("condense", "heuristic-bot", "4e6aa265c754de65"),
    ("condense", "random-bot", "64bdcf25b7998db2"),
    ("condense", "terse-bot", "44dba69e4b6f2345"),
    ("interception", "heuristic-bot", "aeb2ed1e0e740f91"),
    ("interception", "random-bot", "d17776a94669f4b5"),
    ("interception", "terse-bot", "74f6c253b89e1638"),
]


def adaptive_params(**settings: Any) -> dict[str, Any]:
    return {**BASE, "schedule": {"adaptive": {"enabled": True, **settings}}}


def write_params(root: Path, params: dict[str, Any], roster: list[dict[str, Any]] = BOTS) -> None:
    (root / "params").mkdir(parents=True, exist_ok=True)
    (root / "params/models.yaml").write_text(yaml.safe_dump({"roster": roster}, sort_keys=False))
    (root / "params/xent.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """A work directory as the current one: the schedule reads results/xent/rounds relative to it."""
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(here)


def play_pending(root: Path) -> int:
    """Play every scheduled job not played yet (in process: bots and the model-free judge)."""
    played = 0
    for job in build_schedule(
        load_xent("params/xent.yaml"), models_params(BOTS), rounds=root / "results/xent/rounds"
    ).jobs:
        if not job.path("results/xent/play").exists():
            play_stage(
                "params/xent.yaml", "params/models.yaml", None, job.job_id, "results/xent/maps", "results/xent/play"
            )
            played += 1
    return played


def run_ledger(root: Path) -> tuple[list[str], int]:
    """Advance and play until the ledger stops: the lines it said and the plays it made."""
    lines, played = [], 0
    for _ in range(40):
        step = advance(BENCHMARK, root)
        assert step is not None
        lines.append(step.line())
        if step.state != "playing":
            return lines, played
        played += play_pending(root)
    raise AssertionError(f"the ledger did not stop: {lines}")


def plays(root: Path) -> dict[str, int]:
    folder = root / "results/xent/play"
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in sorted(folder.rglob("*.json"))}


def test_off_by_default_and_the_fixed_jobs_keep_their_ids() -> None:
    demo = load_xent(REPO / "params/xent.yaml")
    assert not demo.schedule.adaptive.enabled and demo.schedule.adaptive.table_size == 2
    schedule = build_schedule(XentParams.model_validate(BASE), models_params(BOTS))
    assert [(j.game, j.player, j.job_id) for j in schedule.jobs] == FIXED_IDS
    assert all(len(j.maps) == 2 for j in schedule.jobs)


def test_bad_settings_name_the_file_the_field_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "params/xent.yaml"
    for adaptive_block, field, fix in (
        ({"table_size": 1}, "schedule.adaptive.table_size", "to an integer from 2 to 1000"),
        ({"tabel_size": 3}, "schedule.adaptive.tabel_size", "did you mean 'table_size'?"),
        ({"max_games": 0}, "schedule.adaptive.max_games", "set schedule.adaptive.max_games"),
    ):
        write_params(tmp_path, {**BASE, "schedule": {"adaptive": adaptive_block}})
        with pytest.raises(ParamsError) as raised:
            load_xent(path)
        assert str(path) in str(raised.value) and field in str(raised.value) and fix in str(raised.value)
    write_params(tmp_path, adaptive_params(table_size=4))  # three players for tables of four
    for check in (
        lambda: adaptive.setup(path, tmp_path / "params/models.yaml"),
        lambda: build_schedule(load_xent(path), models_params(BOTS), source=str(path)),
    ):
        with pytest.raises(ParamsError) as raised:
            check()
        message = str(raised.value)
        assert str(path) in message and "schedule.adaptive.table_size is 4" in message and "at most 3" in message


def test_the_setup_digest_covers_the_maps_and_the_fixed_schedule_reads_none(tmp_path: Path) -> None:
    models = tmp_path / "params/models.yaml"
    write_params(tmp_path, adaptive_params())
    two = adaptive.setup(tmp_path / "params/xent.yaml", models)
    assert (two.seats, two.pool, len(two.decides["maps"])) == (2, tuple(NAMES), 4)
    write_params(tmp_path, {**adaptive_params(), "maps_per_game": 3})
    assert adaptive.setup(tmp_path / "params/xent.yaml", models).digest != two.digest  # more maps: go on
    # the fixed schedule does not look at its maps here: a map set not imported yet stops nothing
    write_params(tmp_path, {**BASE, "map_set": str(tmp_path / "not-imported")})
    assert not adaptive.setup(tmp_path / "params/xent.yaml", models).enabled


def test_tables_are_dealt_the_first_new_map_then_reuse_then_a_free_comparison_then_nothing() -> None:
    params = XentParams.model_validate(adaptive_params())
    models = models_params(BOTS)
    order = [spec.map_id for spec in map_order(map_catalogue(params)[2])]
    games_of = [spec.game for spec in map_order(map_catalogue(params)[2])]
    assert games_of == ["condense", "interception", "condense", "interception"]  # the games alternate
    h, r, t = NAMES
    earlier: list[RoundGame] = []

    def deal(*table: str) -> RoundGame | None:
        found = seated_games([table], earlier, params, models)
        earlier.extend(found)
        return found[0] if found else None

    first = deal(r, t)
    assert first is not None and first.fields["map_id"] == order[0] and first.seats == (r, t)
    for table in ((h, t), (t, r), (t, h)):  # each the first map new to both
        deal(*table)
    assert [g.fields["map_id"] for g in earlier] == order
    # h (maps 1, 3) and r (maps 0, 2) share no new map: the earliest map one of them has not played
    reuse = deal(h, r)
    assert reuse is not None and reuse.fields["map_id"] == order[0]
    # h and t met on maps 1 and 3: map 2 is new to h (t keeps its score there)
    again = deal(h, t)
    assert again is not None and again.fields["map_id"] == order[2]
    # both played map 0 at other tables: they are compared there for free (no play)
    free = deal(t, h)
    assert free is not None and free.fields["map_id"] == order[0]
    # ... and now they met on every map: nothing left for them
    assert deal(h, t) is None
    # a seat's play of a map is one job whichever tables it serves
    by_seat = {(seat, g.fields["map_id"]): job for g in earlier for seat, job in zip(g.seats, g.fields["plays"])}
    assert by_seat[h, order[0]] == free.fields["plays"][free.seats.index(h)]
    assert len(by_seat) == len({job for g in earlier for job in g.fields["plays"]})


def test_ids_are_content_ids_and_a_games_only_map_is_the_fixed_job() -> None:
    params = XentParams.model_validate(adaptive_params())
    models = models_params(BOTS)
    tables = [("heuristic-bot", "random-bot")]
    once = seated_games(tables, [], params, models)
    assert once == seated_games(tables, [], params, models)  # deterministic
    swapped = seated_games([("random-bot", "heuristic-bot")], [], params, models)
    assert swapped[0].id == once[0].id and swapped[0].seats != once[0].seats
    other = seated_games([("heuristic-bot", "terse-bot")], [], params, models)
    assert other[0].id != once[0].id
    # one map a game: an adaptive seat plays exactly the fixed schedule's job
    single = {**BASE, "maps_per_game": 1}
    fixed = {(j.game, j.player): j.job_id for j in build_schedule(XentParams.model_validate(single), models).jobs}
    one = XentParams.model_validate({**single, "schedule": {"adaptive": {"enabled": True}}})
    (table,) = seated_games(tables, [], one, models)
    assert table.fields["plays"] == [fixed["condense", seat] for seat in table.seats]


def test_the_round_files_are_the_schedule_and_a_changed_entry_stops_with_the_fix(work: Path) -> None:
    write_params(work, adaptive_params(tables_per_round=1))
    step = advance(BENCHMARK, work)
    assert step is not None and step.state == "playing" and step.wrote is not None
    (table,) = read_rounds(work / "results/xent/rounds")[0].games
    schedule = build_schedule(load_xent("params/xent.yaml"), models_params(BOTS))
    assert [(j.player, j.job_id, [m.map_id for m in j.maps]) for j in schedule.jobs] == [
        (seat, job, [table.fields["map_id"]]) for seat, job in zip(table.seats, table.fields["plays"])
    ]
    preview = seated_games(
        [("heuristic-bot", "terse-bot")], [table], load_xent("params/xent.yaml"), models_params(BOTS)
    )
    with_preview = build_schedule(load_xent("params/xent.yaml"), models_params(BOTS), preview=preview)
    assert len(with_preview.jobs) == len(set(preview[0].fields["plays"]) | set(table.fields["plays"]))
    changed = [dict(b, bot_options={"words": 3}) if b["name"] == table.seats[0] else b for b in BOTS]
    with pytest.raises(ParamsError) as raised:
        build_schedule(load_xent("params/xent.yaml"), models_params(changed))
    message = str(raised.value)
    assert "results/xent/rounds/round-001.json" in message and f"the play of {table.seats[0]}" in message
    assert "move results/xent/rounds away" in message
    with pytest.raises(ParamsError, match="a table of an earlier round"):  # no round is written over them
        seated_games([("heuristic-bot", "terse-bot")], [table], load_xent("params/xent.yaml"), models_params(changed))


def play_record(job_id: str, player: str, map_id: str, totals: list[float | None]) -> dict[str, Any]:
    rounds: list[dict[str, Any]] = [
        {
            "round": k,
            "error": None if total is not None else "ensure failed 11 times",
            "total_bits": total,
            "ensure_failures": 0,
            "moves": [],
            "rewards": [],
        }
        for k, total in enumerate(totals, start=1)
    ]
    return {
        "job_id": job_id,
        "game": "condense",
        "game_version": "v",
        "description": "",
        "code": "",
        "player": player,
        "model": player,
        "opponent": None,
        "self_roles": ["black"],
        "opponent_roles": [],
        "rounds": len(totals),
        "prompt_version": 1,
        "judge": {},
        "maps": [{"map_id": map_id, "rounds": rounds, "seed": 0}],
    }


def test_a_table_is_ranked_by_map_score_as_the_fixed_rating_ranks_a_map(tmp_path: Path) -> None:
    results = tmp_path / "results/xent"
    seats = ("a", "b", "c", "d")
    jobs = ["j0", "j1", "j2", "j3"]
    table = RoundGame("t1", seats, {"game": "condense", "map_id": "m1", "plays": jobs})
    rounds = results / "rounds"
    rounds.mkdir(parents=True)
    record = {"round": 1, "benchmark": "xent", "settings_digest": "x", "pool": list(seats), "standings": {}}
    record |= {"read_games": [], "games_before": 0, "rounds_before": 0, "spent_usd": 0.0, "stop": None}
    record |= {"tables": [list(seats)], "games": [table.to_json()]}
    (rounds / "round-001.json").write_text(json.dumps(record))
    # a: best round 3.0; b: 3.0 as well (a tie); c: an errored round voids its map; d: 1.0
    played: list[list[float | None]] = [[1.0, 3.0], [3.0, 2.0], [5.0, None], [1.0, 0.5]]
    for job, seat, totals in zip(jobs, seats, played, strict=True):
        path = results / "play/condense" / f"{job}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(play_record(job, seat, "m1", totals)))
    assert adaptive.event(results, table) == FreeForAll({"a": 1, "b": 1, "c": 3, "d": 2})
    (results / "play/condense/j3.json").unlink()  # a seat not played yet: no event
    assert adaptive.event(results, table) is None


def test_the_ledger_plays_to_the_end_each_play_once_and_a_rerun_plays_nothing(work: Path) -> None:
    # z 4: the maps run out before the field separates
    write_params(work, adaptive_params(seed=1, z=4.0))
    for game in BASE["games"]:
        build_stage("params/xent.yaml", "params/models.yaml", game, "results/xent/maps", None)
    lines, played = run_ledger(work)
    ledger = read_rounds(work / "results/xent/rounds")
    assert ledger[-1].stop == "exhausted" and ledger[-1].games == () and ledger[-1].tables
    assert "stopped (exhausted)" in lines[-1]
    tables = [g for r in ledger for g in r.games]
    jobs = {job for g in tables for job in g.fields["plays"]}
    assert played == len(jobs) == len(plays(work)) <= 3 * 4  # each (player, map) played once at most
    assert set(ledger[-1].read) == {g.id for g in tables}
    assert all(s.games > 0 for s in ledger[-1].standings.values())
    # rescore and rate see the round plays; the adaptive metrics add the opponent-corrected rates
    rescore_stage("params/xent.yaml", "params/models.yaml", "results/xent/play", "results/xent")
    from pipeline.xent.report import write_rate

    write_rate("params/xent.yaml", "results/xent", "params/models.yaml")
    metrics = json.loads((work / "results/xent/metrics.json").read_text())
    assert set(metrics) == set(NAMES)
    for entry in metrics.values():
        assert 0.0 <= entry["opponent_win_rate"] <= 1.0 and 0.0 <= entry["opponent_win_rate_uniform"] <= 1.0
        assert entry["opponent_win_rate_imputed"] == 0  # every pair met on some map
    # the rounds folder moved away: the same rounds are written again, and nothing is played
    before, files = plays(work), [p.read_bytes() for p in sorted((work / "results/xent/rounds").glob("*.json"))]
    shutil.move(work / "results/xent/rounds", work / "old-rounds")
    _, replayed = run_ledger(work)
    assert replayed == 0 and plays(work) == before
    assert [p.read_bytes() for p in sorted((work / "results/xent/rounds").glob("*.json"))] == files


def test_a_play_two_tables_share_is_paid_once(work: Path) -> None:
    write_params(work, {**adaptive_params(), "maps_per_game": 1})  # two maps
    h, r, t = NAMES
    params, models = load_xent("params/xent.yaml"), models_params(BOTS)
    first = seated_games([(h, r)], [], params, models)  # map 0
    second = seated_games([(h, t)], first, params, models)  # map 1, new to both
    third = seated_games([(r, t)], first + second, params, models)  # map 0 again: r's play serves it too
    records = [
        {"round": k, "benchmark": "xent", "settings_digest": "x", "pool": NAMES, "standings": {}, "read_games": []}
        | {"games_before": 0, "rounds_before": 0, "spent_usd": 0.0, "stop": None, "tables": [], "games": [g.to_json()]}
        for k, g in enumerate(first + second + third, start=1)
    ]
    shared = set(third[0].fields["plays"]) & {job for g in first + second for job in g.fields["plays"]}
    assert len(shared) == 1
    for part in {p for g in first + second + third for p in adaptive.parts(g)}:
        path = work / "results/xent/play" / f"{part}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")  # finished (what was played is not read here)
        pl.DataFrame({"cost_usd": [1.0]}).write_parquet(path.with_suffix(".calls.parquet"))
    from pipeline.core.run.rounds import RoundRecord

    ledger = [RoundRecord.from_json(r) for r in records]
    done = finished_games(adaptive.SPEC, work / "results/xent", ledger)
    costs = finished_costs(adaptive.SPEC, work / "results/xent", done)
    assert [costs[g.id] for g in first + second + third] == [2.0, 2.0, 1.0]


def test_the_plan_prices_the_next_table_and_not_a_play_made_already(work: Path) -> None:
    roster = [*BOTS, {"name": "gpt-4o", "model": "openai/gpt-4o"}]
    write_params(work, {**adaptive_params(max_rounds=5), "players": ["gpt-4o", "random-bot"]}, roster)
    models = models_params(roster)
    ahead = outlook(BENCHMARK, models, root=work)
    assert ahead is not None and ahead.rounds == 0 and ahead.priced_games == 1
    assert ahead.cost_per_game is not None and ahead.cost_per_game > 0  # gpt-4o's play of one map
    assert ahead.further_mean > 0 and "adaptive xent" in ahead.line()
    advance(BENCHMARK, work)
    (table,) = read_rounds(work / "results/xent/rounds")[0].games
    gpt = adaptive.parts(table)[table.seats.index("gpt-4o")]
    pending = outlook(BENCHMARK, models, root=work)
    assert pending is not None and pending.to_play == 1 and pending.cost_per_game == ahead.cost_per_game
    (work / "results/xent/play" / f"{gpt}.json").parent.mkdir(parents=True)
    (work / "results/xent/play" / f"{gpt}.json").write_text("{}")  # gpt-4o's play made, random-bot's not
    assert outlook(BENCHMARK, models, root=work).cost_per_game == 0.0  # type: ignore[union-attr]
