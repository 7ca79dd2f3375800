"""The roster stage: ask every roster entry one small question and report who answers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.batch import run_job
from pipeline.core.budgets import describe
from pipeline.core.io import seed_from, write_json_atomic
from pipeline.core.llm import BudgetExceeded, Gateway, GatewayError
from pipeline.core.players import MoveRequest, is_generic_bot, make_player
from pipeline.core.roster import ModelsParams, RosterEntry
from pipeline.core.schemas import RosterCheckSchema, write_table

JOB = "roster"


async def _check_entry(entry: RosterEntry, models: ModelsParams, gateway: Gateway) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": entry.name,
        "model": entry.model_string,
        "kind": "bot" if entry.is_bot else "model",
        "reachable": False,
        "reply": "",
        "latency_s": 0.0,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "error": None,
        "budgets": describe(entry),
    }
    messages = [{"role": "user", "content": models.check.prompt}]
    try:
        if entry.is_bot and entry.bot is not None and not is_generic_bot(entry.bot):
            # a benchmark's own bot (e.g. `heuristic`) is built by that benchmark's games
            row.update(reachable=True, reply="(scripted bot of each game)")
        elif entry.is_bot:
            player = make_player(entry, gateway, seed_from(JOB))
            reply = await player.act(MoveRequest(messages=messages, key="roster-check", max_words=3))
            row.update(reachable=True, reply=reply.text)
        else:
            completion = await gateway.complete(
                entry, messages, seed=seed_from(JOB, entry.name) % (2**31),
                max_tokens=models.check.max_tokens, temperature=0.0, kind="check",
            )
            row.update(
                reachable=True,
                reply=completion.text,
                latency_s=completion.answer_latency_s,
                tokens_in=completion.tokens_in,
                tokens_out=completion.tokens_out,
                cost_usd=completion.cost_usd,
            )
            if completion.empty_at_token_limit:
                row["error"] = ("empty reply at the token limit: hidden reasoning spent the whole budget; "
                                "raise sampling.reasoning_tokens of this entry in params/models.yaml")
    except BudgetExceeded:
        raise  # out of budget is no verdict on the entry: the job fails, a rerun resumes
    except (GatewayError, ValueError) as exc:
        row["error"] = str(exc)
    return row


async def check_roster(models: ModelsParams, gateway: Gateway) -> pl.DataFrame:
    rows = await asyncio.gather(*(_check_entry(e, models, gateway) for e in models.roster))
    return pl.DataFrame(rows, schema_overrides={"cost_usd": pl.Float64, "error": pl.Utf8})


def run_roster_check(models: ModelsParams, out_dir: str | Path, gateway: Gateway) -> pl.DataFrame:
    """Write check.parquet, calls.parquet and metrics.json under `out_dir`."""
    out = Path(out_dir)
    checked = run_job(lambda gw: check_roster(models, gw), gateway)  # batch API when gateway.batch.enabled
    table = write_table(out / "check.parquet", checked, RosterCheckSchema, sort_by=["name"])
    gateway.write_calls(out / "calls.parquet")
    metrics = {
        row["name"]: {
            # latency and cost depend on the run (a cached answer costs nothing): check.parquet
            # keeps them, the DVC metrics hold what a rerun reproduces
            "reachable": row["reachable"],
        }
        for row in table.iter_rows(named=True)
    }
    write_json_atomic(out / "metrics.json", metrics)
    return table
