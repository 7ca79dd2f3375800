"""The Elimination Game's adaptive schedule without Snakemake: graded bots of known strength, a
round's tables as games (content ids, seeded seats, replicates), the round files as the schedule,
the params' checks, the events the ledger reads and the opponent-corrected rates."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.artifacts import ParamsError, content_id, seed_from, write_json_atomic
from pipeline.core.models import Gateway, MoveRequest, make_players
from pipeline.core.rating.events import FreeForAll, RatingParams
from pipeline.core.run.rounds import AdaptiveSetup, RoundRecord
from pipeline.elimination import adaptive
from pipeline.elimination.bots import _heuristic_policy, heuristic_bot
from pipeline.elimination.config import EliminationParams
from pipeline.elimination.engine import EliminationGame, GameSpec, run_game
from pipeline.elimination.metrics import opponent_rate_metrics
from pipeline.elimination.schedule import build_schedule, game_content, seated_games, table_seating
from tests.conftest import models_params

SKILLS = [round(k / 7, 3) for k in range(8)]
GRADED = [{"name": f"skill-{k}", "bot": "heuristic", "bot_options": {"skill": p}} for k, p in enumerate(SKILLS)]
NAMES = [b["name"] for b in GRADED]


def adaptive_params(players: list[str], **settings: Any) -> EliminationParams:
    return EliminationParams.model_validate(
        {"schedule": {"players": players, "adaptive": {"enabled": True, **settings}}, "history_rounds": 0}
    )


def test_skill_grades_the_heuristic_bot_and_is_checked() -> None:
    assert heuristic_bot({}) is _heuristic_policy  # no option: the plain heuristic bot, move for move
    with pytest.raises(ValueError, match="skill must be a number from 0 to 1"):
        heuristic_bot({"skill": 1.5})
    with pytest.raises(ValueError, match="skill"):
        heuristic_bot({"skill": "high"})
    request = MoveRequest(
        messages=(), key="r1/statement/P1", kind="statement", state={"seat": "P1", "round": 1, "active": ["P1", "P2"]}
    )
    moves = {p: [heuristic_bot({"skill": p})(request, random.Random(k)) for k in range(200)] for p in (0.0, 0.5, 1.0)}
    assert moves[0.5] == [heuristic_bot({"skill": 0.5})(request, random.Random(k)) for k in range(200)]  # seeded
    heuristic_share = {p: sum("P1 here" in m for m in found) / 200 for p, found in moves.items()}
    assert heuristic_share[0.0] == 0.0 and heuristic_share[1.0] == 1.0 and 0.35 < heuristic_share[0.5] < 0.65


def test_a_field_of_graded_bots_has_the_order_of_their_skill() -> None:
    """40 seeded 8-seat games: the mean finishing place follows the skill (rank correlation), and
    the extremes are far apart (measured over 300 games: 0.80 of the way down for skill 0, 0.19 for 1)."""
    models = models_params(GRADED)
    place: dict[str, list[float]] = {name: [] for name in NAMES}
    for g in range(40):
        seating = list(NAMES)
        random.Random(g).shuffle(seating)
        spec = GameSpec(f"{g:016x}", tuple(seating))
        gateway = Gateway(models, job=f"test/{g}", root="/tmp")
        players = make_players(models, gateway, seed_from("elimination", g), names=seating, game="elimination")
        game = EliminationGame(spec, players)
        asyncio.run(game.play())
        seat_of = {pid: seat for seat, pid in game.pid.items()}
        for pid, rank in game.final_ranks().items():
            place[game.name_of[seat_of[pid]]].append((rank - 1) / 7)
    means = [sum(place[name]) / len(place[name]) for name in NAMES]
    order = sorted(range(8), key=lambda k: means[k])  # best (lowest place) first
    spearman = 1 - 6 * sum((rank - (7 - k)) ** 2 for rank, k in enumerate(order)) / (8 * 63)
    assert spearman >= 0.85, (spearman, means)
    assert means[0] - means[-1] > 0.4


def test_a_round_s_tables_become_content_id_games() -> None:
    models = models_params(GRADED)
    params = adaptive_params(NAMES, seed=3)
    table = ("skill-1", "skill-5", "skill-3")
    assert table_seating(table, 3, 2) == table_seating(tuple(reversed(table)), 3, 2)  # content, not order
    seatings = {table_seating(NAMES, 3, r) for r in range(1, 9)}
    assert len(seatings) > 1  # the seats are shuffled, round by round
    first = seated_games([NAMES], [], params, models, 3, 1)
    again = seated_games([NAMES], first, params, models, 3, 1)  # the same seating chosen again
    assert first[0].fields == {"replicate": 0} and again[0].fields == {"replicate": 1}
    assert first[0].id == content_id(game_content(first[0].seats, 0, params, models))
    assert first[0].id != again[0].id and first[0].seats == again[0].seats


def test_the_schedule_is_the_round_files(tmp_path: Path) -> None:
    models = models_params(GRADED)
    params = adaptive_params(NAMES)
    rounds = tmp_path / "rounds"
    assert build_schedule(params, models, rounds=rounds) == []  # no round yet: nothing scheduled
    games = seated_games([NAMES], [], params, models, 0, 1)
    setup = AdaptiveSetup(params.schedule.adaptive, tuple(NAMES), 8, params.rating.rating_params())
    record = RoundRecord(
        1,
        "elimination",
        setup.digest,
        {},
        tuple(NAMES),
        {},
        (),
        0,
        0,
        0.0,
        {},
        tuple(NAMES),
        None,
        (tuple(NAMES),),
        tuple(games),
    )
    write_json_atomic(rounds / "round-001.json", record.to_json())
    scheduled = build_schedule(params, models, rounds=rounds)
    assert [(g.game_id, g.seats, g.lineup) for g in scheduled] == [(games[0].id, games[0].seats, 1)]
    preview = seated_games([NAMES], games, params, models, 0, 2)
    assert [g.game_id for g in build_schedule(params, models, rounds=rounds, preview=preview)][-1] == preview[0].id
    changed = models_params([{**GRADED[0], "bot_options": {"skill": 0.5}}, *GRADED[1:]])
    with pytest.raises(ParamsError, match="round-001.json: game .* is now"):
        build_schedule(params, changed, rounds=rounds)


def test_the_params_say_when_the_pool_cannot_seat_a_table() -> None:
    with pytest.raises(ParamsError) as found:
        adaptive_params(NAMES[:5]).check_roster(models_params(GRADED), "params/elimination.yaml")
    message = str(found.value)
    assert "params/elimination.yaml: schedule.adaptive.enabled is true" in message
    assert "list at least 8 players" in message
    default = EliminationParams()
    assert default.schedule.adaptive.enabled is False  # the fixed schedule unless asked


def test_the_ledger_reads_a_finished_game_as_its_final_ranks(tmp_path: Path) -> None:
    models = models_params(GRADED)
    params = adaptive_params(NAMES)
    game = seated_games([NAMES], [], params, models, 0, 1)[0]
    output = run_game(GameSpec(game.id, game.seats), models, tmp_path / "games" / game.id, root=tmp_path)
    final = next(r for r in output.records if r["type"] == "final_results")
    assert adaptive.event(tmp_path, replace(game, id="0000000000000000")) is None  # an unplayed game: nothing
    event = adaptive.event(tmp_path, game)
    assert isinstance(event, FreeForAll) and sorted(event.ranks.values()) == list(range(1, 9))
    winner = final["extra"]["seats"][final["extra"]["winner_seat"]]
    assert event.ranks[winner] == 1


def test_opponent_rates_are_written_beside_the_naive_ones() -> None:
    # b meets a three times and c twice: its naive rate weights a more than c, the uniform one does not
    events = [
        FreeForAll({"a": 1, "b": 2, "c": 3}),
        FreeForAll({"a": 1, "b": 2}),
        FreeForAll({"a": 1, "b": 2}),
        FreeForAll({"b": 1, "c": 2}),
    ]
    board = pl.DataFrame({"model": ["a", "b", "c"], "mu": [30.0, 25.0, 20.0], "sigma": [2.0, 2.0, 2.0]})
    rates = opponent_rate_metrics(events, board, RatingParams())
    assert rates["a"]["opponent_win_rate"] == 1.0 and rates["c"]["opponent_win_rate"] == 0.0
    assert rates["b"]["opponent_win_rate"] == pytest.approx(2 / 5)
    assert rates["b"]["opponent_win_rate_uniform"] == pytest.approx((0.0 + 1.0) / 2)
    assert rates["a"]["opponent_win_rate_imputed"] == 0


def test_the_declaration_reads_its_params(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "elimination.yaml").write_text(
        yaml.safe_dump({"schedule": {"players": NAMES, "adaptive": {"enabled": True, "max_games": 9}}})
    )
    setup = adaptive.setup(tmp_path / "elimination.yaml", tmp_path / "models.yaml")
    assert setup.enabled and setup.pool == tuple(NAMES) and setup.seats == 8 and setup.settings.max_games == 9
    assert setup.rating.mu == 4.0  # the benchmark's own prior
