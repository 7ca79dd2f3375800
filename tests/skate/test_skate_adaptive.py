"""SKATE's adaptive schedule without Snakemake: a round's tables as a new round of the game (content
ids, stable and seeded), the round files as the schedule, the answerers the ledger chooses (a newcomer
first), the pairwise events per question it reads, the parts it pays for, the params' checks, the plan,
and the opponent-corrected rates.

The answer jobs are not run: a table's jobs are "played" by writing the p(correct) and calls tables
they would write, from known skills (an answerer's p(correct) is its skill on every question)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts import ParamsError, load_params, write_table
from pipeline.core.models import ModelsParams
from pipeline.core.rating.events import Pairwise
from pipeline.core.run.rounds import RoundGame, advance, game_parts, read_rounds
from pipeline.skate import adaptive
from pipeline.skate.benchmark import BENCHMARK
from pipeline.skate.config import SkateParams
from pipeline.skate.metrics import opponent_rate_metrics
from pipeline.skate.prompts import setter_messages
from pipeline.skate.schedule import (
    adaptive_schedule,
    answer_paths,
    build_schedule,
    game_schedule,
    generate_path,
    seated_games,
)
from pipeline.skate.schemas import PCorrectSchema
from tests.conftest import models_params

REPO = Path(__file__).resolve().parents[2]
SKILL = {"setter-bot": 0.9, "oracle-bot": 1.0, "good-bot": 0.6, "poor-bot": 0.2, "new-bot": 0.8}
BOTS: list[dict[str, Any]] = [
    {"name": "setter-bot", "bot": "setter"},
    {"name": "oracle-bot", "bot": "oracle"},
    {"name": "good-bot", "bot": "noisy", "bot_options": {"accuracy": 0.6}},
    {"name": "poor-bot", "bot": "noisy", "bot_options": {"accuracy": 0.2}},
    {"name": "new-bot", "bot": "noisy", "bot_options": {"accuracy": 0.8}},
]
ANSWER_ONLY = ["oracle-bot", "good-bot", "poor-bot"]


def skate(answer_only: list[str] = ANSWER_ONLY, **adaptive_settings: Any) -> dict[str, Any]:
    return {
        "players": ["setter-bot"],
        "answer_only": answer_only,
        "attempts": 1,
        "strategy": "historical_performance",
        "adaptive": {"enabled": True, "seats": 2, "tables_per_round": 1, **adaptive_settings},
    }


def params_of(**overrides: Any) -> SkateParams:
    return SkateParams.model_validate(skate(**overrides))


def models() -> ModelsParams:
    return models_params(BOTS)


def write_project(root: Path, data: dict[str, Any]) -> None:
    (root / "params").mkdir(parents=True, exist_ok=True)
    (root / "params" / "skate.yaml").write_text(yaml.safe_dump(data))
    (root / "params" / "models.yaml").write_text(yaml.safe_dump({"roster": BOTS}))


def play(root: Path, cost: float = 0.0) -> list[str]:
    """Write the files of every unplayed part of the rounds, as their jobs would: one question per
    setter and round, each answerer's p(correct) its skill; every calls table costs `cost`."""
    out = root / "results" / "skate"
    played = []
    for record in read_rounds(out / "rounds"):
        for game in record.games:
            for job in game.fields["generate_jobs"]:
                calls = generate_path(out, job).with_suffix(".calls.parquet")
                if not calls.exists():
                    calls.parent.mkdir(parents=True, exist_ok=True)
                    pl.DataFrame({"cost_usd": [cost]}).write_parquet(calls)
            for answerer, job in zip(game.seats, game.fields["answer_jobs"]):
                paths = answer_paths(out, job)
                if paths["pcorrect"].exists():
                    continue
                rows = [
                    {
                        "question_id": f"q{game.fields['round']}-{setter}",
                        "round": game.fields["round"],
                        "setter": setter,
                        "answerer": answerer,
                        "mode": "exact",
                        "p_correct": SKILL[answerer],
                        "std_error": 0.0,
                        "samples": 4,
                        "answer_only": answerer != "setter-bot",
                        "outside_mass": 0.0,
                        "unparsed_share": 0.0,
                    }
                    for setter in game.fields["setters"]
                ]
                paths["pcorrect"].parent.mkdir(parents=True, exist_ok=True)
                pl.DataFrame({"cost_usd": [cost]}).write_parquet(paths["calls"])
                write_table(paths["pcorrect"], pl.DataFrame(rows), PCorrectSchema)
                played.append(job)
    return played


def run_to_stop(root: Path, cost: float = 0.0) -> list[str]:
    played: list[str] = []
    for _ in range(50):
        step = advance(BENCHMARK, root)
        assert step is not None
        if step.state == "stopped":
            return played
        played += play(root, cost)
    raise AssertionError("the rounds never stopped")


def test_a_round_is_a_new_round_of_the_game_with_content_ids() -> None:
    params, roster = params_of(), models()
    first = seated_games([("oracle-bot", "poor-bot")], [], params, roster)
    assert first == seated_games([("oracle-bot", "poor-bot")], [], params, roster)  # deterministic
    (game,) = first
    assert game.seats == ("oracle-bot", "poor-bot") and game.fields["round"] == 1
    assert game.fields["setters"] == ["setter-bot"] and len(game.fields["generate_jobs"]) == 1
    # the seat order decides nothing: the same answer jobs, the same table
    (swapped,) = seated_games([("poor-bot", "oracle-bot")], [], params, roster)
    assert swapped.id == game.id and sorted(swapped.fields["answer_jobs"]) == sorted(game.fields["answer_jobs"])
    second = seated_games([("good-bot", "oracle-bot"), ("setter-bot", "poor-bot")], first, params, roster)
    assert [g.fields["round"] for g in second] == [2, 2]
    assert second[0].fields["generate_jobs"] == second[1].fields["generate_jobs"]  # one round, one setting
    # the schedule has exactly the chosen rounds' jobs: the round's setters, the tables' answerers
    schedule = adaptive_schedule(params, roster, "/nonexistent", preview=[*first, *second])
    assert sorted(schedule.answers) == [
        (1, "oracle-bot"),
        (1, "poor-bot"),
        (2, "good-bot"),
        (2, "oracle-bot"),
        (2, "poor-bot"),
        (2, "setter-bot"),
    ]
    # historical_performance: a setter reads its own answers of the rounds it answered (none in round 1)
    assert schedule.generate[(2, "setter-bot")].answers == ()
    third = seated_games([("setter-bot", "good-bot")], [*first, *second], params, roster)
    grown = adaptive_schedule(params, roster, "/nonexistent", preview=[*first, *second, *third])
    assert grown.generate[(3, "setter-bot")].answers == (schedule.answers[(2, "setter-bot")].job_id,)
    assert grown.generate[(3, "setter-bot")].previous == schedule.generate[(2, "setter-bot")].job_id
    # the adaptive game's length is open: its prompt names no number of rounds
    job = grown.generate[(3, "setter-bot")]
    assert job.of_rounds is None
    assert setter_messages(round_number=3, rounds=job.of_rounds, context="", failures="")[1]["content"].startswith(
        "Round 3. Write"
    )
    # the fixed game's jobs are another game's: its prompt says "round n of N"
    fixed = build_schedule(params.fixed(), roster)
    assert fixed.generate[(1, "setter-bot")].of_rounds == params.rounds
    assert fixed.generate[(1, "setter-bot")].job_id != schedule.generate[(1, "setter-bot")].job_id


def test_the_fixed_game_keeps_the_committed_job_ids() -> None:
    """The repository's params (adaptive off) schedule the very jobs whose files are committed."""
    from pipeline.core.models import load_models
    from pipeline.skate.config import load_skate

    results = REPO / "results" / "skate"
    if not (results / "generate").is_dir():
        pytest.skip("no committed skate results in this checkout")
    params = load_skate(REPO / "params" / "skate.yaml")
    assert not params.adaptive.enabled
    schedule = game_schedule(params, load_models(REPO / "params" / "models.yaml"))
    ids = [j.job_id for j in [*schedule.generate.values(), *schedule.rounds.values(), *schedule.answers.values()]]
    on_disk = {p.name.split(".")[0] for kind in ("generate", "rounds", "answers") for p in (results / kind).iterdir()}
    assert ids and set(ids) <= on_disk


def test_the_ledger_chooses_answerers_places_a_newcomer_first_and_reads_pairwise_events(tmp_path: Path) -> None:
    write_project(tmp_path, skate(max_rounds=4, seed=3))
    played = run_to_stop(tmp_path)
    ledger = read_rounds(tmp_path / "results" / "skate" / "rounds")
    assert [r.stop for r in ledger] == [None] * 4 + ["max_rounds"]
    assert all(len(r.tables) == 1 and len(r.tables[0]) == 2 for r in ledger[:4])
    assert len(played) == 8  # two answer jobs a table, nothing played twice
    # every answerer is placed: the first two rounds seat the four models once each
    assert sorted(n for r in ledger[:2] for n in r.tables[0]) == sorted(["setter-bot", *ANSWER_ONLY])
    last = ledger[-1]
    assert set(last.read) == {g.id for r in ledger for g in r.games}
    mu = {name: s.mu for name, s in last.standings.items()}
    assert mu["oracle-bot"] > mu["poor-bot"] and mu["setter-bot"] > mu["poor-bot"]
    # a table's events: one per question, the pair in name order, the better p(correct) winning
    game = ledger[0].games[0]
    a, b = sorted(game.seats)
    assert adaptive.table_events(tmp_path / "results" / "skate", game) == (
        Pairwise(a, b, "a" if SKILL[a] > SKILL[b] else "b"),
    )
    assert game_parts(adaptive.SPEC, game) == (
        f"generate/{game.fields['generate_jobs'][0]}",
        *(f"answers/{job}" for job in game.fields["answer_jobs"]),
    )
    # a rerun from the same results writes the same files and plays nothing
    files = {p.name: p.read_bytes() for p in (tmp_path / "results" / "skate" / "rounds").glob("round-*.json")}
    for p in (tmp_path / "results" / "skate" / "rounds").glob("round-*.json"):
        p.unlink()
    assert run_to_stop(tmp_path) == []
    assert {p.name: p.read_bytes() for p in (tmp_path / "results" / "skate" / "rounds").glob("round-*.json")} == files
    # a newcomer: the next round seats it first, and only the new round's jobs are played
    write_project(tmp_path, skate([*ANSWER_ONLY, "new-bot"], max_rounds=4, seed=3))
    step = advance(BENCHMARK, tmp_path)
    assert step is not None and step.state == "playing"
    placed = read_rounds(tmp_path / "results" / "skate" / "rounds")[-1]
    assert placed.placement == ("new-bot",) and "new-bot" in placed.tables[0]
    assert len(play(tmp_path)) == 2 and placed.games[0].fields["round"] == 5


def test_the_dollar_budget_counts_the_setting_once_and_every_answer(tmp_path: Path) -> None:
    write_project(tmp_path, skate(max_cost_usd=0.25, tables_per_round=2))
    run_to_stop(tmp_path, cost=0.05)
    ledger = read_rounds(tmp_path / "results" / "skate" / "rounds")
    # a round of two tables: one setter's job and four answer jobs, 0.25 dollars
    assert ledger[1].spent_usd == pytest.approx(0.25) and ledger[-1].stop == "max_cost_usd"
    assert len(ledger) == 2


def test_the_schedule_is_the_round_files_and_a_changed_game_stops_with_the_fix(tmp_path: Path) -> None:
    write_project(tmp_path, skate(max_rounds=2))
    run_to_stop(tmp_path)
    rounds = tmp_path / "results" / "skate" / "rounds"
    ledger = read_rounds(rounds)
    schedule = adaptive_schedule(params_of(max_rounds=2), models(), rounds)
    assert {j.job_id for j in schedule.answers.values()} == {
        job for r in ledger for g in r.games for job in g.fields["answer_jobs"]
    }
    changed = SkateParams.model_validate({**skate(max_rounds=2), "attempts": 3})
    with pytest.raises(ParamsError, match=r"round-001.json: table .* is now .*restore the params"):
        adaptive_schedule(changed, models(), rounds)
    assert build_schedule(params_of(), models()).answers  # the fixed game is still there to play


def test_bad_params_name_the_file_the_field_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "skate.yaml"
    path.write_text(yaml.safe_dump({**skate(), "adaptive": {"seats": 1, "max_games": 0}}))
    with pytest.raises(ParamsError) as found:
        load_params(SkateParams, path)
    message = str(found.value)
    assert f"{path}: invalid params" in message
    assert "adaptive.seats" in message and "fix: set adaptive.seats to" in message
    assert "fix: set adaptive.max_games to" in message
    few = skate(answer_only=["oracle-bot"], seats=3)
    with pytest.raises(ParamsError, match=r"params/skate.yaml: adaptive.enabled is true .* list at least 3"):
        SkateParams.model_validate(few).check_roster(models())
    write_project(tmp_path, few)
    with pytest.raises(ParamsError, match="lower adaptive.seats"):
        adaptive.setup(tmp_path / "params" / "skate.yaml", tmp_path / "params" / "models.yaml")
    assert SkateParams.model_validate({"players": ["setter-bot"]}).adaptive.enabled is False  # fixed unless asked


def test_the_declaration_reads_its_params(tmp_path: Path) -> None:
    write_project(tmp_path, skate(max_games=9, seats=3))
    setup = adaptive.setup(tmp_path / "params" / "skate.yaml", tmp_path / "params" / "models.yaml")
    assert setup.enabled and setup.pool == ("setter-bot", *ANSWER_ONLY) and setup.seats == 3
    assert setup.settings.max_games == 9 and setup.events_per_game == 1
    assert setup.rating.draw_probability == pytest.approx(0.2)  # the ranking's TrueSkill settings


def test_the_plan_prices_the_next_round_before_it_is_written(tmp_path: Path) -> None:
    from pipeline.core.run.adaptive_plan import outlook

    write_project(tmp_path, skate(max_rounds=3))
    found = outlook(BENCHMARK, models(), root=tmp_path, simulations=4)
    assert found is not None and (found.rounds, found.games, found.to_play) == (0, 0, 0)
    assert found.priced_games == 1 and found.cost_per_game == 0.0  # bots: the round's parts cost nothing
    assert found.further_mean == found.further_high == 3  # three rounds of one table
    assert not (tmp_path / "results" / "skate" / "rounds").exists()  # the plan writes nothing


def test_the_plan_prices_a_tables_setting_and_its_answers(tmp_path: Path) -> None:
    from pipeline.core.run.adaptive_plan import outlook
    from pipeline.core.run.estimates import PlanContext
    from pipeline.core.run.plan import PlannedJob
    from pipeline.skate.estimators import ESTIMATORS

    api = {"name": "api-model", "model": "openai/gpt-4o-mini"}
    price = {"openai/gpt-4o-mini": {"input_usd_per_mtok": 150.0, "output_usd_per_mtok": 600.0}}
    data = {**skate(["oracle-bot"], max_rounds=3), "players": ["api-model"]}
    write_project(tmp_path, data)
    roster = models_params([*BOTS, api], gateway={"prices": price})
    (tmp_path / "params" / "models.yaml").write_text(yaml.safe_dump(roster.model_dump(mode="json")))
    found = outlook(BENCHMARK, roster, root=tmp_path, simulations=4)
    assert found is not None and found.cost_per_game is not None and found.cost_per_game > 0
    # the table's parts: the API setter's generate job (up to `attempts` calls) and both answer jobs
    (game,) = seated_games([("api-model", "oracle-bot")], [], SkateParams.model_validate(data), roster)
    context = PlanContext(tmp_path, roster, preview={"skate": (game,)})
    estimate = ESTIMATORS[adaptive.SPEC.play_rule]
    setting = estimate(PlannedJob("skate_answer", "adaptive round", {"part": adaptive.parts(game)[0]}), context)
    assert [(e.model, e.calls) for e in setting] == [("api-model", 1)]
    answers = [estimate(PlannedJob("skate_answer", "x", {"part": part}), context) for part in adaptive.parts(game)[1:]]
    assert sorted(e.model for found in answers for e in found) == ["api-model", "oracle-bot"]


def test_opponent_rates_of_the_pairwise_comparisons() -> None:
    rows = [
        ("q1", "a", 1.0),
        ("q1", "b", 0.5),
        ("q1", "c", 0.0),
        ("q2", "a", 0.52),  # within sigma_stop of b: a draw
        ("q2", "b", 0.5),
    ]
    pcorrect = pl.DataFrame(
        {
            "question_id": [r[0] for r in rows],
            "round": [1] * len(rows),
            "setter": ["a"] * len(rows),
            "answerer": [r[1] for r in rows],
            "p_correct": [r[2] for r in rows],
        }
    )
    ratings = pl.DataFrame(
        {"mode": ["relative"] * 4, "player": ["a", "b", "c", "d"], "mu": [30.0, 25.0, 20.0, 25.0], "sigma": [2.0] * 4}
    )
    found = opponent_rate_metrics(
        pcorrect,
        ratings,
        ["a", "b", "c", "d"],
        ["a"],
        mode="relative",
        sigma_stop=0.05,
        pass_threshold=0.55,
        params=params_of().ranking.rating_params(),
    )
    assert found["a"]["opponent_win_rate"] == pytest.approx(round(2.5 / 3, 4))  # b, c won; the q2 draw 1/2
    assert found["c"]["opponent_win_rate"] == 0.0 and found["d"]["opponent_win_rate"] is None
    assert found["a"]["opponent_win_rate_imputed"] == 1  # d never answered beside a: predicted
    assert 0.75 < found["a"]["opponent_win_rate_uniform"] < 1


def test_a_table_is_found_by_its_fields() -> None:
    game = RoundGame(
        "t", ("x", "y"), {"generate_jobs": ["g1", "g2"], "answer_jobs": ["a1", "a2"], "round": 1, "setters": []}
    )
    assert adaptive.parts(game) == ("generate/g1", "generate/g2", "answers/a1", "answers/a2")
