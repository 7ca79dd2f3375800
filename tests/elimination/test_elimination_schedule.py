"""The schedule: balanced seats, content ids, stable when models are added, params checked."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from pipeline.core.artifacts.params import ParamsError
from pipeline.elimination.config import EliminationParams, load_elimination_params
from pipeline.elimination.schedule import build_schedule, schedule_rows
from tests.conftest import REPO, models_params

BOTS = [{"name": f"bot{i:02d}", "bot": "random" if i % 2 else "heuristic"} for i in range(12)]


def params(**schedule) -> EliminationParams:
    return EliminationParams.model_validate({"schedule": schedule})


def test_with_as_many_rotations_as_seats_every_player_sits_in_every_seat_equally_often() -> None:
    models = models_params(BOTS)
    names = [b["name"] for b in BOTS]
    games = build_schedule(params(players=names, lineups_per_player=2, rotations=8), models)
    seat_counts = Counter((row["player"], row["seat"]) for row in schedule_rows(games))
    for player in {row["player"] for row in schedule_rows(games)}:
        per_seat = {seat_counts[(player, f"P{s}")] for s in range(1, 9)}
        assert len(per_seat) == 1 and per_seat.pop() > 0, player
    assert all(len(set(g.seats)) == 8 for g in games)  # distinct players unless params allow more


def test_adding_a_model_adds_games_and_changes_none() -> None:
    names = [b["name"] for b in BOTS]
    before = build_schedule(params(players=names[:10], lineups_per_player=2), models_params(BOTS[:10]))
    after = build_schedule(params(players=names, lineups_per_player=2), models_params(BOTS))
    old, new = {g.game_id: g for g in before}, {g.game_id: g for g in after}
    assert set(old) < set(new)
    assert all(old[gid].seats == new[gid].seats for gid in old)
    assert all({"bot10", "bot11"} & set(new[gid].seats) for gid in set(new) - set(old))


def test_game_ids_are_content_ids_of_what_decides_the_game() -> None:
    models = models_params(BOTS)
    lineup = [b["name"] for b in BOTS[:8]]
    first = build_schedule(params(lineups=[lineup], rotations=2), models)
    again = build_schedule(params(lineups=[lineup], rotations=2), models)
    assert [g.game_id for g in first] == [g.game_id for g in again] and len(first) == 2
    assert first[1].seats == tuple(lineup[4:] + lineup[:4])
    longer = EliminationParams.model_validate(
        {"schedule": {"lineups": [lineup], "rotations": 2}, "words": {"public": 60}}
    )
    assert not {g.game_id for g in build_schedule(longer, models)} & {g.game_id for g in first}
    repeated = build_schedule(params(lineups=[lineup], rotations=2, repeats=3), models)
    assert len({g.game_id for g in repeated}) == 6


def test_one_player_in_several_seats_needs_params_to_allow_it() -> None:
    models = models_params(BOTS[:2])
    lineup = ["bot00", "bot01"] * 4
    with pytest.raises(ParamsError, match=r"schedule.lineups\[0\]: 'bot00' fills 4 seats.*max_seats_per_player"):
        build_schedule(params(lineups=[lineup]), models)
    assert len(build_schedule(params(lineups=[lineup], max_seats_per_player=4, rotations=1), models)) == 1


def test_bad_schedules_name_the_file_and_the_field() -> None:
    models = models_params(BOTS[:8])
    with pytest.raises(ParamsError, match=r"schedule.lineups\[0\]: 'nobody' is not in the roster"):
        build_schedule(params(lineups=[["nobody"] + [b["name"] for b in BOTS[:7]]]), models)
    with pytest.raises(ParamsError, match=r"has 3 names but seats is 8"):
        build_schedule(params(lineups=[["bot00", "bot01", "bot02"]]), models)
    with pytest.raises(ParamsError, match=r"at least seats=8"):
        build_schedule(params(players=["bot00", "bot01"], lineups_per_player=1), models)


def test_params_errors_say_what_is_expected(tmp_path: Path) -> None:
    path = tmp_path / "elimination.yaml"
    path.write_text(yaml.safe_dump({"words": {"private": [70, 50]}, "rating": {"passes": 0}}))
    with pytest.raises(ParamsError) as info:
        load_elimination_params(path)
    text = str(info.value)
    assert "words.private" in text and "exactly three" in text
    assert "rating.passes" in text and "seeded random game orders" in text


def test_the_demo_params_put_the_local_model_in_one_seat_and_bots_elsewhere() -> None:
    from pipeline.core.models.roster import load_models

    games = build_schedule(
        load_elimination_params(REPO / "params/elimination.yaml"), load_models(REPO / "params/models.yaml")
    )
    # the embedded model's game, one bot game, and 40 bot-only games of the graded bots (calibration)
    assert len(games) == 42
    assert [g.seats.count("smollm2-135m") for g in games] == [1] + [0] * 41
    assert {seat for g in games for seat in g.seats} == {
        "smollm2-135m",
        "heuristic-bot",
        "random-bot",
        "graded-90",
        "graded-50",
        "graded-10",
    }
