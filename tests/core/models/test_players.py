"""Models and bots behind one Player interface: games need no special case for either."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import BotPlayer, ModelPlayer, MoveRequest, make_players, register_bot
from tests.conftest import models_params

ROSTER = [{"name": "m1", "model": "fake/m"}, {"name": "rnd", "bot": "random"}]


def players(tmp_path: Path, job_seed: int = 5, roster=ROSTER, game=None):
    models = models_params(roster)
    gateway = Gateway(models, job="t", cache_dir=tmp_path / "cache")
    return gateway, make_players(models, gateway, job_seed, game=game)


def act(player, request: MoveRequest) -> str:
    return asyncio.run(player.act(request)).text


def test_roster_entries_become_model_and_bot_players(tmp_path: Path, fake_provider) -> None:
    gateway, table = players(tmp_path)
    assert isinstance(table["m1"], ModelPlayer) and isinstance(table["rnd"], BotPlayer)
    request = MoveRequest(messages=[{"role": "user", "content": "vote"}], key="r1/vote", choices=("P1", "P2", "P3"))
    fake_provider.default = "P2"
    assert act(table["m1"], request) == "P2"
    assert act(table["rnd"], request) in {"P1", "P2", "P3"}
    calls = gateway.calls_frame()
    assert calls["roster_name"].to_list() == ["m1", "rnd"]
    assert calls.filter(calls["roster_name"] == "rnd")["cost_usd"].to_list() == [0.0]
    # the bot never saw a prompt meant for models, and the model never saw the bot's state
    assert fake_provider.calls[0]["messages"] == [{"role": "user", "content": "vote"}]


def test_random_bot_is_uniform_and_seeded(tmp_path: Path) -> None:
    _, table = players(tmp_path)
    choices = tuple(f"P{i}" for i in range(1, 5))
    picks = [act(table["rnd"], MoveRequest(messages=[], key=f"k{i}", choices=choices)) for i in range(400)]
    counts = {c: picks.count(c) for c in choices}
    assert all(70 <= n <= 130 for n in counts.values()), counts
    _, again = players(tmp_path)
    assert picks[:50] == [act(again["rnd"], MoveRequest(messages=[], key=f"k{i}", choices=choices)) for i in range(50)]
    _, other_job = players(tmp_path, job_seed=6)
    assert picks[:50] != [
        act(other_job["rnd"], MoveRequest(messages=[], key=f"k{i}", choices=choices)) for i in range(50)
    ]


def test_random_bot_free_text_respects_word_limit(tmp_path: Path) -> None:
    _, table = players(tmp_path)
    text = act(table["rnd"], MoveRequest(messages=[], key="speech", max_words=3))
    assert 1 <= len(text.split()) <= 3


def test_model_player_seeds_differ_by_request_and_are_stable(tmp_path: Path, fake_provider) -> None:
    _, table = players(tmp_path)
    for key in ("a", "b", "a"):
        act(table["m1"], MoveRequest(messages=[{"role": "user", "content": "x"}], key=key))
    seeds = [c["optional_params"]["seed"] for c in fake_provider.calls]
    assert len(fake_provider.calls) == 2  # the repeated request came from the cache
    assert seeds[0] != seeds[1]


def test_game_scoped_heuristic_bot_and_unknown_bot_error(tmp_path: Path) -> None:
    @register_bot("heuristic", game="testgame")
    def heuristic(options):
        return lambda request, rng: request.state.get("favourite", "none")

    roster = [{"name": "h", "bot": "heuristic"}]
    _, table = players(tmp_path, roster=roster, game="testgame")
    assert act(table["h"], MoveRequest(messages=[], key="k", state={"favourite": "P3"})) == "P3"
    with pytest.raises(ValueError, match="roster entry 'h': unknown bot 'heuristic'.*known: agent, human, random"):
        players(tmp_path, roster=roster, game="othergame")
