"""Provider limits as the provider sees them: a loopback OpenAI-compatible server (127.0.0.1,
bounded in requests and time) counts what arrives from several job processes."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.models.errors import TransportError
from pipeline.core.models.gateway import Gateway
from pipeline.testing.loopback import LoopbackServer
from tests.conftest import models_params

KEY_ENV = "LOOPBACK_TEST_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "not-a-secret")


def roster(url: str) -> list[dict[str, Any]]:
    return [{"name": "api", "model": "openai/loop", "api_key_env": KEY_ENV, "extra": {"api_base": url}}]


def ask_many(gateway: Gateway, count: int, tag: str) -> list[str]:
    entry = gateway.models.entry("api")

    async def run() -> list[str]:
        replies = await asyncio.gather(
            *(gateway.complete(entry, [{"role": "user", "content": f"{tag}-{i}"}]) for i in range(count))
        )
        return [r.text for r in replies]

    return asyncio.run(run())


def _job(url: str, cache: str, count: int, tag: str, extra: dict[str, Any], ready: Any) -> None:
    """One job process (as Snakemake would start it) with its own gateway."""
    import litellm

    os.environ[KEY_ENV] = "not-a-secret"
    # litellm's first request takes a second or more (lazy imports): a warm-up, not counted, so
    # that the jobs' measured requests reach the server when the limiter let them start
    litellm.completion(
        model="openai/loop", api_base=url, api_key="not-a-secret", messages=[{"role": "user", "content": "warm-up"}]
    )
    ready.wait(60)
    models = models_params(roster(url), **extra)
    ask_many(Gateway(models, job=tag, cache_dir=cache), count, tag)


def run_jobs(url: str, cache: Path, jobs: list[tuple[int, str, dict[str, Any]]]) -> None:
    context = mp.get_context("fork")
    ready = context.Barrier(len(jobs))
    processes = [context.Process(target=_job, args=(url, str(cache), n, tag, extra, ready)) for n, tag, extra in jobs]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
        assert process.exitcode == 0


def test_rpm_holds_across_job_processes(tmp_path: Path) -> None:
    """Two jobs at rpm 240 together send no faster than 240 a minute (one start per 0.25 s)."""
    limits = {"providers": {"openai": {"rpm": 240, "max_concurrency": 8}}}
    with LoopbackServer(latency_s=0.05, max_requests=40, max_seconds=60) as server:
        run_jobs(server.url, tmp_path / "cache", [(8, "a", limits), (8, "b", limits)])
    assert server.stats.accepted == 16 and server.stats.rejected == 0
    times = sorted(t for t, _ in server.stats.arrivals)
    # shared: 9 starts in 2 s (a few more with arrival jitter); per-process limits would let both
    # jobs start one every 0.25 s: all 16 within 2 s
    assert server.max_in_any_window(2.0) <= 11
    # 16 starts 0.25 s apart span 3.75 s (per-process limits: 1.75 s); arrivals jitter a little
    assert times[-1] - times[0] >= 3.0


def test_concurrency_holds_across_job_processes(tmp_path: Path) -> None:
    limits = {"providers": {"openai": {"max_concurrency": 3, "adaptive": False}}}
    with LoopbackServer(latency_s=0.3, max_requests=40, max_seconds=60) as server:
        run_jobs(server.url, tmp_path / "cache", [(6, "a", limits), (6, "b", limits), (6, "c", limits)])
    assert server.stats.accepted == 18
    assert server.stats.max_in_flight == 3


def test_retry_after_is_honoured_and_429s_never_end_the_run(tmp_path: Path) -> None:
    """A provider that takes 3 requests per 2 s: every request is answered in the end, and after
    a 429 no new request starts before Retry-After has passed."""
    with LoopbackServer(latency_s=0.1, limit=3, window_s=2.0, max_requests=60, max_seconds=60) as server:
        gateway = Gateway(
            models_params(roster(server.url), gateway={"rate_limit_patience_s": 30}),
            job="t",
            cache_dir=tmp_path / "cache",
        )
        replies = ask_many(gateway, 9, "q")
    assert replies == ["ok"] * 9
    arrivals = server.stats.arrivals
    assert server.stats.rejected >= 1 and server.stats.max_in_window <= 3
    first_429 = next(t for t, status in arrivals if status == 429)
    # Retry-After said 2 s (rounded up): only requests already on their way arrive meanwhile
    assert not [t for t, _ in arrivals if first_429 + 0.2 < t < first_429 + 1.5]
    calls = gateway.calls_frame()
    assert calls.filter(calls["error_kind"] == "rate_limit").height == server.stats.rejected
    assert calls.filter(calls["error_kind"].is_null()).height == 9


def test_concurrency_backs_off_on_429s_and_grows_back(tmp_path: Path) -> None:
    from pipeline.core.models.limits import shared_limiter

    cache = tmp_path / "cache"
    with LoopbackServer(
        latency_s=0.05, limit=2, window_s=1.0, max_requests=80, max_seconds=60, retry_after=False
    ) as server:
        models = models_params(
            roster(server.url),
            providers={"openai": {"max_concurrency": 8}},
            gateway={"rate_limit_patience_s": 30, "backoff_base_s": 0.2, "backoff_max_s": 1.0},
        )
        gateway = Gateway(models, job="t", cache_dir=cache)
        ask_many(gateway, 8, "burst")
        store = shared_limiter(gateway.limit_store).store
        backed_off = store.state("openai")["concurrency"]
        server.limit = 0  # the provider recovers
        ask_many(gateway, 24, "calm")
        grown = store.state("openai")["concurrency"]
    assert server.stats.rejected >= 2
    assert backed_off < 8
    assert grown > backed_off + 1


def test_a_provider_that_stops_answering_ends_the_job_after_the_patience(tmp_path: Path) -> None:
    with LoopbackServer(limit=1, window_s=600, max_requests=200, max_seconds=60, retry_after=False) as server:
        gateway = Gateway(
            models_params(roster(server.url), gateway={"rate_limit_patience_s": 1.0, "backoff_base_s": 0.1}),
            job="t",
            cache_dir=tmp_path / "cache",
        )
        assert ask_many(gateway, 1, "first") == ["ok"]
        with pytest.raises(TransportError, match="'api'.*gave up.*rate_limit"):
            ask_many(gateway, 1, "second")
    assert server.stats.accepted == 1 and server.stats.rejected >= 3


def test_limit_share_splits_the_limit_between_machines(tmp_path: Path) -> None:
    """Two nodes (two stores, as on a cluster) with limit_share 2 together keep rpm 240."""
    with LoopbackServer(latency_s=0.05, max_requests=40, max_seconds=60) as server:
        jobs = [
            (
                8,
                node,
                {
                    "providers": {"openai": {"rpm": 240}},
                    "gateway": {"limit_share": 2, "limit_store": str(tmp_path / node / "limits.sqlite")},
                },
            )
            for node in ("node1", "node2")
        ]
        run_jobs(server.url, tmp_path / "cache", jobs)
    assert server.stats.accepted == 16
    # each node starts one request per 0.5 s: together about 9 in any 2 s (a few more with jitter);
    # each node at the full limit would send all 16 within 2 s
    assert server.max_in_any_window(2.0) <= 11
