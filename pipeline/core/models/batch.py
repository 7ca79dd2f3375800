"""Batch mode: a job's requests go through the provider's batch API, at about half the price.

A job whose requests do not wait on each other's answers (SKATE answering, the roster check)
runs with `run_job`. With `gateway.batch.enabled` it works in passes:

1. the job's own code runs against a gateway that sends nothing (pipeline.core.models.probe); every
   request the response cache cannot answer is collected;
2. those requests go to the provider as one batch per roster entry (litellm's create_file /
   create_batch), which is polled until done; its answers are written to the response cache and
   the spend ledger, exactly as the direct path writes them;
3. repeat while new requests appear (a job whose later requests depend on earlier answers, such
   as adaptive sampling, needs a few passes; at most gateway.batch.max_passes);
4. the job's code runs once more through the real gateway: every answer comes from the cache,
   so it writes the same tables as the direct path; a request no batch answered (a provider
   without a batch API, a failed batch line) is sent directly then.

Resumable: each submitted batch is recorded under `<cache_dir>/batches/` by a content id of its
requests before it is polled, so a crash or a rerun polls the batch already paid for instead of
submitting a second one. A job that waits longer than max_wait_s stops with BatchPending; rerun
it later. In the calls table the batch's answers are rows with `batch` true and their cost.

A placeholder reply in step 1 (an empty text) can make a job ask for a request the real answers
would not have needed (adaptive sampling past its stopping point); such requests are paid but
never used. The plan (`python -m pipeline plan`) prices both paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

from pipeline.core.artifacts.io import content_id, write_json_atomic
from pipeline.core.artifacts.progress import not_counting_moves
from pipeline.core.models.budget import budget_message
from pipeline.core.models.errors import BudgetExceeded, GatewayError
from pipeline.core.models.gateway import Gateway, choice_logprobs
from pipeline.core.models.litellm_setup import load_litellm
from pipeline.core.models.pricing import price_per_token
from pipeline.core.models.probe import ProbedRequest, ProbeGateway
from pipeline.core.models.roster import BatchSettings, RosterEntry

log = logging.getLogger(__name__)
T = TypeVar("T")

#: providers whose batch API takes OpenAI-format JSONL chat requests through litellm
BATCH_PROVIDERS = frozenset({"openai", "azure", "hosted_vllm", "mistral", "xai"})
DONE = "completed"
FAILED = ("failed", "expired", "cancelled")


class BatchPending(GatewayError):
    """The job's batch is still running after max_wait_s; a rerun polls the same batch."""


def batchable(entry: RosterEntry) -> bool:
    return not entry.is_bot and entry.provider in BATCH_PROVIDERS and "mock_response" not in entry.extra


def run_job(make: Callable[[Gateway], Awaitable[T]], gateway: Gateway) -> T:
    """Run `make(gateway)` (a job's request code), through batches when the params ask for it."""
    return asyncio.run(run_job_async(make, gateway))


async def run_job_async(make: Callable[[Gateway], Awaitable[T]], gateway: Gateway) -> T:
    settings = gateway.settings.batch
    if not settings.enabled:
        return await make(gateway)
    answered: dict[str, dict[str, Any]] = {}
    tried: set[str] = set()
    for _ in range(settings.max_passes):
        probe = ProbeGateway(gateway.models, cache_dir=gateway.cache.root, job=gateway.log.job)
        # the job's notes on placeholder replies, and its moves (the job's progress line counts the last pass)
        with contextlib.redirect_stderr(io.StringIO()), not_counting_moves():
            await make(probe)
        waiting: dict[str, list[ProbedRequest]] = {}
        for request in probe.requests:
            entry = gateway.models.entry(request.roster_name)
            if not request.cached and request.key not in tried and batchable(entry):
                waiting.setdefault(entry.name, []).append(request)
        if not waiting:
            break
        for name, requests in sorted(waiting.items()):
            unique = list({r.key: r for r in requests}.values())
            tried.update(r.key for r in unique)
            try:
                answered.update(await _batch(gateway, gateway.models.entry(name), unique, settings))
            except (BudgetExceeded, BatchPending):
                raise
            except Exception as exc:  # noqa: BLE001 - no batch API here: the direct pass sends them
                log.warning("%s: batch not submitted (%s); its requests go directly", name, exc)
    return await _final_pass(make, gateway, answered)


async def _final_pass(
    make: Callable[[Gateway], Awaitable[T]], gateway: Gateway, answered: dict[str, dict[str, Any]]
) -> T:
    """The job's direct path, told which cached answers its batches just paid for (their cost
    enters its tables as on the direct path, not as free cache hits)."""
    by_id = {key[:16]: stored for key, stored in answered.items()}
    direct = gateway.complete

    async def complete(*args: Any, **kwargs: Any) -> Any:
        done = await direct(*args, **kwargs)
        stored = by_id.get(done.request_id) if done.cache_hit else None
        return done if stored is None else replace(done, cache_hit=False, cost_usd=stored["cost_usd"])

    gateway.complete = complete  # type: ignore[method-assign]
    try:
        result = await make(gateway)
    finally:
        del gateway.complete  # back to the class's method
    _mark_batch_rows(gateway, answered)
    return result


def _mark_batch_rows(gateway: Gateway, answered: dict[str, dict[str, Any]]) -> None:
    """The batch's answers were paid for this job: calls rows with cost and `batch`, not cache hits."""
    by_id = {key[:16]: entry for key, entry in answered.items()}
    rows = []
    for row in gateway.log.rows:
        entry = by_id.pop(row.request_id, None) if row.cache_hit else None
        if entry is not None:
            row = replace(row, cache_hit=False, attempt=1, cost_usd=entry["cost_usd"], batch=True)
        rows.append(row)
    gateway.log.rows = rows


# -- one batch ------------------------------------------------------------------------------
def _state_path(gateway: Gateway, entry: RosterEntry, requests: list[ProbedRequest]) -> Path:
    name = content_id({"model": entry.model, "keys": sorted(r.key for r in requests)})
    return Path(gateway.cache.root) / "batches" / f"{name}.json"


def _provider_kwargs(entry: RosterEntry) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"custom_llm_provider": entry.provider}
    if entry.extra.get("api_base"):
        kwargs["api_base"] = entry.extra["api_base"]
    if entry.api_key_env and os.environ.get(entry.api_key_env):
        kwargs["api_key"] = os.environ[entry.api_key_env]
    return kwargs


def _jsonl(entry: RosterEntry, requests: list[ProbedRequest]) -> bytes:
    assert entry.model is not None
    extra = {k: v for k, v in entry.extra.items() if k not in ("api_base", "mock_response")}
    lines = [
        json.dumps(
            {
                "custom_id": r.key,
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {
                    "model": entry.model.split("/", 1)[1],
                    "messages": list(r.messages),
                    "seed": r.seed,
                    **dict(r.params),
                    **extra,
                },
            },
            sort_keys=True,
        )
        for r in requests
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


async def _batch(
    gateway: Gateway, entry: RosterEntry, requests: list[ProbedRequest], settings: BatchSettings
) -> dict[str, dict[str, Any]]:
    """Submit (or resume) one batch, wait for it, and store its answers; returns them by key."""
    litellm = load_litellm()
    kwargs = _provider_kwargs(entry)
    state_path = _state_path(gateway, entry, requests)
    state = json.loads(state_path.read_text()) if state_path.exists() else None
    if state is None:
        budget = gateway.settings.budget_usd
        spent = gateway.ledger.total_usd()
        if budget is not None and spent >= budget:
            raise BudgetExceeded(budget_message(spent, budget, gateway.ledger.path))
        uploaded = await litellm.acreate_file(
            file=("requests.jsonl", _jsonl(entry, requests)), purpose="batch", **kwargs
        )
        batch = await litellm.acreate_batch(
            completion_window="24h", endpoint="/v1/chat/completions", input_file_id=uploaded.id, **kwargs
        )
        state = {
            "batch_id": batch.id,
            "input_file_id": uploaded.id,
            "model": entry.model,
            "job": gateway.log.job,
            "requests": len(requests),
            "status": batch.status,
        }
        write_json_atomic(state_path, state)  # before polling: a crash now resumes this batch
        log.info("%s: submitted batch %s with %d request(s)", entry.name, batch.id, len(requests))
    if state["status"] == "stored":
        return {}  # answered in an earlier run: its answers are in the cache already
    started = time.monotonic()
    while True:
        batch = await litellm.aretrieve_batch(batch_id=state["batch_id"], **kwargs)
        if batch.status == DONE or batch.status in FAILED:
            break
        if time.monotonic() - started >= settings.max_wait_s:
            raise BatchPending(
                f"roster entry {entry.name!r}: batch {state['batch_id']} ({len(requests)} request(s)) is still "
                f"{batch.status} after {settings.max_wait_s:g}s (gateway.batch.max_wait_s in params/models.yaml). "
                "Rerun later: the same batch is polled, nothing is paid twice."
            )
        await asyncio.sleep(settings.poll_s)
    answers = {}
    if batch.status == DONE and batch.output_file_id:
        content = await litellm.afile_content(file_id=batch.output_file_id, **kwargs)
        answers = _store(gateway, entry, state["batch_id"], _text(content), {r.key for r in requests})
    write_json_atomic(
        state_path, {**state, "status": "stored" if batch.status == DONE else batch.status, "answered": len(answers)}
    )
    return answers


def _text(content: Any) -> str:
    raw = getattr(content, "content", content)
    return raw.decode("utf-8") if isinstance(raw, bytes) else str(getattr(content, "text", raw))


def _store(gateway: Gateway, entry: RosterEntry, batch_id: str, text: str, keys: set[str]) -> dict[str, dict[str, Any]]:
    """Each answered line into the cache and the spend ledger, as the direct path stores it."""

    price = price_per_token(entry, gateway.models, batch=True)
    stored: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        key, response = item.get("custom_id"), (item.get("response") or {})
        body = response.get("body") or {}
        if key not in keys or response.get("status_code", 200) != 200 or not body.get("choices"):
            continue  # a failed line: the job's direct pass sends this request itself
        choice = body["choices"][0]
        usage = body.get("usage") or {}
        tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        entry_record = {
            "model": entry.model,
            "text": (choice.get("message") or {}).get("content") or "",
            "finish_reason": choice.get("finish_reason") or "stop",
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": None if price is None else tokens_in * price[0] + tokens_out * price[1],
            "logprobs": choice_logprobs(SimpleNamespace(logprobs=choice.get("logprobs"))),
            "latency_s": 0.0,
            "fault": None,
            "batch_id": batch_id,
        }
        gateway.cache.put(key, entry_record)
        gateway.ledger.append(
            {
                "key": key,
                "job": gateway.log.job,
                "roster_name": entry.name,
                "model": entry.model,
                "cost_usd": entry_record["cost_usd"],
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
                "batch": batch_id,
            }
        )
        stored[key] = entry_record
    return stored
