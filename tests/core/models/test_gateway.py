"""The gateway as a game sees it: retries, auth errors, cache, limits, the calls table."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import litellm
import polars as pl
import pytest

from pipeline.core.artifacts.schemas import CallsSchema, TableError, read_table
from pipeline.core.models.errors import AuthError, RequestError, TransportError
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.response_cache import ANSWERS_DIR
from tests.conftest import models_params

MESSAGES = [{"role": "user", "content": "Say ok"}]


def _rate_limit() -> litellm.RateLimitError:
    return litellm.RateLimitError(message="slow down", llm_provider="fake", model="m")


def gateway_for(tmp_path: Path, roster: list[dict], **extra: object) -> Gateway:
    return Gateway(models_params(roster, **extra), job="test", cache_dir=tmp_path / "cache")


def test_rate_limit_is_retried_then_succeeds(tmp_path: Path, fake_provider) -> None:
    fake_provider.script = [_rate_limit(), _rate_limit(), "fine"]
    gateway = gateway_for(tmp_path, [{"name": "m1", "model": "fake/m"}])
    completion = gateway.complete_sync(gateway.models.entry("m1"), MESSAGES, seed=1)

    assert completion.text == "fine"
    assert len(fake_provider.calls) == 3
    calls = gateway.calls_frame()
    assert calls["error_kind"].to_list() == ["rate_limit", "rate_limit", None]
    assert calls["attempt"].to_list() == [1, 2, 3]
    # the retried attempts cost nothing and carry no tokens: only the answer counts
    assert calls["tokens_out"].to_list() == [0, 0, 3]


def test_server_errors_and_timeouts_are_retried(tmp_path: Path, fake_provider) -> None:
    fake_provider.script = [
        litellm.InternalServerError(message="boom", llm_provider="fake", model="m"),
        litellm.Timeout(message="slow", model="m", llm_provider="fake"),
        litellm.ServiceUnavailableError(message="down", llm_provider="fake", model="m"),
        "back",
    ]
    gateway = gateway_for(tmp_path, [{"name": "m1", "model": "fake/m"}])
    assert gateway.complete_sync(gateway.models.entry("m1"), MESSAGES, seed=1).text == "back"
    assert gateway.calls_frame()["error_kind"].to_list() == ["server", "timeout", "server", None]


def test_retries_exhausted_raise_transport_error_naming_entry(tmp_path: Path, fake_provider) -> None:
    fake_provider.default = litellm.InternalServerError(message="down", llm_provider="fake", model="m")
    gateway = gateway_for(tmp_path, [{"name": "m1", "model": "fake/m"}], gateway={"retries": 2})
    with pytest.raises(TransportError, match="'m1'.*3 attempts.*server") as info:
        gateway.complete_sync(gateway.models.entry("m1"), MESSAGES, seed=1)
    # the entry, the model, the kind of error and what to do
    assert "roster entry 'm1' (model fake/m): gave up after 3 attempts, last error server" in str(info.value)
    assert "What to do: the provider is failing (5xx)" in str(info.value)
    assert "rerun the same command to resume: answered requests come from the cache" in str(info.value)
    assert len(fake_provider.calls) == 3
    # nothing was cached: a rerun asks again
    assert not (tmp_path / "cache" / ANSWERS_DIR).exists()


def test_auth_error_is_not_retried_and_names_the_env_var(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    rejected = litellm.AuthenticationError(message="Incorrect API key", llm_provider="openai", model="gpt-4o-mini")
    gateway = gateway_for(
        tmp_path, [{"name": "gpt-mini", "model": "openai/gpt-4o-mini", "extra": {"mock_response": rejected}}]
    )
    with pytest.raises(AuthError) as info:
        gateway.complete_sync(gateway.models.entry("gpt-mini"), MESSAGES, seed=1)
    assert "gpt-mini" in str(info.value) and "OPENAI_API_KEY" in str(info.value)
    assert "(model openai/gpt-mini)" not in str(info.value)  # the model string, not the entry name
    assert "(model openai/gpt-4o-mini) cannot authenticate (auth)" in str(info.value)
    assert "check the key in OPENAI_API_KEY" in str(info.value)
    calls = gateway.calls_frame()
    assert calls.height == 1 and calls["error_kind"].to_list() == ["auth"]


def test_missing_key_stops_before_any_request(tmp_path: Path, monkeypatch, fake_provider) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("MY_TEAM_KEY", raising=False)
    gateway = gateway_for(
        tmp_path,
        [
            {"name": "claude", "model": "anthropic/claude-3-5-haiku-20241022"},
            {"name": "team", "model": "fake/m", "api_key_env": "MY_TEAM_KEY"},
        ],
    )
    with pytest.raises(AuthError, match="'claude'.*ANTHROPIC_API_KEY"):
        gateway.complete_sync(gateway.models.entry("claude"), MESSAGES, seed=1)
    with pytest.raises(AuthError, match="'team'.*MY_TEAM_KEY"):
        gateway.complete_sync(gateway.models.entry("team"), MESSAGES, seed=1)
    assert fake_provider.calls == []
    assert gateway.calls_frame().height == 0


def test_api_key_from_named_env_var_reaches_provider_but_not_cache(tmp_path: Path, monkeypatch, fake_provider) -> None:
    monkeypatch.setenv("MY_TEAM_KEY", "sk-team-secret-123")
    gateway = gateway_for(tmp_path, [{"name": "team", "model": "fake/m", "api_key_env": "MY_TEAM_KEY"}])
    gateway.complete_sync(gateway.models.entry("team"), MESSAGES, seed=1)
    for file in (tmp_path / "cache").rglob("*"):
        if file.is_file():
            assert "sk-team-secret-123" not in file.read_text()


def test_bad_request_is_not_retried(tmp_path: Path, fake_provider) -> None:
    fake_provider.script = [litellm.BadRequestError(message="bad param", model="m", llm_provider="fake")]
    gateway = gateway_for(tmp_path, [{"name": "m1", "model": "fake/m"}])
    with pytest.raises(
        RequestError,
        match=r"'m1' \(model fake/m\): request rejected \(bad_request\): .*bad param"
        r".*check the entry's model string, sampling and extra in params/models.yaml",
    ):
        gateway.complete_sync(gateway.models.entry("m1"), MESSAGES, seed=1)
    assert len(fake_provider.calls) == 1


def test_cache_hit_makes_no_provider_call(tmp_path: Path, fake_provider) -> None:
    roster = [{"name": "m1", "model": "fake/m"}]
    first = gateway_for(tmp_path, roster)
    entry = first.models.entry("m1")
    answer = first.complete_sync(entry, MESSAGES, seed=7)
    assert len(fake_provider.calls) == 1

    # a new gateway (a rerun, another process) on the same cache directory
    second = gateway_for(tmp_path, roster)
    again = second.complete_sync(entry, MESSAGES, seed=7)
    assert len(fake_provider.calls) == 1
    assert again.cache_hit and again.text == answer.text and again.cost_usd == 0.0
    assert second.calls_frame()["cache_hit"].to_list() == [True]

    # anything that changes the answer's distribution is a different request
    second.complete_sync(entry, MESSAGES, seed=7, sample_index=1)
    second.complete_sync(entry, MESSAGES, seed=8)
    second.complete_sync(entry, MESSAGES, seed=7, temperature=0.0)
    assert len(fake_provider.calls) == 4


def test_empty_reply_is_returned_and_flagged(tmp_path: Path, fake_provider) -> None:
    fake_provider.script = [""]
    gateway = gateway_for(tmp_path, [{"name": "m1", "model": "fake/m"}])
    assert gateway.complete_sync(gateway.models.entry("m1"), MESSAGES, seed=1).text == ""
    assert gateway.calls_frame()["error_kind"].to_list() == ["empty"]


def test_cost_comes_from_litellm_pricing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    gateway = gateway_for(
        tmp_path, [{"name": "gpt-mini", "model": "openai/gpt-4o-mini", "extra": {"mock_response": "hello"}}]
    )
    completion = gateway.complete_sync(gateway.models.entry("gpt-mini"), MESSAGES, seed=1)
    assert completion.cost_usd is not None and completion.cost_usd > 0
    assert gateway.calls_frame()["cost_usd"].to_list() == [completion.cost_usd]


def test_provider_concurrency_limit_is_respected(tmp_path: Path, fake_provider) -> None:
    in_flight = {"now": 0, "max": 0}

    class Slow(type(fake_provider)):
        async def acompletion(self, *args, **kwargs):
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
            await asyncio.sleep(0.05)
            in_flight["now"] -= 1
            return self.completion(*args, **kwargs)

    slow = Slow()
    litellm.custom_provider_map = [*litellm.custom_provider_map, {"provider": "slow", "custom_handler": slow}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    gateway = gateway_for(tmp_path, [{"name": "s", "model": "slow/m"}], providers={"slow": {"max_concurrency": 2}})
    entry = gateway.models.entry("s")

    async def many() -> None:
        await asyncio.gather(*(gateway.complete(entry, MESSAGES, seed=i) for i in range(6)))

    asyncio.run(many())
    assert in_flight["max"] == 2
    assert len(slow.calls) == 6


def test_requests_per_minute_spaces_requests(tmp_path: Path, fake_provider) -> None:
    gateway = gateway_for(tmp_path, [{"name": "m1", "model": "fake/m"}], providers={"fake": {"rpm": 600}})
    entry = gateway.models.entry("m1")

    async def many() -> None:
        await asyncio.gather(*(gateway.complete(entry, MESSAGES, seed=i) for i in range(5)))

    started = time.monotonic()
    asyncio.run(many())
    assert time.monotonic() - started >= 0.4  # 600 rpm = one start per 0.1 s


def test_calls_table_is_validated(tmp_path: Path, fake_provider) -> None:
    gateway = gateway_for(tmp_path, [{"name": "m1", "model": "fake/m"}])
    gateway.complete_sync(gateway.models.entry("m1"), MESSAGES, seed=1)
    path = tmp_path / "calls.parquet"
    gateway.write_calls(path)
    table = read_table(path, CallsSchema)
    assert table.columns == [
        "job",
        "roster_name",
        "model",
        "request_id",
        "attempt",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "latency_s",
        "cache_hit",
        "error_kind",
        "fault",
        "batch",
        "tokens_reasoning",
        "finish_reason",
        "dropped_params",
    ]
    broken = table.with_columns(pl.lit(-1).alias("tokens_in"))
    broken.write_parquet(path)
    with pytest.raises(TableError, match=r"(?s)calls.parquet.*column .tokens_in"):
        read_table(path, CallsSchema)
