"""The roster stage: send every roster entry one small instruction and report who answers it.

An entry is `ok` when it answers and its reply follows the instruction (`check.expect` in
params/models.yaml: the one word the instruction asks for), `warn` when it answers but not as
told (a base model continuing the prompt, a reply cut by the token limit) or replies like a
reasoning model its entry does not declare (pipeline.core.models.reasoning_seen: asked again with a
reasoning allowance, and treated as one from then on), `fail` when it cannot be reached. The
`reason` column says why an entry is not `ok`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts import RosterCheckSchema, seed_from, write_json_atomic, write_table
from pipeline.core.models import (
    BudgetExceeded,
    Gateway,
    GatewayError,
    ModelsParams,
    MoveRequest,
    RosterEntry,
    describe,
    gather_moves,
    is_generic_bot,
    is_reasoning_model,
    make_player,
    run_job,
)
from pipeline.core.models.reasoning_seen import adopt, fix_line, fresh, seen

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
        "budgets": "",  # described once the reply is in: it may show a reasoning model
        "follows": None,
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

            async def ask() -> Any:
                return await gateway.complete(
                    entry,
                    messages,
                    seed=seed_from(JOB, entry.name) % (2**31),
                    max_tokens=models.check.max_tokens,
                    temperature=0.0,
                    kind="check",
                )

            completion = await ask()
            if seen(entry) is None and fresh(entry) is not None and completion.empty_at_token_limit:
                # its reply just showed a reasoning model: asked again with a reasoning allowance
                adopt(entry)
                completion = await ask()
            row.update(
                reachable=True,
                reply=completion.text,
                latency_s=completion.answer_latency_s,
                tokens_in=completion.tokens_in,
                tokens_out=completion.tokens_out,
                cost_usd=completion.cost_usd,
            )
            if models.check.expect is not None:
                row["follows"] = follows(completion.text, models.check.expect)
            if completion.empty_at_token_limit:
                row["error"] = (
                    "empty reply at the token limit: hidden reasoning spent the whole budget; "
                    "raise sampling.reasoning_tokens of this entry in params/models.yaml"
                )
    except BudgetExceeded:
        raise  # out of budget is no verdict on the entry: the job fails, a rerun resumes
    except (GatewayError, ValueError) as exc:
        row["error"] = str(exc)
    adopt(entry)  # seen reasoning in this check: described (and budgeted from now on) as a reasoning model
    row.update(budgets=describe(entry), reasoning=None if entry.is_bot else is_reasoning_model(entry))
    found = seen(entry)
    if found is not None and row["reachable"] and not row["error"]:
        row["error"] = fix_line(entry, found)
    return {**row, **verdict(row, models.check.expect)}


#: what may surround the asked-for word in a reply that still follows the instruction
_WRAPPING = " \t\r\n\"'`*_.,;:!?()[]{}<>"


def follows(reply: str, expect: str) -> bool:
    """Whether `reply` is the word `expect`, case, quotes, markdown and end punctuation aside."""
    return reply.strip(_WRAPPING).casefold() == expect.strip(_WRAPPING).casefold()


def verdict(row: dict[str, Any], expect: str | None) -> dict[str, Any]:
    """`status` (ok, warn, fail) and `reason` (why not ok; null when ok) of one checked entry."""
    if not row["reachable"]:
        return {"status": "fail", "reason": row["error"] or "no answer"}
    if row["error"]:
        return {"status": "warn", "reason": row["error"]}
    if row["follows"] is False:
        reply = row["reply"].strip()
        shown = repr(reply[:60] + ("..." if len(reply) > 60 else ""))
        return {
            "status": "warn",
            "reason": (
                f"does not follow the check's instruction: asked for the single word {expect!r}, replied {shown} "
                "(a base model, or a prompt format the model was not tuned on?); its game moves will read the same"
            ),
        }
    return {"status": "ok", "reason": None}


async def check_roster(models: ModelsParams, gateway: Gateway) -> pl.DataFrame:
    rows = await gather_moves(*(_check_entry(e, models, gateway) for e in models.roster))
    return pl.DataFrame(
        rows,
        schema_overrides={
            "cost_usd": pl.Float64,
            "error": pl.Utf8,
            "follows": pl.Boolean,
            "reasoning": pl.Boolean,
            "reason": pl.Utf8,
        },
    )


def run_roster_check(models: ModelsParams, out_dir: str | Path, gateway: Gateway) -> pl.DataFrame:
    """Write check.parquet, calls.parquet and metrics.json under `out_dir`."""
    out = Path(out_dir)
    checked = run_job(lambda gw: check_roster(models, gw), gateway)  # batch API when gateway.batch.enabled
    table = write_table(out / "check.parquet", checked, RosterCheckSchema, sort_by=["name"])
    gateway.write_calls(out / "calls.parquet")
    # not a benchmark's metrics record (core/artifacts/metrics_record.py): no rating and no games,
    # and the leaderboard never reads it; DVC tracks it to show a roster entry that stopped answering
    metrics = {
        row["name"]: {
            # latency and cost depend on the run (a cached answer costs nothing): check.parquet
            # keeps them, the DVC metrics hold what a rerun reproduces
            "reachable": row["reachable"],
            "follows": row["follows"],  # followed the check's instruction (null: a bot, or unreachable)
        }
        for row in table.iter_rows(named=True)
    }
    write_json_atomic(out / "metrics.json", metrics)
    return table
