"""The gateway's hot path at a provider's top tier (issue 46): answers stored by the answer writer,
limits kept as running counts, the loopback provider's latency mix and sub-minute limit.

Each test checks what a user relies on: every answer cached and paid once however many requests
run at once and however often a provider says 429, existing caches still hit, token limits hold."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.models import limits as limits_module
from pipeline.core.models.budget import LEDGER_NAME, SpendLedger
from pipeline.core.models.gateway import Gateway, request_key
from pipeline.core.models.limits import EffectiveLimits, LimitStore
from pipeline.core.models.response_cache import ANSWERS_DIR, ResponseCache
from pipeline.core.models.roster import ProviderLimits
from pipeline.testing.loopback import FaultMix, LatencyMix, LoopbackServer
from tests.conftest import models_params

KEY_ENV = "LOOPBACK_TEST_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "not-a-secret")


def gateway(url: str, cache: Path, **extra: Any) -> Gateway:
    roster = [{"name": "api", "model": "openai/loop", "api_key_env": KEY_ENV, "extra": {"api_base": url}}]
    return Gateway(models_params(roster, **extra), job="scale/game", cache_dir=cache)


def ask_all(gate: Gateway, count: int) -> list[str]:
    entry = gate.models.entry("api")

    async def run() -> list[str]:
        replies = await asyncio.gather(
            *(gate.complete(entry, [{"role": "user", "content": f"question {i}"}]) for i in range(count))
        )
        return [reply.text for reply in replies]

    return asyncio.run(run())


def ledger_keys(cache: Path) -> Counter[str]:
    return Counter(line["key"] for line in SpendLedger(cache / LEDGER_NAME).records())


def test_many_answers_at_once_are_each_cached_and_paid_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with LoopbackServer(latency_s=0.05, max_requests=1000, max_seconds=120) as server:
        first = gateway(server.url, cache, providers={"openai": {"max_concurrency": 500}})
        assert ask_all(first, 300) == ["ok"] * 300
        sent = server.stats.accepted
        rerun = gateway(server.url, cache, providers={"openai": {"max_concurrency": 500}})
        assert ask_all(rerun, 300) == ["ok"] * 300
    assert sent == 300 and server.stats.accepted == 300  # the rerun asked the provider nothing
    keys = ledger_keys(cache)
    assert len(keys) == 300 and set(keys.values()) == {1}  # one ledger line per answer
    calls = rerun.calls_frame()
    assert calls["cache_hit"].all() and calls.height == 300
    assert not list(cache.rglob("*.tmp"))  # every temp file renamed into place


def test_existing_caches_still_hit_same_ids_and_bytes(tmp_path: Path) -> None:
    """The request key of a fixed request and the bytes of an entry are what earlier versions
    wrote: a cache filled before this change answers the same requests."""
    key = request_key(
        "openai/gpt-4o-mini", [{"role": "user", "content": "Say ok, é"}], {"temperature": 0.7, "max_tokens": 8}, 7, 0
    )
    assert key == "d9fee6a414492b70443abd7d62cb057d23672a2d0d66ae48cc9b22e9df24ae1f"
    cache = ResponseCache(tmp_path)
    cache.put("ab" * 32, {"text": "é ok", "tokens_in": 3, "cost_usd": None})
    (segment,) = (tmp_path / ANSWERS_DIR).glob("*.jsonl")
    entry_bytes = ('{"cost_usd": null, "key": "' + "ab" * 32 + '", "text": "é ok", "tokens_in": 3}').encode("utf-8")
    assert segment.read_bytes() == entry_bytes + b"\n"  # the bytes an entry's own file held
    assert cache.get("ab" * 32) == {"cost_usd": None, "key": "ab" * 32, "text": "é ok", "tokens_in": 3}
    old = tmp_path / "cd" / f"{'cd' * 32}.json"  # an entry as earlier versions stored it
    old.parent.mkdir()
    old.write_bytes(entry_bytes.replace(b"ab", b"cd"))
    assert cache.get("cd" * 32) == {"cost_usd": None, "key": "cd" * 32, "text": "é ok", "tokens_in": 3}


def test_a_model_moved_to_another_endpoint_answers_from_the_cache(tmp_path: Path) -> None:
    """The same requests to the same model through two api_base values: the provider is asked once,
    the second endpoint is answered by the cache (the endpoint is in no cache key, as in no game id)."""
    cache = tmp_path / "cache"
    with (
        LoopbackServer(max_requests=100, max_seconds=60) as first,
        LoopbackServer(max_requests=100, max_seconds=60) as second,
    ):
        assert ask_all(gateway(first.url, cache), 5) == ["ok"] * 5
        moved = gateway(second.url, cache)
        assert ask_all(moved, 5) == ["ok"] * 5
    assert first.stats.accepted == 5 and second.stats.accepted == 0
    assert moved.calls_frame()["cache_hit"].all()
    assert len(ledger_keys(cache)) == 5  # paid once, at the first endpoint


def test_nothing_is_paid_twice_under_429s_and_transport_retries(tmp_path: Path) -> None:
    """A provider that allows 20 requests per 2 s (429 with Retry-After and retry-after-ms above
    it) and fails a request's first attempt three times in ten (500s, connections closed mid-reply):
    every request is answered once, paid once, and the failed attempts are no moves."""
    cache = tmp_path / "cache"
    faults = FaultMix(seed=3, server_error=0.2, connection_closed=0.1, faulty_repeats=1)
    with LoopbackServer(
        latency_s=0.05, limit=20, window_s=2.0, retry_after_ms=True, faults=faults, max_requests=600, max_seconds=120
    ) as server:
        gate = gateway(
            server.url,
            cache,
            providers={"openai": {"max_concurrency": 64}},
            gateway={"rate_limit_patience_s": 60, "backoff_base_s": 0.05, "backoff_max_s": 0.2, "retries": 5},
        )
        assert ask_all(gate, 60) == ["ok"] * 60
        server.settle()
    answered = Counter(server.answered_keys())
    assert len(answered) == 60 and set(answered.values()) == {1}  # the provider answered each request once
    assert server.stats.rejected >= 1 and sum(1 for s in server.log if s.fault) >= 1  # both were met
    keys = ledger_keys(cache)
    assert len(keys) == 60 and set(keys.values()) == {1}
    calls = gate.calls_frame()
    assert calls.filter(calls["error_kind"].is_null()).height == 60  # one move per request
    assert calls.filter(calls["error_kind"] == "rate_limit").height == server.stats.rejected


def _limits(**values: float) -> EffectiveLimits:
    return EffectiveLimits.of(ProviderLimits(**{"max_concurrency": 100, **values}), 1, 600.0)


def test_tokens_per_minute_count_the_reported_usage_and_leave_after_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LimitStore(tmp_path / "limits.sqlite")
    limits = _limits(tpm=1000)
    first, _ = store.try_start("p", limits, 400)
    second, _ = store.try_start("p", limits, 400)
    third, wait = store.try_start("p", limits, 400)
    assert first is not None and second is not None
    assert third is None and 55 < wait <= 60  # the minute's tokens are spent until the first leaves
    store.finish(first, limits, outcome="ok", tokens=100)  # the provider reported less than guessed
    third, _ = store.try_start("p", limits, 400)
    assert third is not None  # 100 + 400 + 400 fit
    fourth, _ = store.try_start("p", limits, 400)
    assert fourth is None
    later = limits_module.time.time() + 62  # a minute on: every start has left the window
    monkeypatch.setattr(limits_module.time, "time", lambda: later)
    fourth, _ = store.try_start("p", limits, 900)
    assert fourth is not None
    for ticket in (second, third, fourth):
        store.finish(ticket, limits, outcome="ok")
    assert store.state("p")["in_flight"] == 0


def test_requests_per_minute_count_from_the_hand_off_as_a_provider_counts_arrivals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rpm 3: starts 20 s apart, each handed to litellm at its start and answered 30 s later (a
    reasoning reply). The first leaves the window 61 s after its hand-off, not after its answer; a
    process's first request counts until a minute after its answer (litellm's first call imports
    before it sends)."""
    clock = [limits_module.time.time()]
    monkeypatch.setattr(limits_module.time, "time", lambda: clock[0])
    store = LimitStore(tmp_path / "limits.sqlite")
    limits = _limits(rpm=3)
    begun = clock[0]
    tickets = []
    for _ in range(3):
        ticket, _ = store.try_start("p", limits, 1)
        assert ticket is not None
        tickets.append((ticket, clock[0]))
        clock[0] += 20.0
    clock[0] = begun + 55.0  # every one answered 30 s after its hand-off (the last one: early)
    for ticket, sent in tickets:
        store.finish(ticket, limits, outcome="ok", sent=sent)
    clock[0] = begun + 60.5
    refused, wait = store.try_start("p", limits, 1)
    assert refused is None and wait == pytest.approx(0.5, abs=0.01)  # 61 s after the first hand-off
    clock[0] = begun + 61.01
    granted, _ = store.try_start("p", limits, 1)
    assert granted is not None  # under the old rule (61 s after the answer): refused until 85 s

    first, _ = store.try_start("q", limits, 1)
    assert first is not None
    clock[0] += 30.0
    store.finish(replace(first, first=True), limits, outcome="ok", sent=clock[0] - 30.0)
    for _ in range(2):
        clock[0] += 20.0
        assert store.try_start("q", limits, 1)[0] is not None
    clock[0] += 20.0  # 90 s after the first request's start, 60 s after its answer
    refused, wait = store.try_start("q", limits, 1)
    assert refused is None and wait == pytest.approx(1.0, abs=0.01)


def test_a_latency_mix_draws_each_request_its_own_latency() -> None:
    mix = LatencyMix(seed=1, chat_s=(1.0, 3.0), tail=0.1, tail_s=(5.0, 15.0), reasoning_s=(20.0, 40.0))
    chat = [mix.draw(f"body-{i}", 0, reasoning=False) for i in range(2000)]
    reasoning = [mix.draw(f"body-{i}", 0, reasoning=True) for i in range(200)]
    assert all(1.0 <= x <= 3.0 or 5.0 <= x <= 15.0 for x in chat)
    assert 0.07 < sum(x >= 5.0 for x in chat) / len(chat) < 0.13  # the slow tail's share
    assert all(20.0 <= x <= 40.0 for x in reasoning)
    assert mix.draw("body-7", 0, reasoning=False) == chat[7]  # the same request meets the same latency
    assert LatencyMix(seed=1, scale=0.1).draw("body-7", 0, reasoning=True) == pytest.approx(
        LatencyMix(seed=1).draw("body-7", 0, reasoning=True) / 10
    )
    with pytest.raises(ValueError, match="tail must be in"):
        LatencyMix(tail=1.5)


def test_the_loopback_holds_its_limit_over_short_windows_and_says_the_wait_in_ms() -> None:
    import httpx

    with LoopbackServer(limit=60, window_s=60.0, burst_s=1.0, retry_after_ms=True, keep_requests=False) as server:
        statuses, waits = [], []
        with httpx.Client() as client:
            for i in range(3):
                response = client.post(
                    f"{server.url}/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": str(i)}]},
                )
                statuses.append(response.status_code)
                waits.append(response.headers.get("retry-after-ms"))
    # 60 a minute held over 1 s windows: one a second
    assert statuses == [200, 429, 429]
    assert waits[0] is None and 0 < int(waits[1]) <= 1000
    assert server.requests == []  # keep_requests=False: no bodies kept
    assert server.stats.accepted == 1


def test_under_rpm_a_429_with_its_wait_pauses_and_leaves_the_concurrency(tmp_path: Path) -> None:
    """A 429 that says its wait, under an rpm limit, is the edge of the provider's window: every
    process pauses until then, and the requests allowed in flight stay. Without rpm (or without a
    stated wait) the concurrency halves, as before."""
    store = LimitStore(tmp_path / "limits.sqlite")
    for provider, limits, retry_after, halved in (
        ("rpm", _limits(rpm=600), 2.0, False),
        ("no-rpm", _limits(), 2.0, True),
        ("no-wait", _limits(rpm=600), None, True),
    ):
        ticket, _ = store.try_start(provider, limits, 1)
        assert ticket is not None
        before = limits_module.time.time()
        store.finish(ticket, limits, outcome="rate_limit", retry_after_s=retry_after)
        state = store.state(provider)
        assert state["concurrency"] == (50 if halved else 100), provider
        assert state["rejected"] == 1
        if retry_after:
            assert state["paused_until"] >= before + retry_after


def test_a_start_never_blocks_the_event_loop_while_another_process_holds_the_store(tmp_path: Path) -> None:
    """Another process holding the store's lock for 0.5 s: the start waits for it on the store's
    thread, and the event loop keeps running meanwhile (other games go on)."""
    import sqlite3
    import threading
    import time

    from pipeline.core.models.limits import SharedLimiter

    path = tmp_path / "limits.sqlite"
    limiter = SharedLimiter(LimitStore(path))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # as another job process mid-transaction
    threading.Timer(0.5, lambda: other.execute("COMMIT")).start()

    async def run() -> tuple[float, float]:
        ticks: list[float] = []

        async def ticker() -> None:
            for _ in range(40):
                ticks.append(time.monotonic())
                await asyncio.sleep(0.02)

        async def start() -> float:
            async with limiter.admitted("p", _limits(rpm=600), 1) as admission:
                admission.outcome = "ok"
            return time.monotonic()

        begun = time.monotonic()
        granted, _ = await asyncio.gather(start(), ticker())
        return granted - begun, max(b - a for a, b in zip(ticks, ticks[1:], strict=False))

    waited, longest_gap = asyncio.run(run())
    assert waited >= 0.45  # it did wait for the other process
    assert longest_gap < 0.2  # and the loop never stopped for it
    assert limiter.store.state("p")["in_flight"] == 0  # its end ran


def test_a_start_and_an_end_the_store_is_busy_for_briefly_stay_on_the_event_loop(tmp_path: Path) -> None:
    """Another process holding the store for a moment: the start is granted, and the request's end
    written, from the event loop, each after a short wait; the store's thread, whose waits held up
    every other start, is never started."""
    import sqlite3
    import threading

    from pipeline.core.models.limits import SharedLimiter

    path = tmp_path / "limits.sqlite"
    limiter = SharedLimiter(LimitStore(path))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def hold(seconds: float) -> None:  # as another job process mid-transaction
        other.execute("BEGIN IMMEDIATE")
        # released from the event loop: before the start's first retry, after the end's first flush
        asyncio.get_running_loop().call_later(seconds, lambda: other.execute("COMMIT"))

    async def run() -> None:
        hold(limits_module.LOOP_RETRY_S / 2)
        async with limiter.admitted("p", _limits(rpm=600), 1) as admission:
            admission.outcome = "ok"
            hold(1.5 * limits_module.FLUSH_S)
        await asyncio.sleep(4 * limits_module.FLUSH_S)

    before = {t for t in threading.enumerate() if t.name == "limit-store"}  # other tests' stores
    asyncio.run(run())
    assert {t for t in threading.enumerate() if t.name == "limit-store"} <= before
    (leases,) = other.execute("SELECT COUNT(*) FROM leases").fetchone()
    (starts,) = other.execute("SELECT COUNT(*) FROM starts").fetchone()
    assert (leases, starts) == (0, 1)  # the end ran: its lease is gone, its start still counts
