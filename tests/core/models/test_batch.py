"""Batch mode against a local fake of OpenAI's batch endpoints, reached as `openai/...` + api_base.

What a user sees: the same tables as the direct path, half the cost, `batch` in the calls table,
and a crash or rerun that polls the batch already submitted instead of paying for a second one.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.models.batch import BatchPending
from pipeline.core.models.budget import SpendLedger
from pipeline.core.models.gateway import Gateway
from pipeline.roster.check import run_roster_check
from tests.conftest import models_params
from tests.fake_openai_batch import FakeOpenAI

PRICE = {"openai/gpt-4o-mini": {"input_usd_per_mtok": 150.0, "output_usd_per_mtok": 600.0}}


def _models(fake: FakeOpenAI, cache: Path, *, batch: bool, max_wait_s: float = 30.0):
    roster = [
        {"name": "random-bot", "bot": "random"},
        {"name": "gpt", "model": "openai/gpt-4o-mini", "extra": {"api_base": fake.api_base}},
    ]
    return models_params(
        roster,
        gateway={
            "cache_dir": str(cache),
            "prices": PRICE,
            "batch": {"enabled": batch, "poll_s": 0.02, "max_wait_s": max_wait_s},
        },
    )


@pytest.fixture(autouse=True)
def _key(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-batch-test")


def test_roster_check_through_a_batch_writes_the_direct_paths_tables_at_half_the_cost(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        direct_models = _models(fake, tmp_path / "direct-cache", batch=False)
        direct = run_roster_check(direct_models, tmp_path / "direct", Gateway(direct_models, job="roster"))
        assert fake.chat_calls == 1 and not fake.batches
        batch_models = _models(fake, tmp_path / "batch-cache", batch=True)
        batched = run_roster_check(batch_models, tmp_path / "batch", Gateway(batch_models, job="roster"))
        assert fake.chat_calls == 1 and len(fake.batches) == 1  # nothing more sent directly

    same = ["name", "model", "kind", "reachable", "reply", "tokens_in", "tokens_out", "error"]
    assert batched.select(same).equals(direct.select(same))
    cost = {r["name"]: r["cost_usd"] for r in direct.iter_rows(named=True)}
    cost_batch = {r["name"]: r["cost_usd"] for r in batched.iter_rows(named=True)}
    assert cost_batch["gpt"] == pytest.approx(cost["gpt"] / 2) and cost_batch["gpt"] > 0

    calls = pl.read_parquet(tmp_path / "batch/calls.parquet")
    gpt = calls.filter(pl.col("roster_name") == "gpt").row(0, named=True)
    assert gpt["batch"] is True and gpt["cache_hit"] is False and gpt["cost_usd"] == pytest.approx(cost_batch["gpt"])
    assert pl.read_parquet(tmp_path / "direct/calls.parquet")["batch"].is_null().all()
    ledger = SpendLedger(tmp_path / "batch-cache" / "spend-ledger.jsonl")
    assert [r["batch"] for r in ledger.records()] == ["batch_1"]  # the budget guard counts it
    assert ledger.total_usd() == pytest.approx(cost_batch["gpt"])


def test_a_rerun_polls_the_submitted_batch_instead_of_paying_twice(tmp_path: Path) -> None:
    with FakeOpenAI(complete=False) as fake:
        models = _models(fake, tmp_path / "cache", batch=True, max_wait_s=0.1)
        with pytest.raises(BatchPending, match="Rerun later: the same batch is polled"):
            run_roster_check(models, tmp_path / "out", Gateway(models, job="roster"))
        assert not (tmp_path / "out/check.parquet").exists()
        states = list((tmp_path / "cache/batches").glob("*.json"))
        assert [json.loads(p.read_text())["batch_id"] for p in states] == ["batch_1"]

        fake.complete = True  # the provider finishes while nobody is watching
        table = run_roster_check(models, tmp_path / "out", Gateway(models, job="roster"))
        assert len(fake.batches) == 1 and fake.chat_calls == 0
        assert fake.polls["batch_1"] >= 2
    assert table.filter(pl.col("name") == "gpt")["reply"].to_list() == ["blue"]
    assert json.loads(states[0].read_text())["status"] == "stored"


@pytest.mark.parametrize("mode", ["sampled", "exact"])
def test_skate_answering_through_batches_matches_the_direct_path(mode: str, tmp_path: Path) -> None:
    import asyncio

    from pipeline.core.models.batch import run_job
    from pipeline.skate.config import SkateParams
    from pipeline.skate.engine import run_answer
    from pipeline.skate.schedule import build_schedule, round_path

    question = {
        "question_id": "q1",
        "round": 1,
        "setter": "setter-bot",
        "description": "sum of a range",
        "program": "print(sum(range(5)))",
        "answer": "10",
        "distractors": ["9", "11", "12", "15", "5", "4", "0", "1", "20"],
    }
    tables = {}
    with FakeOpenAI() as fake:
        for batch in (False, True):
            models = _models(fake, tmp_path / f"cache-{batch}", batch=batch)
            models = models.model_copy(
                update={"roster": [*models.roster, *models_params([{"name": "setter-bot", "bot": "setter"}]).roster]}
            )
            params = SkateParams.model_validate(
                {
                    "players": ["setter-bot"],
                    "answer_only": ["gpt"],
                    "rounds": 1,
                    "answering": {"mode": mode, "min_samples": 10, "max_samples": 40, "exact_option_sets": 6},
                }
            )
            schedule = build_schedule(params, models)
            out = tmp_path / f"out-{batch}"
            path = out / round_path("", schedule.rounds[1].job_id)
            path.parent.mkdir(parents=True)
            path.write_text(
                json.dumps(
                    {"job_id": schedule.rounds[1].job_id, "round": 1, "questions": [question], "no_question": []}
                )
            )
            job = schedule.answers[(1, "gpt")]
            gateway = Gateway(models, job=f"skate/answer/{job.job_id}")
            if batch:
                samples, summary = run_job(
                    lambda gw, p=params, m=models, j=job, o=out: run_answer(p, m, j, o, gw), gateway
                )
            else:
                samples, summary = asyncio.run(run_answer(params, models, job, out, gateway))
            tables[batch] = (samples, summary, gateway.calls_frame())
        direct_chat = fake.chat_calls
        batches = len(fake.batches)
    assert tables[True][0].equals(tables[False][0])  # the same samples, reply for reply
    assert tables[True][1].equals(tables[False][1])  # the same p(correct)
    calls = tables[True][2]
    used = tables[False][0].height
    assert direct_chat == used  # the batch run sent nothing directly
    assert batches >= 1 and calls["batch"].all() and calls.height == used
    if mode == "exact":  # every request is known up front: one batch
        assert batches == 1 and used == 6
        assert tables[True][0]["letter_mass"].min() > 0.5  # log-probabilities came through the batch


def test_batch_spend_counts_against_the_budget(tmp_path: Path) -> None:
    from pipeline.core.models.errors import BudgetExceeded

    with FakeOpenAI() as fake:
        models = _models(fake, tmp_path / "cache", batch=True)
        run_roster_check(models, tmp_path / "first", Gateway(models, job="roster"))
        spent = SpendLedger(tmp_path / "cache" / "spend-ledger.jsonl").total_usd()
        assert spent > 0
        # the batch's spend alone uses up this budget: the next batch is never submitted
        capped = models.model_copy(update={"gateway": models.gateway.model_copy(update={"budget_usd": spent})})
        fresh = capped.model_copy(
            update={"check": capped.check.model_copy(update={"prompt": "Reply with one word: go"})}
        )
        with pytest.raises(BudgetExceeded, match="spend budget reached"):
            run_roster_check(fresh, tmp_path / "second", Gateway(fresh, job="roster"))
        assert len(fake.batches) == 1 and fake.chat_calls == 0
