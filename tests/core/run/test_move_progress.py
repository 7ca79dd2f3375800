"""A long game shows its progress: moves done of moves planned and the time left, on stderr only.

The reporter (pipeline.core.artifacts.progress) is opened by every benchmark's `play` verb, fed by the
player interface (every move answered) and by each game's structure (the moves it plans as it
starts). Its lines come at most every PIPELINE_PROGRESS_EVERY_S seconds, a short job says nothing,
and nothing it counts reaches a table or record.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.progress import (
    MOVES_EVERY_ENV,
    MoveProgress,
    count_move,
    expect_moves,
    not_counting_moves,
    reporting_moves,
)
from pipeline.core.models import Gateway, MoveRequest, make_player
from pipeline.core.models import players as players_module
from tests.conftest import REPO, models_params

#: a line of the reporter with a plan: moves done/planned, the share, the time so far and left
LINE = re.compile(r"moves (\d+)/(\d+) \(\d+%\), \d+m\d\ds elapsed, (~\d+m\d\ds left|past the planned moves)")
SLOW_BOT = "slow-bot"
ROSTER = [
    {"name": SLOW_BOT, "bot": "sleepy"},
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_says_moves_done_of_planned_and_the_time_left_at_the_interval() -> None:
    clock, said = Clock(), []
    progress = MoveProgress(said.append, every_s=30, clock=clock)
    progress.expect(100)
    progress.expect(20)  # a second game of the shard starts
    for _ in range(29):  # one move a second: no line before 30 s
        clock.now += 1
        progress.moved()
    assert said == []
    clock.now += 1
    progress.moved()
    assert said == ["moves 30/120 (25%), 0m30s elapsed, ~1m30s left"]
    for _ in range(29):
        clock.now += 1
        progress.moved()
    assert len(said) == 1  # at most one line per interval, however many moves
    clock.now += 1
    progress.moved()
    assert said[-1] == "moves 60/120 (50%), 1m00s elapsed, ~1m00s left"
    progress.done = 130  # re-asks and ties: more moves than the structure counts
    assert progress.line() == "moves 130/120 (108%), 1m00s elapsed, past the planned moves: nearly done"
    progress.close()
    assert said[-1] == "moves 130 (120 planned) played in 1m00s"


def test_a_job_shorter_than_the_interval_says_nothing() -> None:
    said: list[str] = []
    with reporting_moves(said.append, every_s=30) as progress:
        expect_moves(50)
        for _ in range(50):
            count_move()
    assert (progress.done, progress.planned) == (50, 50) and said == []  # not even a last line
    count_move()  # outside the block: nobody counts
    assert progress.done == 50


def test_a_whole_game_known_ahead_keeps_its_total_and_a_dry_pass_counts_nothing() -> None:
    with reporting_moves(lambda _line: None, planned=10, every_s=30) as progress:
        expect_moves(4)  # a job inside the game declares its own moves: the game's total holds
        with not_counting_moves():  # the batch API's probe pass of the same job code
            expect_moves(4)
            count_move()
        count_move()
    assert (progress.done, progress.planned) == (1, 10)
    without_plan = MoveProgress(lambda _line: None, every_s=30)
    without_plan.moved()
    assert re.fullmatch(r"moves 1, 0m00s elapsed", without_plan.line())


def test_the_interval_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MOVES_EVERY_ENV, "2.5")
    assert MoveProgress().every_s == 2.5
    monkeypatch.setenv(MOVES_EVERY_ENV, "soon")
    assert MoveProgress().every_s == 30.0
    monkeypatch.delenv(MOVES_EVERY_ENV)
    assert MoveProgress().every_s == 30.0


def test_model_and_bot_moves_count_through_the_player_interface(fake_provider: Any) -> None:
    models = models_params([{"name": "chat", "model": "fake/chat"}, {"name": "random-bot", "bot": "random"}])
    gateway = Gateway(models, job="progress-test", cache_dir=None)
    model = make_player(models.entry("chat"), gateway, 1)
    bot = make_player(models.entry("random-bot"), gateway, 1)
    request = MoveRequest(messages=[{"role": "user", "content": "hi"}], key="k", choices=("a", "b"))

    async def moves() -> None:
        await model.act(request)
        await bot.act(request)
        await bot.act(MoveRequest(messages=request.messages, key="k2", choices=("a", "b")))

    with reporting_moves(lambda _line: None, every_s=30) as progress:
        asyncio.run(moves())  # the loop's tasks see the reporter of the block
    assert progress.done == 3


# -- the games of each benchmark ---------------------------------------------------------------
@pytest.fixture
def sleepy_bot() -> Iterator[None]:
    """A random bot that takes 8 ms a move: a game of it lasts long enough for a few progress lines."""

    def factory(options: Mapping[str, Any]) -> Any:
        random_policy = players_module.random_bot(options)

        def policy(request: MoveRequest, rng: random.Random) -> str:
            time.sleep(0.008)
            return str(random_policy(request, rng))

        return policy

    players_module.register_bot("sleepy")(factory)
    try:
        yield
    finally:
        del players_module._BOTS[(None, "sleepy")]


def _write(tmp_path: Path, name: str, data: dict[str, Any]) -> Path:
    path = tmp_path / "params" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _roster(tmp_path: Path) -> Path:
    return _write(tmp_path, "models.yaml", {"roster": ROSTER, "gateway": {"cache_dir": str(tmp_path / "cache")}})


def _play(benchmark: str, ids: list[str], params: Path, models: Path, out: Path, *extra: str) -> int:
    """`python -m pipeline BENCHMARK play IDS`, in this process (its stderr is the test's)."""
    from pipeline.cli import main

    return main([benchmark, "play", *ids, "--params", str(params), "--models", str(models), "--out", str(out), *extra])


def _progress_lines(err: str) -> list[tuple[int, int]]:
    return [(int(m.group(1)), int(m.group(2))) for m in LINE.finditer(err)]


def _without_clock(value: Any) -> Any:
    """A record without what the clock decides (timestamps, latencies): the rest is the game's."""
    if isinstance(value, dict):
        return {k: _without_clock(v) for k, v in value.items() if k not in ("timestamp", "latency_s")}
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


def test_an_elimination_game_shows_moves_and_time_left_on_stderr_and_nowhere_else(
    tmp_path: Path, sleepy_bot: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.core.models import load_models
    from pipeline.elimination.config import load_elimination_params
    from pipeline.elimination.engine import game_spec, planned_moves
    from pipeline.elimination.schedule import build_schedule

    monkeypatch.chdir(tmp_path)
    models = _roster(tmp_path)
    lineup = [SLOW_BOT, "heuristic-bot", SLOW_BOT, "random-bot", SLOW_BOT, "heuristic-bot", SLOW_BOT, "random-bot"]
    params = _write(
        tmp_path,
        "elimination.yaml",
        {"schedule": {"lineups": [lineup], "rotations": 1, "max_seats_per_player": 4}, "history_rounds": 1},
    )
    loaded = load_elimination_params(params)
    (game,) = build_schedule(loaded, load_models(models), str(params))
    planned = planned_moves(game_spec(loaded, game))
    assert planned == 197  # 8 seats: 6 rounds of talk and votes, 2 pleas, a jury of 6

    monkeypatch.setenv(MOVES_EVERY_ENV, "0.1")
    assert _play("elimination", [game.game_id], params, models, tmp_path / "shown") == 0
    err = capsys.readouterr().err
    lines = _progress_lines(err)
    assert len(lines) >= 3, err[-2000:]  # about 0.8 s of moves: 8 ms for half the seats
    assert all(p == planned for _, p in lines) and [d for d, _ in lines] == sorted(d for d, _ in lines)
    assert re.search(r"~\d+m\d\ds left", err)  # the time left
    assert re.search(rf"moves \d+ \({planned} planned\) played in \d+m\d\ds", err)  # and the last line
    assert len(lines) < planned // 2  # at the interval (0.1 s), not a line per move

    monkeypatch.setenv(MOVES_EVERY_ENV, "3600")  # the same game, no progress line
    assert _play("elimination", [game.game_id], params, models, tmp_path / "quiet") == 0
    assert not _progress_lines(capsys.readouterr().err)
    shown, quiet = (tmp_path / folder / game.game_id for folder in ("shown", "quiet"))
    (log,), (quiet_log,) = shown.glob("game_*.jsonl"), quiet.glob("game_*.jsonl")  # named with the time
    assert {p.name for p in shown.iterdir()} == {log.name, "calls.parquet"}
    records = [_without_clock(json.loads(line)) for line in log.read_text().splitlines()]
    assert records == [_without_clock(json.loads(line)) for line in quiet_log.read_text().splitlines()]
    calls = [pl.read_parquet(folder / "calls.parquet").drop("latency_s") for folder in (shown, quiet)]
    assert calls[0].equals(calls[1])
    for path in shown.iterdir():
        assert b"moves " not in path.read_bytes() and b"elapsed" not in path.read_bytes(), path


def test_a_who_is_spy_shard_counts_the_plans_of_all_its_games_from_the_start(
    tmp_path: Path, sleepy_bot: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.core.models import load_models
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.engine import planned_moves
    from pipeline.whoisspy.schedule import build_schedule

    monkeypatch.chdir(tmp_path)
    models = _roster(tmp_path)
    params = _write(
        tmp_path,
        "whoisspy.yaml",
        {"players": [SLOW_BOT], "fill": [SLOW_BOT, "random-bot"], "games_per_role": 1, "variants": ["baseline"]},
    )
    games = build_schedule(load_whoisspy(params), load_models(models), source=str(params))
    assert len(games) == 2 and {planned_moves(g) for g in games} == {36}  # 6 seats x 3 rounds x (speech, vote)
    monkeypatch.setenv(MOVES_EVERY_ENV, "0.02")
    out = tmp_path / "games"
    marker = str(tmp_path / "shard.json")
    assert _play("whoisspy", [g.game_id for g in games], params, models, out, "--marker", marker) == 0
    err = capsys.readouterr().err
    # the shard's total from the start, though the bots' turns never yield the loop to the second game
    assert "playing 2, up to 64 at once; 72 moves planned" in err
    lines = _progress_lines(err)
    assert lines and {p for _, p in lines} == {72}, err[-2000:]
    assert "played 2 game(s)" in err
    for g in games:
        assert b"moves " not in (out / f"{g.game_id}.json").read_bytes()


def test_a_xent_job_plans_the_asks_its_programs_make_in_every_round() -> None:
    from pipeline.xent.games import GAMES_DIR, load_game
    from pipeline.xent.play import PlaySettings, play_map, seat_players
    from pipeline.xent.runtime import asks_per_round
    from pipeline.xent.testing import WordJudge

    models = models_params(ROSTER)
    gateway = Gateway(models, job="xent-progress", cache_dir=None)
    player = make_player(models.entry("heuristic-bot"), gateway, 1, game="xent")
    opponent = make_player(models.entry("heuristic-bot"), gateway, 2, game="xent")

    async def stories(_index: int, size: int) -> str:
        return " ".join(["sun"] * size)

    games = sorted(p.stem for p in GAMES_DIR.glob("*.xgl"))
    assert {"condense", "derail", "interception"} <= set(games)
    asks = {}
    for name in games:
        game = load_game(name)
        seats = seat_players(game, player, opponent)
        with reporting_moves(lambda _line: None, every_s=3600) as progress:
            asyncio.run(play_map(game, game.program, "m1", seats, WordJudge(), 2, PlaySettings(), stories))
        asks[name] = asks_per_round(game.program)
        assert progress.done == 2 * asks[name], name  # exact: the heuristic bot's moves pass every ensure
    assert asks["derail"] == 3 and asks["interception"] == 2  # a replay loop, two roles


def test_skate_plans_every_try_and_the_answers_cap(tmp_path: Path) -> None:
    from pipeline.core.models import load_models
    from pipeline.skate.config import load_skate
    from pipeline.skate.engine import moves_per_question
    from pipeline.skate.play import planned_moves
    from pipeline.skate.schedule import build_schedule

    params = load_skate(REPO / "params" / "skate.yaml").fixed()
    schedule = build_schedule(params, load_models(REPO / "params" / "models.yaml"))
    assert moves_per_question(params, "exact") == params.answering.exact_option_sets
    assert moves_per_question(params, "sampled") == params.answering.max_samples
    # the demo: 2 setters x 2 rounds x 2 tries, then 7 answerers on up to 2 questions a round
    per_question = [moves_per_question(params, job.mode) for job in schedule.answers.values()]
    assert planned_moves(params, schedule) == 2 * 2 * 2 + 2 * sum(per_question)
