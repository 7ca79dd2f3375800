"""The budget guard: a spend ledger shared by every job process, checked before each new request."""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.models.budget import LEDGER_NAME, SpendLedger
from pipeline.core.models.errors import BudgetExceeded
from pipeline.core.models.gateway import Gateway
from tests.conftest import models_params
from tests.core.run.test_reliability_support import (
    MOCK_ROSTER,
    calls_of,
    game_targets,
    ledger,
    make_project,
    snakemake,
    write_models,
)

# fake provider usage is 7 prompt + 3 completion tokens: 7 * 1 + 3 * 1 = 10 USD-micro per request
PRICES = {"fake/m1": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 1.0}}
ROSTER = [{"name": "m1", "model": "fake/m1"}]


def ask(gateway: Gateway, i: int) -> str:
    return gateway.complete_sync(gateway.models.entry("m1"), [{"role": "user", "content": f"q{i}"}], seed=i).text


def test_spending_stops_at_the_budget_and_resumes_with_a_higher_one(tmp_path: Path, fake_provider) -> None:
    def gateway(budget: float) -> Gateway:
        models = models_params(ROSTER, gateway={"budget_usd": budget, "prices": PRICES})
        return Gateway(models, job="budget", cache_dir=tmp_path / "cache")

    first = gateway(35e-6)
    for i in range(4):  # 0, 10, 20, 30 micro-USD spent before each: all under 35
        ask(first, i)
    with pytest.raises(BudgetExceeded, match=r"spend budget reached: \$0\.000040 spent of gateway.budget_usd"):
        ask(first, 4)
    assert len(fake_provider.calls) == 4  # the refused request was never sent
    assert first.ledger.total_usd() == pytest.approx(40e-6)

    resumed = gateway(60e-6)
    assert [ask(resumed, i) for i in range(4)] == ["ok"] * 4  # cached: free, allowed, not re-sent
    assert len(fake_provider.calls) == 4 and resumed.ledger.total_usd() == pytest.approx(40e-6)
    ask(resumed, 4)
    ask(resumed, 5)
    with pytest.raises(BudgetExceeded):
        ask(resumed, 6)
    records = SpendLedger(tmp_path / "cache" / LEDGER_NAME).records()
    assert len(records) == 6 and len({r["key"] for r in records}) == 6  # each answer paid once


def test_requests_in_flight_finish_when_the_budget_is_reached(tmp_path: Path, fake_provider) -> None:
    models = models_params(
        ROSTER, gateway={"budget_usd": 1e-6, "prices": PRICES}, providers={"default": {"max_concurrency": 3}}
    )
    gateway = Gateway(models, job="flight", cache_dir=tmp_path / "cache")
    entry = models.entry("m1")
    answer = fake_provider.completion

    async def slow_answer(*args: object, **kwargs: object) -> object:
        await asyncio.sleep(0.3)  # a real provider takes a while: the three are in flight together
        return answer(*args, **kwargs)

    fake_provider.acompletion = slow_answer

    async def burst() -> list[object]:
        return await asyncio.gather(
            *(gateway.complete(entry, [{"role": "user", "content": f"q{i}"}], seed=i) for i in range(6)),
            return_exceptions=True,
        )

    results = asyncio.run(burst())
    done = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    # the first three started together under budget and finished; the rest were never started
    assert len(done) == 3 and len(refused) == 3 and len(fake_provider.calls) == 3


def _append_many(path: str, worker: int) -> None:
    ledger = SpendLedger(Path(path))
    for i in range(200):
        ledger.append({"key": f"{worker}-{i}", "cost_usd": 0.001})


def test_the_ledger_adds_up_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"key": "torn", "cost_usd": 0.5')  # a writer killed mid-line
    context = mp.get_context("fork")
    workers = [context.Process(target=_append_many, args=(str(path), w)) for w in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    reader = SpendLedger(path)
    assert reader.total_usd() == pytest.approx(0.8)  # the torn line counts nothing
    assert len(reader.records()) == 800
    _append_many(str(path), 9)
    assert reader.total_usd() == pytest.approx(1.0)  # incremental read picks up new lines only


@pytest.mark.slow
def test_a_snakemake_run_stops_at_the_budget_and_resumes(tmp_path: Path) -> None:
    """Real jobs, each its own process, priced by litellm (gpt-4o-mini via mock_response)."""
    # a game of this demo sends 2 or 3 requests at $1.35e-05 each: one game fits in $3e-05
    project = make_project(tmp_path / "p", gateway={"budget_usd": 3e-5})
    results = project / "results/whoisspy"
    # one job at a time, so which game runs out of budget is deterministic
    targets = game_targets(project)[:2]  # the two whoisspy games (the rating job adds no spend)
    # the run plan prices both games (from the game's structure) over the budget: Snakemake stops
    # before any request
    refused = snakemake(project, "--cores", "1", *targets, check=False)
    assert refused.returncode != 0 and "No model request was started" in refused.stdout + refused.stderr
    assert not (project / ".cache/responses" / LEDGER_NAME).exists() or not ledger(project)
    # the spend ledger still guards what a plan under-estimates: the jobs Snakemake would run,
    # one after the other, as their rule runs them
    stops = [
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "whoisspy",
                "play",
                Path(target).stem,
                "--params",
                "params/whoisspy.yaml",
                "--models",
                "params/models.yaml",
                "--out",
                "results/whoisspy/games",
            ],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
        )
        for target in targets
    ]
    assert stops[0].returncode == 0 and stops[1].returncode != 0, stops[1].stderr[-2000:]
    assert "error: spend budget reached" in stops[1].stderr and "Raise gateway.budget_usd and rerun" in stops[1].stderr
    played = sorted(p.name for p in (results / "games").glob("*.json"))
    assert len(played) == 1  # the first game finished under budget; the second stopped
    # no partial artifacts: the stopped game left neither its record nor its calls table
    assert sorted(p.name for p in (results / "games").iterdir()) == sorted(
        [played[0], played[0].replace(".json", ".calls.parquet")]
    )
    spent = ledger(project)
    paid_before = {r["key"] for r in spent}
    assert sum(r["cost_usd"] for r in spent) >= 3e-5

    write_models(project, MOCK_ROSTER, {"budget_usd": 1.0})
    snakemake(project, "--rerun-incomplete", "--cores", "1", *targets)
    assert all(json.loads((project / t).read_text())["events"][-1]["type"] == "end" for t in targets)
    spent = ledger(project)
    keys = [r["key"] for r in spent]
    assert len(keys) == len(set(keys)) and paid_before < set(keys)  # nothing paid twice
    calls = calls_of(results).filter(calls_of(results)["roster_name"] == "mock-a")
    # every request paid for is sent exactly once in the games' calls tables, which keep every run's
    # attempts: one answered before the stop, in the game that failed, shows its paid attempt of
    # then and its cache hit on resume; a cache hit is never a request nobody paid for
    sent = calls.filter(~calls["cache_hit"] & calls["error_kind"].is_null())
    sent_ids = sent["request_id"].to_list()
    assert len(sent_ids) == len(set(sent_ids)) and set(sent_ids) == {k[:16] for k in keys}
    assert set(calls.filter(calls["cache_hit"])["request_id"].to_list()) <= set(sent_ids)
