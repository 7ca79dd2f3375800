"""A flaky provider, for real: the gateway and litellm (openai/ models) against the loopback server
serving HTTP 500s, 503s with Retry-After, stalls past the client's timeout, bodies cut mid-JSON,
`choices: []`, connections closed mid-reply and other replies that are no answer.

Every such reply is recorded under its own error kind, retried, and never becomes a move; the
game gets the provider's real answer. A request that keeps failing stops with a message naming
the roster entry, the model, the kind of error and what to do. The slow tests run a Who is Spy
shard and an Elimination game through the whole fault mix in one invocation each.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import litellm
import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.schemas import CallsSchema, calls_frame, read_table
from pipeline.core.models.errors import (
    ERROR_KINDS,
    PROVIDER_FAULT_KINDS,
    TRANSPORT_KINDS,
    BudgetExceeded,
    ProviderFault,
    TransportError,
)
from pipeline.core.models.gateway import CallRecord, Gateway, read_answer
from pipeline.core.models.response_cache import ANSWERS_DIR
from pipeline.core.models.roster import GatewaySettings, load_models
from pipeline.core.run.shards import ShardGame, failure_message, play_shard
from pipeline.core.run.workflow import copy_workflow
from pipeline.testing.loopback import FAULTS, FaultMix, LoopbackServer
from tests.conftest import REPO, models_params

KEY_ENV = "PROVIDER_FAULTS_TEST_KEY"
ANSWER = "a quiet river under old stones"

#: loopback fault -> the error kind the gateway records for it
KIND_OF = {
    "server_error": "server",
    "unavailable": "server",
    "stall": "timeout",
    "malformed_json": "malformed_body",
    "empty_choices": "empty_choices",
    "connection_closed": "connection_closed",
    "no_message": "malformed_body",
    "html_body": "malformed_body",
    "empty_body": "malformed_body",
}


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "not-a-real-key")


def flaky_roster(url: str, names: Sequence[str] = ("flaky",)) -> list[dict[str, Any]]:
    return [
        {"name": name, "model": f"openai/{name}", "api_key_env": KEY_ENV, "extra": {"api_base": url}} for name in names
    ]


def gateway_at(url: str, tmp_path: Path, **gateway: Any) -> Gateway:
    models = models_params(flaky_roster(url), gateway={"timeout_s": 1.0, **gateway})
    return Gateway(models, job="faults", cache_dir=tmp_path / "cache")


def ask(gateway: Gateway, text: str = "Describe your word", seed: int = 1):
    return gateway.complete_sync(gateway.models.entry("flaky"), [{"role": "user", "content": text}], seed=seed)


def server_with(fault: str, *, every_time: bool = False, **sizes: float) -> LoopbackServer:
    """The loopback server serving `fault` to the first attempt of each request (or to every one)."""
    mix = FaultMix(
        **{fault: 1.0},
        faulty_repeats=None if every_time else 1,
        stall_s=sizes.get("stall_s", 3.0),
        retry_after_s=sizes.get("retry_after_s", 0.05),
    )
    return LoopbackServer(faults=mix, reply=lambda messages: ANSWER, max_seconds=120)


# -- one test per shape: recorded under its kind, retried, and the game gets the real answer --------


@pytest.mark.parametrize("fault", list(KIND_OF))
def test_each_fault_is_recorded_under_its_kind_retried_and_never_a_move(tmp_path: Path, fault: str) -> None:
    with server_with(fault, retry_after_s=0.3) as server:
        gateway = gateway_at(server.url, tmp_path)
        started = time.monotonic()
        completion = ask(gateway)
        took = time.monotonic() - started

        assert completion.text == ANSWER and not completion.cache_hit
        calls = gateway.calls_frame()
        assert calls["error_kind"].to_list() == [KIND_OF[fault], None]
        assert calls["attempt"].to_list() == [1, 2]
        failed = calls.row(0, named=True)
        assert (failed["tokens_out"], failed["cost_usd"]) == (0, 0.0)  # never a move, never paid
        server.settle()
        # the provider's side: the first attempt met the fault, the second was answered, once (the
        # log is in order of completion: a stalled handler may notice the client left after the retry)
        assert sorted(((s.fault, s.outcome) for s in server.log), key=repr) == sorted(
            [(fault, "abandoned" if fault == "stall" else "fault"), (None, "answered")], key=repr
        )
        assert len(set(server.answered_keys())) == len(server.answered_keys()) == 1
        assert len(gateway.ledger.records()) == 1  # only the answer is in the spend ledger
        if fault == "unavailable":
            assert took >= 0.3  # Retry-After (retry-after-ms) was honoured
        if fault == "stall":
            assert failed["latency_s"] >= 1.0  # the client's timeout, not the stall, decided

        # the calls table takes every kind
        gateway.write_calls(tmp_path / "calls.parquet")
        assert read_table(tmp_path / "calls.parquet", CallsSchema)["error_kind"].to_list() == [KIND_OF[fault], None]

        # a rerun: the answer comes from the cache, the provider is not asked again
        again = gateway_at(server.url, tmp_path)
        assert ask(again).text == ANSWER and again.calls_frame()["cache_hit"].to_list() == [True]
        assert len(server.log) == 2


@pytest.mark.parametrize("fault", ["malformed_json", "empty_choices", "connection_closed", "stall"])
def test_a_request_that_keeps_failing_names_entry_model_kind_and_what_to_do(tmp_path: Path, fault: str) -> None:
    with server_with(fault, every_time=True) as server:
        gateway = gateway_at(server.url, tmp_path, retries=2, timeout_s=0.5)
        with pytest.raises(TransportError) as info:
            ask(gateway)
    text = str(info.value)
    kind = KIND_OF[fault]
    assert re.search(
        rf"roster entry 'flaky' \(model openai/flaky\): gave up after 3 attempts, last error {kind}:", text
    ), text
    assert "What to do:" in text and "rerun the same command" in text
    assert "answered requests come from the cache" in text
    assert gateway.calls_frame()["error_kind"].to_list() == [kind] * 3
    assert server.answered_keys() == [] and gateway.ledger.records() == []
    assert not (tmp_path / "cache" / ANSWERS_DIR).exists()  # nothing cached: a rerun asks again


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_provider_that_cannot_be_reached_is_a_connection_error(tmp_path: Path) -> None:
    gateway = gateway_at(f"http://127.0.0.1:{free_port()}/v1", tmp_path, retries=1)
    with pytest.raises(
        TransportError,
        match=r"'flaky' \(model openai/flaky\): gave up after 2 attempts, "
        r"last error connection:.*check the network and the entry's api_base",
    ):
        ask(gateway)
    assert gateway.calls_frame()["error_kind"].to_list() == ["connection", "connection"]


def test_the_budget_stop_names_the_entry(tmp_path: Path) -> None:
    with server_with("server_error") as server:
        gateway = gateway_at(server.url, tmp_path, budget_usd=0.0)
        with pytest.raises(
            BudgetExceeded,
            match=r"^spend budget reached.*Raise gateway.budget_usd and rerun.*"
            r"roster entry 'flaky' \(model openai/flaky\) \(budget\)",
        ):
            ask(gateway)
        assert server.log == []


# -- what counts as an answer ----------------------------------------------------------------------


def test_content_null_is_the_models_empty_reply_not_a_fault(tmp_path: Path, fake_provider) -> None:
    # a reasoning model whose hidden reasoning spent the cap: content null, finish_reason "length"
    cut = litellm.ModelResponse(
        choices=[{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": None}}]
    )
    assert read_answer(cut)[1:] == ("", "length")
    # through the gateway: the empty reply is the move (recorded as `empty`, cached), not retried
    fake_provider.script = [None]
    models = models_params([{"name": "m1", "model": "fake/m"}])
    gateway = Gateway(models, job="null", cache_dir=tmp_path / "cache")
    completion = gateway.complete_sync(models.entry("m1"), [{"role": "user", "content": "hi"}], seed=1)
    assert completion.text == "" and len(fake_provider.calls) == 1
    assert gateway.calls_frame()["error_kind"].to_list() == ["empty"]


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (SimpleNamespace(choices=[]), "empty_choices"),
        (SimpleNamespace(choices=None), "malformed_body"),
        (SimpleNamespace(choices="oops"), "malformed_body"),
        (SimpleNamespace(choices=[SimpleNamespace(finish_reason="stop")]), "malformed_body"),
        (SimpleNamespace(choices=[{"message": None}]), "malformed_body"),
        (SimpleNamespace(choices=[{"message": {"content": ["parts"]}}]), "malformed_body"),
        ({"choices": []}, "empty_choices"),
    ],
)
def test_replies_without_an_answer_are_provider_faults(response: Any, kind: str) -> None:
    with pytest.raises(ProviderFault) as info:
        read_answer(response)
    assert info.value.kind == kind


def test_every_error_kind_fits_the_calls_table() -> None:
    assert set(PROVIDER_FAULT_KINDS) <= set(TRANSPORT_KINDS) <= set(ERROR_KINDS)
    rows = [
        asdict(CallRecord("j", "m", "openai/m", f"r{i}", 1, 0, 0, 0.0, 0.1, False, kind))
        for i, kind in enumerate(ERROR_KINDS)
    ]
    assert CallsSchema.validate(calls_frame(rows))["error_kind"].to_list() == list(ERROR_KINDS)


# -- the loopback's fault mix and the retry policy ----------------------------------------------------


def test_fault_draws_are_seeded_per_body_and_repeat_and_follow_the_mix() -> None:
    mix = FaultMix.flaky_provider(seed=3)
    assert mix.rate == pytest.approx(0.27)
    draws = [mix.draw(f"body-{i}", 0) for i in range(20_000)]
    assert draws == [mix.draw(f"body-{i}", 0) for i in range(20_000)]
    counts = Counter(draws)
    for name in FAULTS:
        assert abs(counts[name] / 20_000 - getattr(mix, name)) < 0.01, name
    # the same body sent again draws anew; another seed, other faults
    assert [mix.draw(f"body-{i}", 1) for i in range(300)] != draws[:300]
    assert [FaultMix.flaky_provider(seed=4).draw(f"body-{i}", 0) for i in range(300)] != draws[:300]
    with pytest.raises(ValueError, match="add up to at most 1"):
        FaultMix(server_error=0.6, stall=0.6)


def test_the_default_retries_carry_a_request_through_a_flaky_provider() -> None:
    """At the flaky mix's 27% faulted attempts, all attempts of one request fail with p <= 1e-6."""
    faulted = FaultMix.flaky_provider().rate
    committed = load_models(REPO / "params" / "models.yaml").gateway.retries
    for retries in (GatewaySettings().retries, committed):
        assert faulted ** (retries + 1) <= 1e-6, retries


# -- a whole game ----------------------------------------------------------------------------------

SEATS = re.compile(r"\bP\d+\b")


def game_reply(messages: Sequence[dict[str, Any]]) -> str:
    """A well-behaved player of both games, answering in each prompt's format."""
    task = str(messages[-1].get("content") or "")
    if "You may vote for one of:" in task:  # Who is Spy
        candidates = [c.strip(" .") for c in task.split("You may vote for one of:")[1].split(".")[0].split(",")]
        return candidates[-1]
    if "Rank these seats" in task:  # Elimination
        return " ".join(dict.fromkeys(SEATS.findall(task.split("most wanted first:")[1].split(".")[0])))
    if "`P<n>: <reason>`" in task:
        choices = SEATS.findall(task.split("Choose one of")[1].split(".")[0]) if "Choose one of" in task else []
        return f"{(choices or SEATS.findall(task))[-1]}: they said the least"
    return "something you hold when it is cold outside"


def test_a_game_that_keeps_failing_names_the_model_the_kind_and_the_fix(tmp_path: Path) -> None:
    from pipeline.whoisspy.config import ReplyParams, RulesParams
    from pipeline.whoisspy.engine import play_game
    from pipeline.whoisspy.schedule import make_spec

    mix = FaultMix(empty_choices=1.0)
    with LoopbackServer(faults=mix, reply=game_reply, max_seconds=120) as server:
        roster = [*flaky_roster(server.url), {"name": "heuristic-bot", "bot": "heuristic"}]
        models = models_params(roster, gateway={"retries": 1})
        spec = make_spec(
            models,
            variant="baseline",
            seats=["flaky", *["heuristic-bot"] * 5],
            spy_seat=1,
            civilian_word="tea",
            spy_word="coffee",
            rules=RulesParams(),
            replies=ReplyParams(),
        )
        gateway = Gateway(models, job="doomed", cache_dir=tmp_path / "cache")

        async def play(game: Any) -> None:
            await play_game(game, models, gateway)

        outcome = asyncio.run(play_shard([ShardGame("g1", spec)], play, lambda _: False, at_once=1))
    message = failure_message(outcome)
    assert (
        "g1: TransportError: roster entry 'flaky' (model openai/flaky): gave up after 2 attempts, "
        "last error empty_choices" in message
    ), message
    assert "content filter" in message and "answered requests come from the cache" in message


# -- both game shapes through the whole fault mix, in one invocation each (slow) --------------------

#: the issue's mix, scaled in time: stalls of 3 s against a 1 s client timeout (the issue: 40 s
#: against 10 s), Retry-After 0.05 s, 20 ms of latency
SCALED_MIX = FaultMix.flaky_provider(seed=11, stall_s=3.0, retry_after_s=0.05)
API_SEATS = [f"api-{i}" for i in range(1, 9)]


@pytest.fixture
def flaky_provider() -> Iterator[LoopbackServer]:
    with LoopbackServer(
        faults=SCALED_MIX, latency_s=0.02, reply=game_reply, max_seconds=600, max_requests=100_000
    ) as server:
        yield server


def faulty_project(root: Path, url: str) -> Path:
    """The committed params with eight API models at the flaky provider (retries as committed)."""
    copy_workflow(REPO, root)
    path = root / "params" / "models.yaml"
    models = yaml.safe_load(path.read_text())
    models["roster"] += flaky_roster(url, API_SEATS)
    models["providers"]["openai"] = {"max_concurrency": 32, "rpm": 0}
    models["gateway"].update({"timeout_s": 1.0, "backoff_base_s": 0.02, "backoff_max_s": 0.2})
    path.write_text(yaml.safe_dump(models, sort_keys=False))
    return root


def edit_params(path: Path, update: dict[str, Any]) -> None:
    data = yaml.safe_load(path.read_text())
    data.update(update)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def pipeline_command(project: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", *args], cwd=project, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout


def scheduled_ids(project: Path, bench: str) -> list[str]:
    lines = pipeline_command(project, bench, "schedule").splitlines()
    return [line.split()[0] for line in lines if re.match(r"^[0-9a-f]{16}\s", line)]


def check_against_provider(project: Path, server: LoopbackServer, calls: pl.DataFrame) -> None:
    """What the provider saw agrees with the calls tables and the spend ledger."""
    server.settle()
    answered = server.answered_keys()
    assert answered and len(set(answered)) == len(answered), "a request body was answered twice"
    ledger = (project / ".cache" / "responses" / "spend-ledger.jsonl").read_text().splitlines()
    assert len(ledger) == len(answered)
    outcomes = Counter(s.outcome for s in server.log)
    assert outcomes["fault"] + outcomes["abandoned"] > 0  # the mix did bite
    api = calls.filter(pl.col("roster_name").is_in(API_SEATS) & ~pl.col("cache_hit"))
    errors = api.filter(pl.col("error_kind").is_in(list(TRANSPORT_KINDS)))
    # every faulted reply is one error row of its own kind, and never a move
    assert errors.height == outcomes["fault"] + outcomes["abandoned"]
    assert (errors["tokens_out"] == 0).all()
    kinds = Counter(errors["error_kind"].to_list())
    served = Counter(KIND_OF[s.fault] for s in server.log if s.fault is not None and s.outcome != "answered")
    assert kinds == served
    moves = api.filter(pl.col("error_kind").is_null() | (pl.col("error_kind") == "empty"))
    assert moves.height == len(answered)


@pytest.mark.slow
def test_a_whoisspy_shard_finishes_through_the_fault_mix_in_one_run(
    flaky_provider: LoopbackServer, tmp_path: Path
) -> None:
    project = faulty_project(tmp_path / "project", flaky_provider.url)
    # every seat an API model: two players under test, five API models filling the other seats
    edit_params(
        project / "params" / "whoisspy.yaml",
        {"players": API_SEATS[:2], "fill": API_SEATS[2:7], "variants": ["baseline"]},
    )
    ids = scheduled_ids(project, "whoisspy")
    assert len(ids) >= 4
    marker = project / "results" / "whoisspy" / "shards" / "faults.json"
    pipeline_command(project, "whoisspy", "play", *ids, "--marker", str(marker), "--out", "results/whoisspy/games")

    games = project / "results" / "whoisspy" / "games"
    assert json.loads(marker.read_text())["played"] == sorted(ids)
    records = [json.loads((games / f"{i}.json").read_text()) for i in ids]
    assert all(r["events"][-1]["type"] == "end" for r in records)
    assert all(sum(p["model"] in API_SEATS for p in r["players"]) == 6 for r in records)
    calls = pl.concat([read_table(games / f"{i}.calls.parquet", CallsSchema) for i in ids], how="diagonal_relaxed")
    check_against_provider(project, flaky_provider, calls)


@pytest.mark.slow
def test_an_elimination_game_finishes_through_the_fault_mix_in_one_run(
    flaky_provider: LoopbackServer, tmp_path: Path
) -> None:
    project = faulty_project(tmp_path / "project", flaky_provider.url)
    path = project / "params" / "elimination.yaml"
    params = yaml.safe_load(path.read_text())
    params["schedule"]["lineups"] = [API_SEATS]
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    ids = scheduled_ids(project, "elimination")
    assert len(ids) == 1
    marker = project / "results" / "elimination" / "shards" / "faults.json"
    pipeline_command(
        project, "elimination", "play", *ids, "--marker", str(marker), "--out", "results/elimination/games"
    )

    game = project / "results" / "elimination" / "games" / ids[0]
    assert json.loads(marker.read_text())["played"] == ids
    assert list(game.glob("game_*.jsonl"))
    calls = read_table(game / "calls.parquet", CallsSchema)
    check_against_provider(project, flaky_provider, calls)
