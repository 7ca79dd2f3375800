"""Bad endpoints fail fast (issue 45): a misspelt key of a roster entry's `extra` is refused when the
params are read, naming the file, the entry and the key it misspells; a provider that cannot be
reached is named with its cause on the first failed attempt (the retries that follow are quiet, and
still heal); `ask` and `roster check` give up within their --timeout-s, naming the entry and the
cause. Against the loopback OpenAI-compatible provider and a closed port.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import litellm
import pytest
import yaml

from pipeline.cli import build_parser, main
from pipeline.core.artifacts.params import ParamsError
from pipeline.core.artifacts.schemas import RosterCheckSchema, read_table
from pipeline.core.models.errors import RequestError, TransportError
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.litellm_setup import completion_arguments
from pipeline.core.models.roster import load_models
from pipeline.testing.loopback import FaultMix, LoopbackServer
from tests.conftest import REPO, models_params

KEY_ENV = "BAD_ENDPOINTS_TEST_KEY"
MESSAGES = [{"role": "user", "content": "Reply with the single word: blue"}]
GATEWAY_LOG = "pipeline.core.models.gateway"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "not-a-real-key")


def closed_port() -> int:
    """A port of 127.0.0.1 nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def api_entry(name: str, api_base: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "model": f"openai/{name}", "api_key_env": KEY_ENV, "extra": {"api_base": api_base, **extra}}


def write_models(path: Path, roster: list[dict[str, Any]], **gateway: Any) -> Path:
    cache = path.parent / "cache"
    path.write_text(yaml.safe_dump({"roster": roster, "gateway": {"cache_dir": str(cache), **gateway}}))
    return path


# -- 1. extra keys are checked against what litellm accepts -----------------------------------------


def test_a_misspelt_extra_key_is_refused_naming_the_file_the_entry_and_the_key_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = write_models(
        tmp_path / "models.yaml",
        [
            {"name": "gpt-mini", "model": "openai/gpt-4o-mini"},
            {"name": "my-vllm", "model": "openai/llama", "extra": {"api_bse": "http://127.0.0.1:8000/v1"}},
        ],
    )
    with pytest.raises(ParamsError) as info:
        load_models(models)
    text = str(info.value)
    assert text.startswith(f"{models}: invalid params (1 problem(s))"), text
    assert "roster['my-vllm'].extra: 'api_bse' is no argument of litellm's completion; did you mean 'api_base'?" in text
    # what a user sees from any command that reads the roster: the same message, exit 2, nothing sent
    assert main(["ask", "my-vllm", "hi", "--params", str(models)]) == 2
    assert "did you mean 'api_base'?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("api-base", "api_base"),
        ("API_BASE", "api_base"),
        ("base_uri", "base_url"),
        ("api_verison", "api_version"),
        ("extra_header", "extra_headers"),
        ("vertex_projct", "vertex_project"),
        ("custom_llm_providr", "custom_llm_provider"),
    ],
)
def test_each_misspelling_names_the_argument_it_misspells(written: str, meant: str) -> None:
    with pytest.raises(Exception, match=rf"'{written}' is no argument of litellm's completion; did you mean '{meant}'"):
        models_params([{"name": "m", "model": "openai/m", "extra": {written: "x"}}])


def test_litellm_arguments_and_a_providers_own_arguments_pass() -> None:
    extra = {
        # litellm's own arguments, as real providers need them
        "api_base": "http://127.0.0.1:8000/v1",
        "base_url": "http://127.0.0.1:8000/v1",
        "api_version": "2024-10-21",
        "extra_headers": {"X-Team": "a"},
        "extra_body": {"top_k": 20},
        "custom_llm_provider": "openai",
        "vertex_project": "p",
        "vertex_location": "europe-west4",
        "aws_region_name": "eu-west-1",
        "mock_response": "blue",
        "allowed_openai_params": ["reasoning_effort"],
        # providers' own parameters that litellm's provider configs list
        "top_k": 20,
        "num_ctx": 8192,
        # a provider's own argument litellm does not list, nowhere near one it does: passed on
        "safety_settings": [],
        "reasoning": {"enabled": True},
    }
    entry = models_params([{"name": "m", "model": "openai/m", "extra": extra}]).entry("m")
    assert entry.extra == extra


def test_what_the_gateway_sets_itself_is_refused_in_extra_with_the_field_that_sets_it() -> None:
    with pytest.raises(Exception, match=r"'temperature' is set by sampling.temperature, not in extra"):
        models_params([{"name": "m", "model": "openai/m", "extra": {"temperature": 0.2}}])
    with pytest.raises(Exception, match=r"'timeout' is set by gateway.timeout_s"):
        models_params([{"name": "m", "model": "openai/m", "extra": {"timeout": 5}}])


def test_the_known_arguments_are_litellms_own_lists_remembered_per_version() -> None:
    known = completion_arguments()
    signature = {n for n, p in inspect.signature(litellm.completion).parameters.items() if p.kind is not p.VAR_KEYWORD}
    from litellm.types.utils import all_litellm_params

    assert signature <= known and set(all_litellm_params) <= known
    assert {"top_k", "num_ctx"} <= known  # provider configs' own parameters
    # reading params needs no litellm: a fresh process validates a roster with `extra` from the
    # remembered list without importing it
    code = (
        "import sys, time; from pipeline.core.models.roster import ModelsParams; t = time.perf_counter(); "
        "ModelsParams.model_validate({'roster': [{'name': 'm', 'model': 'openai/m', 'extra': {'api_base': 'x'}}]}); "
        "print(round((time.perf_counter() - t) * 1000), 'litellm' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    elapsed_ms, imported = done.stdout.split()
    assert imported == "False" and int(elapsed_ms) < 500, done.stdout


# -- 2. a provider that cannot be reached is named with its cause on the first failed attempt ---------


async def _first_warning(caplog: pytest.LogCaptureFixture) -> float:
    """Seconds until the gateway's first warning (at most 20), while requests run."""
    started = time.monotonic()
    while time.monotonic() - started < 20 and not any(r.name == GATEWAY_LOG for r in caplog.records):
        await asyncio.sleep(0.05)
    return time.monotonic() - started


@pytest.mark.parametrize(
    ("api_base", "cause"),
    [
        (f"http://127.0.0.1:{closed_port()}/v1", "connection refused"),
        ("http://no-such-host.invalid/v1", "host name not found (DNS:"),
    ],
    ids=["refused", "dns"],
)
def test_an_unreachable_provider_is_named_with_its_cause_at_the_first_attempt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, api_base: str, cause: str
) -> None:
    models = models_params([api_entry("far", api_base)], gateway={"backoff_base_s": 1.0, "backoff_max_s": 60.0})
    gateway = Gateway(models, job="bad-endpoints", cache_dir=tmp_path / "cache")
    entry = models.entry("far")

    async def scenario() -> float:
        # three moves at once: one line for the entry, not one per request or per retry
        tasks = [asyncio.create_task(gateway.complete(entry, MESSAGES, seed=seed)) for seed in range(3)]
        waited = await _first_warning(caplog)
        await asyncio.sleep(1.5)  # the retries that follow are quiet
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return waited

    with caplog.at_level(logging.WARNING, logger=GATEWAY_LOG):
        waited = asyncio.run(scenario())
    lines = [r.getMessage() for r in caplog.records if r.name == GATEWAY_LOG]
    assert waited < 5 and len(lines) == 1, (waited, lines)
    assert lines[0].startswith(f"roster entry 'far' (model openai/far) cannot reach its provider: {cause}"), lines[0]
    assert f"at {api_base}/chat/completions" in lines[0]
    assert "retrying up to 10 times with backoff from 1 s, doubling to at most 60 s" in lines[0]
    assert "fix extra.api_base of the entry" in lines[0]
    # every failed attempt is on record as a transport error, never a move
    kinds = set(gateway.calls_frame()["error_kind"].to_list())
    assert kinds == {"connection"}, kinds


def test_a_provider_that_comes_up_is_reached_by_the_retries(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    port = closed_port()
    models = models_params(
        [api_entry("late", f"http://127.0.0.1:{port}/v1")], gateway={"backoff_base_s": 0.3, "backoff_max_s": 1.0}
    )
    gateway = Gateway(models, job="bad-endpoints", cache_dir=tmp_path / "cache")
    server = LoopbackServer(reply=lambda messages: "blue", max_seconds=60)
    server.port = port  # the server the entry names, started after its first refusal

    async def scenario() -> str:
        task = asyncio.create_task(gateway.complete(models.entry("late"), MESSAGES, seed=1))
        await _first_warning(caplog)
        server.start()
        return (await task).text

    try:
        with caplog.at_level(logging.WARNING, logger=GATEWAY_LOG):
            assert asyncio.run(scenario()) == "blue"
    finally:
        server.stop()
    kinds = gateway.calls_frame()["error_kind"].to_list()
    assert kinds[-1] is None and set(kinds[:-1]) == {"connection"} and len(kinds) >= 2, kinds
    assert len([r for r in caplog.records if r.name == GATEWAY_LOG]) == 1


def test_a_wrong_path_is_refused_at_once_naming_the_url(tmp_path: Path) -> None:
    with LoopbackServer(max_seconds=60) as server:
        models = models_params([api_entry("lost", f"{server.url}/nope")])
        gateway = Gateway(models, job="bad-endpoints", cache_dir=tmp_path / "cache")
        started = time.monotonic()
        with pytest.raises(RequestError) as info:
            gateway.complete_sync(models.entry("lost"), MESSAGES, seed=1)
    assert time.monotonic() - started < 10
    assert "roster entry 'lost' (model openai/lost): request rejected (bad_request)" in str(info.value)
    assert f"(at {server.url}/nope/chat/completions)" in str(info.value)
    assert gateway.calls_frame()["attempt"].to_list() == [1]  # a 404 is not retried


def test_a_deadline_bounds_a_provider_that_never_answers(tmp_path: Path) -> None:
    mix = FaultMix(stall=1.0, stall_s=30.0)  # every request stalls past the deadline
    with LoopbackServer(faults=mix, max_seconds=60) as server:
        models = models_params([api_entry("slow", server.url)])  # gateway.timeout_s: 120 s
        gateway = Gateway(models, job="bad-endpoints", cache_dir=tmp_path / "cache", deadline_s=3)
        started = time.monotonic()
        with pytest.raises(TransportError, match=r"'slow' \(model openai/slow\): no answer within 3 s \(--timeout-s"):
            gateway.complete_sync(models.entry("slow"), MESSAGES, seed=1)
    assert time.monotonic() - started < 8


# -- 3. ask and roster check give up within their --timeout-s -------------------------------------


def test_ask_and_roster_check_wait_60_s_by_default() -> None:
    parser = build_parser()
    assert parser.parse_args(["ask", "m", "hi"]).timeout_s == 60
    assert parser.parse_args(["roster", "check"]).timeout_s == 60


def test_ask_gives_up_within_its_timeout_naming_the_entry_and_the_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    models = write_models(tmp_path / "models.yaml", [api_entry("closed", url)])
    started = time.monotonic()
    code = main(["ask", "closed", "hi", "--params", str(models), "--timeout-s", "3"])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 3 + 5, (code, elapsed, err)
    assert (
        "error: roster entry 'closed' (model openai/closed): no answer within 3 s (--timeout-s; 0: no limit) after "
        in err
    ), err
    assert f"last error connection: connection refused at {url}/chat/completions" in err


@pytest.mark.slow
def test_ask_says_what_it_waits_for_then_why_it_gave_up(tmp_path: Path) -> None:
    """What the user sees from a fresh process: the first refusal at once, then the end."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    models = write_models(tmp_path / "models.yaml", [api_entry("closed", url)])
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "ask", "closed", "hi", "--params", str(models), "--timeout-s", "4"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert lines[0].startswith("WARNING pipeline.core.models.gateway: roster entry 'closed' (model openai/closed) ")
    assert f"cannot reach its provider: connection refused at {url}/chat/completions" in lines[0]
    assert "for at most 4 s (--timeout-s)" in lines[0]
    assert lines[-1].startswith("error: roster entry 'closed' (model openai/closed): no answer within 4 s"), lines


def test_roster_check_fails_an_unreachable_entry_within_its_timeout_and_checks_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = f"http://127.0.0.1:{closed_port()}/v1"
    with LoopbackServer(reply=lambda messages: "Blue.", max_seconds=120) as server:
        roster = [api_entry("closed", closed), api_entry("reachable", server.url), {"name": "rand", "bot": "random"}]
        models = write_models(tmp_path / "models.yaml", roster)
        started = time.monotonic()
        code = main(["roster", "check", "--params", str(models), "--out", str(tmp_path / "roster"), "--timeout-s", "3"])
        elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 0 and elapsed < 3 + 7, (elapsed, err)
    rows = {row["name"]: row for row in read_table(tmp_path / "roster" / "check.parquet", RosterCheckSchema).to_dicts()}
    assert rows["reachable"]["status"] == "ok" and rows["rand"]["status"] == "ok"
    failed = rows["closed"]
    assert failed["status"] == "fail" and not failed["reachable"]
    assert failed["reason"].startswith("roster entry 'closed' (model openai/closed): no answer within 3 s")
    assert f"connection refused at {closed}/chat/completions" in failed["reason"]
    assert "[FAIL] closed" in err and "1 roster entry unreachable" in err
    metrics = json.loads((tmp_path / "roster" / "metrics.json").read_text())
    assert metrics["closed"]["reachable"] is False and metrics["reachable"]["reachable"] is True
