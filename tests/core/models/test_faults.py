"""Fault injection at the provider boundary (pipeline.core.models.faults through the gateway).

Transport faults (timeout, 429, 500) are retried and never reach a game; content faults (empty,
malformed, over-long) are what the model said: cached, recorded, and handled by the game's rules.
Bots never pass through the gateway and are never faulted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.params import ParamsError
from pipeline.core.artifacts.schemas import CallsSchema, read_table
from pipeline.core.models.errors import TransportError
from pipeline.core.models.faults import FAULT_KINDS, FaultSettings, draw_fault
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import MoveRequest, make_players
from pipeline.core.models.roster import load_models
from pipeline.whoisspy.config import ReplyParams, RulesParams
from pipeline.whoisspy.engine import run_game
from pipeline.whoisspy.schedule import make_spec
from tests.conftest import models_params

ROSTER = [{"name": "m1", "model": "fake/m1", "sampling": {"max_tokens": 8}}, {"name": "random-bot", "bot": "random"}]


def ask_many(gateway: Gateway, n: int) -> list[str]:
    entry = gateway.models.entry("m1")

    async def run() -> list[str]:
        replies = await asyncio.gather(
            *(gateway.complete(entry, [{"role": "user", "content": f"question {i}"}], seed=i) for i in range(n))
        )
        return [r.text for r in replies]

    return asyncio.run(run())


def test_fault_draws_are_deterministic_and_follow_the_rates() -> None:
    settings = FaultSettings(timeout=0.1, rate_limit=0.05, server=0.05, empty=0.1, malformed=0.1, overlong=0.1)
    draws = [draw_fault(settings, f"key-{i}", 1) for i in range(4000)]
    assert draws == [draw_fault(settings, f"key-{i}", 1) for i in range(4000)]
    for kind in FAULT_KINDS:
        assert abs(draws.count(kind) / 4000 - getattr(settings, kind)) < 0.025, kind
    assert abs(draws.count(None) / 4000 - 0.5) < 0.03
    # another attempt of the same request draws anew (a retry can succeed)
    assert [draw_fault(settings, f"key-{i}", 2) for i in range(200)] != draws[:200]
    reseeded = settings.model_copy(update={"seed": 1})
    assert [draw_fault(reseeded, f"key-{i}", 1) for i in range(200)] != draws[:200]


def test_transport_faults_are_retried_and_the_answers_equal_a_clean_run(tmp_path: Path, fake_provider) -> None:
    fake_provider.default = "the answer"
    clean = Gateway(models_params(ROSTER), job="clean", cache_dir=tmp_path / "clean")
    clean_replies = ask_many(clean, 60)
    sent_clean = len(fake_provider.calls)

    faults = {"timeout": 0.1, "rate_limit": 0.1, "server": 0.1}
    faulty = Gateway(models_params(ROSTER, gateway={"faults": faults}), job="faulty", cache_dir=tmp_path / "faulty")
    assert ask_many(faulty, 60) == clean_replies
    # an injected transport fault never reaches the provider: it sees each request exactly once
    assert len(fake_provider.calls) - sent_clean == sent_clean == 60

    calls = faulty.calls_frame()
    faulted = calls.filter(pl.col("fault").is_not_null())
    assert faulted.height > 0 and set(faulted["fault"]) <= {"timeout", "rate_limit", "server"}
    # classified exactly as a real provider error of that kind, and never a move (no tokens, no cost)
    assert (faulted["error_kind"] == faulted["fault"]).all()
    assert (faulted["tokens_out"] == 0).all() and (faulted["cost_usd"] == 0).all()
    answered = calls.filter(pl.col("error_kind").is_null())
    assert answered.height == 60 and answered["fault"].is_null().all()
    # about 30% of attempts faulted (deterministic for these keys)
    assert 0.15 < faulted.height / calls.height < 0.45
    faulty.write_calls(tmp_path / "calls.parquet")
    assert read_table(tmp_path / "calls.parquet", CallsSchema)["fault"].drop_nulls().len() == faulted.height


def test_every_attempt_faulted_gives_up_with_a_transport_error(tmp_path: Path, fake_provider) -> None:
    models = models_params(ROSTER, gateway={"retries": 2, "faults": {"server": 1.0}})
    gateway = Gateway(models, job="down", cache_dir=tmp_path / "cache")
    with pytest.raises(TransportError, match="gave up after 3 attempts, last error server"):
        gateway.complete_sync(models.entry("m1"), [{"role": "user", "content": "hi"}], seed=1)
    assert fake_provider.calls == []
    assert gateway.calls_frame()["fault"].to_list() == ["server"] * 3


@pytest.mark.parametrize("kind", ["empty", "malformed", "overlong"])
def test_content_faults_are_what_the_model_said(tmp_path: Path, fake_provider, kind: str) -> None:
    fake_provider.default = "P2"
    models = models_params(ROSTER, gateway={"faults": {kind: 1.0}})
    gateway = Gateway(models, job="content", cache_dir=tmp_path / "cache")
    entry = models.entry("m1")
    first = gateway.complete_sync(entry, [{"role": "user", "content": "vote"}], seed=3)
    assert len(fake_provider.calls) == 1  # the provider was asked; its reply was then replaced
    if kind == "empty":
        assert first.text == ""
    elif kind == "malformed":
        assert first.text != "P2" and len(first.text) > 2
    else:
        assert first.text.startswith("P2 ") and len(first.text.split()) > 4 * 8 and first.finish_reason == "length"
    # cached as said: a rerun gets the same reply from the cache, still marked as that fault
    again = Gateway(models, job="content-rerun", cache_dir=tmp_path / "cache")
    second = again.complete_sync(entry, [{"role": "user", "content": "vote"}], seed=3)
    assert second.text == first.text and second.cache_hit and len(fake_provider.calls) == 1
    assert gateway.calls_frame()["fault"].to_list() == [kind]
    assert again.calls_frame()["fault"].to_list() == [kind]
    assert gateway.calls_frame()["error_kind"].to_list() == (["empty"] if kind == "empty" else [None])


def test_bots_are_never_faulted(tmp_path: Path) -> None:
    def bot_moves(faults: dict[str, float]) -> list[str]:
        models = models_params(ROSTER, gateway={"faults": faults})
        gateway = Gateway(models, job="bots", cache_dir=tmp_path / str(len(faults)))
        bot = make_players(models, gateway, job_seed=7, names=["random-bot"])["random-bot"]

        async def play() -> list[str]:
            moves = []
            for i in range(20):
                reply = await bot.act(
                    MoveRequest(
                        messages=[{"role": "user", "content": "vote"}],
                        key=f"v{i}",
                        kind="vote",
                        choices=("P1", "P2", "P3"),
                    )
                )
                moves.append(reply.text)
            return moves

        moves = asyncio.run(play())
        assert gateway.calls_frame()["fault"].is_null().all()
        return moves

    assert bot_moves({}) == bot_moves({"server": 0.5, "empty": 0.25, "malformed": 0.25})


def test_a_game_runs_to_the_end_through_content_faults(tmp_path: Path, fake_provider) -> None:
    fake_provider.default = "a warm drink in the morning"
    faults = {"empty": 0.3, "malformed": 0.3, "overlong": 0.3}
    roster = [
        {"name": "m1", "model": "fake/m1", "sampling": {"max_tokens": 8}},
        {"name": "heuristic-bot", "bot": "heuristic"},
        {"name": "random-bot", "bot": "random"},
    ]
    models = models_params(roster, gateway={"faults": faults})
    spec = make_spec(
        models,
        variant="baseline",
        seats=["m1", "heuristic-bot", "random-bot", "m1", "heuristic-bot", "random-bot"],
        spy_seat=1,
        civilian_word="tea",
        spy_word="coffee",
        rules=RulesParams(),
        replies=ReplyParams(speech_max_tokens=8, vote_max_tokens=4),
    )
    gateway = Gateway(models, job="game", cache_dir=tmp_path / "cache")
    record = run_game(spec, models, gateway)
    assert record["events"][-1]["type"] == "end" and record["winner"] in ("spy", "civilians")
    calls = gateway.calls_frame().filter(pl.col("roster_name") == "m1")
    counted = calls["fault"].drop_nulls().to_list()
    assert counted and set(counted) <= {"empty", "malformed", "overlong"}
    speeches = [e for e in record["events"] if e["type"] == "speech" and e["seat"] in ("P1", "P4")]
    # an over-long reply is cut by the game's own limit and flagged, never stored whole
    assert all(len(e["shown"]) <= 400 for e in speeches)


def test_faults_can_come_from_a_separate_file(tmp_path: Path, fake_provider, monkeypatch) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text(yaml.safe_dump({"server": 1.0}))
    monkeypatch.setenv("PIPELINE_FAULTS", str(path))
    models = models_params(ROSTER, gateway={"retries": 0})
    with pytest.raises(TransportError):
        Gateway(models, job="env", cache_dir=tmp_path / "c").complete_sync(
            models.entry("m1"), [{"role": "user", "content": "x"}], seed=1
        )
    path.write_text(yaml.safe_dump({"server": 0.7, "timeout": 0.7}))
    with pytest.raises(ParamsError, match=r"faults.yaml.*\n.*sum must be at most 1"):
        Gateway(models, job="env", cache_dir=tmp_path / "c")


def test_fault_rates_in_the_roster_params_are_validated(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"roster": ROSTER, "gateway": {"faults": {"timeout": 1.5}}}))
    with pytest.raises(ParamsError) as err:
        load_models(path)
    text = str(err.value)
    assert str(path) in text and "gateway.faults.timeout" in text and "expected: a probability in [0, 1]" in text
