"""The run plan: what a run would do and what it would cost, before it spends anything.

Which jobs run, and why, is Snakemake's own answer (its dry run and its rerun reasons); this
module never re-derives it. For each job a benchmark's estimator (pipeline.core.run.plan_estimators) says which
roster entries it calls and how often, running the job's own request code through a gateway
that sends nothing (pipeline.core.models.probe), so the response cache's hits are counted with the
gateway's own keys. Tokens per call come from the calls tables of earlier runs where they exist
(measured), else from the prompt's length and the reply cap (an upper bound). Prices come from
the roster's own `gateway.prices`, else litellm's bundled price map; local models cost 0.

On a resumed run the plan counts only what is left: Snakemake plans only the unfinished jobs,
and a shard job's estimate leaves out its games whose outputs are complete (pipeline.core.run.estimates),
as the shard itself skips them. The attempts of jobs that never finished (failed or killed runs,
journaled as they happened: pipeline.core.models.journal) are summed in the plan and written beside it
(`unfinished_calls.parquet`) until a run finishes those jobs.

After a run, `compare` sets the plan against the spend ledger's lines written since the plan
was made (pipeline.core.models.budget) and reports the error per benchmark and model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts.io import write_json_atomic
from pipeline.core.models.batch import batchable
from pipeline.core.models.budget import SpendLedger
from pipeline.core.models.pricing import price_per_token
from pipeline.core.models.reply_budgets import reasoning_allowance
from pipeline.core.models.roster import ModelsParams, RosterEntry

RERUN_TRIGGERS = ("code", "input", "params", "software-env")
NO_MODEL = "-"  # jobs that call no model (collecting, rating, reporting)


class PlanError(RuntimeError):
    """The plan cannot be made (the workflow does not parse, a target is unknown)."""


@dataclass(frozen=True)
class PlannedJob:
    """One job Snakemake would run, with its reason in Snakemake's words."""

    rule: str
    reason: str
    wildcards: dict[str, str] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    command: str = ""  # its shell command as Snakemake prints it (a shard's game ids are there)
    # what changed since the last run, for a new job (pipeline.core.run.replays): which roster entry or
    # params field gave the game a new content id; Snakemake only sees that its output is missing
    change: str = ""

    @property
    def why(self) -> str:
        word = why(self.reason)
        return f"{word}: {self.change}" if self.change else word


@dataclass(frozen=True)
class CallEstimate:
    """The model requests of one job for one roster entry."""

    model: str  # roster name, or NO_MODEL
    kind: str  # the calls table's job kind, e.g. skate/answer: where measured tokens come from
    calls: int  # provider requests the job makes (cached ones included)
    cached: int  # of them, answered by the response cache
    prompt_tokens: int  # estimated input tokens of the uncached calls (from the prompts)
    reply_tokens: int  # output tokens of the uncached calls at the reply cap (an upper bound)
    note: str = ""  # how the count was made, when it is not exact
    batchable: bool = False  # the job can send these through the provider's batch API (pipeline.core.models.batch)
    tokens_known: bool = True  # False: no prompt to measure yet (cost unknown unless the model is free)
    # `calls` and the tokens above are the job's bound: the most it can send. What it is expected to
    # send (earlier games' means, or the game's structure at its usual length); None: the bound.
    expected_calls: float | None = None  # cached ones included, as `calls`
    expected_prompt_tokens: float | None = None  # of the expected uncached calls
    expected_reply_tokens: float | None = None
    unbounded: bool = False  # True: no bound can be stated (`note` says why); a budgeted run refuses

    @property
    def expected(self) -> tuple[float, float, float]:
        """(calls, prompt tokens, reply tokens) expected; the bound where no expectation is given."""
        return (
            float(self.calls if self.expected_calls is None else self.expected_calls),
            float(self.prompt_tokens if self.expected_prompt_tokens is None else self.expected_prompt_tokens),
            float(self.reply_tokens if self.expected_reply_tokens is None else self.expected_reply_tokens),
        )


# -- which jobs, and why: Snakemake's dry run ---------------------------------------------------
_REASONS = (  # Snakemake's reason text -> the plan's word, first match wins
    ("Code has changed", "changed code"),
    ("Params have changed", "changed params"),
    ("Software environment", "changed software"),
    ("Forced execution", "forced"),
    ("Incomplete output", "incomplete"),
    ("Missing output", "new job"),
    ("input", "changed input"),
)


def why(reason: str) -> str:
    for text, word in _REASONS:
        if text.lower() in reason.lower():
            return word
    return reason.split(":")[0].strip().lower() or "unknown"


SHELL_COMMAND = "Shell command: "


def parse_dry_run(text: str) -> list[PlannedJob]:
    """The jobs of `snakemake --dry-run`'s printed plan (one block per job)."""
    jobs: list[PlannedJob] = []
    block: dict[str, str] | None = None
    for line in text.splitlines():
        start = re.match(r"^(?:local)?rule (\S+):$", line)
        if start:
            if block is not None:
                jobs.append(_job(block))
            block = {"rule": start.group(1)}
        elif line.startswith(SHELL_COMMAND):  # after its job's block (--printshellcmds)
            if block is not None:
                jobs.append(_job(block))
                block = None
            if jobs:
                jobs[-1] = dataclasses.replace(jobs[-1], command=line.removeprefix(SHELL_COMMAND))
        elif block is not None and re.match(r"^    \w[\w ]*: ", line):
            name, _, value = line.strip().partition(": ")
            block[name] = value
        elif block is not None and not line.startswith("    "):
            jobs.append(_job(block))
            block = None
    if block is not None:
        jobs.append(_job(block))
    return jobs


def _job(block: dict[str, str]) -> PlannedJob:
    wildcards = dict(part.strip().split("=", 1) for part in block.get("wildcards", "").split(",") if "=" in part)
    outputs = tuple(o.strip() for o in block.get("output", "").split(",") if o.strip())
    return PlannedJob(block["rule"], block.get("reason", ""), wildcards, outputs)


def dry_run(
    targets: Sequence[str],
    *,
    root: str | os.PathLike[str] = ".",
    snakefile: str = "Snakefile",
    config: Sequence[str] = (),
) -> list[PlannedJob]:
    """Snakemake's plan for `targets` (its default target when none), with the project's triggers.

    `config`: more Snakemake arguments before the targets (`--config params=DIR` chooses the params
    directory)."""
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--dry-run",
        "--nolock",
        "--printshellcmds",
        "--snakefile",
        snakefile,
        "--rerun-triggers",
        *RERUN_TRIGGERS,
        *config,
        "--cores",
        "1",
        *targets,
    ]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        # Snakemake reports a failing input function on stdout, its profile line on stderr
        tail = "\n".join(f"{result.stdout}\n{result.stderr}".strip().splitlines()[-12:])
        raise PlanError(f"snakemake --dry-run {' '.join(targets)} failed in {root}:\n{tail}")
    return parse_dry_run(result.stdout + "\n" + result.stderr)


def jobs_of_dag(dag: Any) -> list[PlannedJob]:
    """The jobs a running Snakemake's DAG will run (for the onstart guard: no second parse)."""
    planned = []
    for job in dag.needrun_jobs():
        wildcards = {k: str(v) for k, v in dict(job.wildcards_dict).items()}
        try:
            command = str(job.shellcmd or "")
        except Exception:  # noqa: BLE001 - a command that cannot be shown yet: the job is still planned
            command = ""
        planned.append(PlannedJob(job.rule.name, str(dag.reason(job)), wildcards, tuple(map(str, job.output)), command))
    return planned


# -- tokens and prices ------------------------------------------------------------------------
def call_kind(job: str) -> str:
    """`skate/answer/1a2b...` -> `skate/answer`: the calls table's job without its content id."""
    parts = job.split("/")
    return "/".join(p for p in parts if not re.fullmatch(r"[0-9a-f]{12,}", p))


def measured_calls(results: str | os.PathLike[str]) -> pl.DataFrame:
    """Every answered provider request of earlier runs (one row per request, deduplicated)."""
    frames = []
    columns = {
        "job": pl.Utf8,
        "roster_name": pl.Utf8,
        "request_id": pl.Utf8,
        "attempt": pl.Int64,
        "tokens_in": pl.Int64,
        "tokens_out": pl.Int64,
        "cache_hit": pl.Boolean,
        "error_kind": pl.Utf8,
        "tokens_reasoning": pl.Int64,
    }
    for path in sorted(Path(results).rglob("*calls.parquet")):
        try:
            present = set(pl.read_parquet_schema(path))
            frame = pl.read_parquet(path, columns=[c for c in columns if c in present])
        except Exception:  # noqa: BLE001 - a torn or foreign file only loses its history
            continue
        if "tokens_reasoning" not in frame.columns:  # written before the column existed
            frame = frame.with_columns(pl.lit(None, pl.Int64).alias("tokens_reasoning"))
        frames.append(frame.select(list(columns)))
    if not frames:
        return pl.DataFrame(schema={**columns, "kind": pl.Utf8})
    calls = pl.concat([f.cast(columns) for f in frames])  # type: ignore[arg-type]  # polars' stubs want its own key types
    answered = calls.filter(~pl.col("cache_hit") & pl.col("error_kind").is_null() & (pl.col("attempt") > 0))
    return answered.unique(["job", "request_id", "attempt"]).with_columns(
        pl.col("job").map_elements(call_kind, return_dtype=pl.Utf8).alias("kind")
    )


@dataclass(frozen=True)
class TokenHistory:
    """Mean input, output and reasoning tokens per answered call, by (roster name, job kind)."""

    means: dict[tuple[str, str], tuple[float, float, int]]
    reasoning: dict[tuple[str, str], float] = field(default_factory=dict)

    @classmethod
    def load(cls, results: str | os.PathLike[str]) -> TokenHistory:
        calls = measured_calls(results).filter(pl.col("tokens_in") + pl.col("tokens_out") > 0)
        grouped = calls.group_by(["roster_name", "kind"]).agg(
            pl.col("tokens_in").mean().alias("i"),
            pl.col("tokens_out").mean().alias("o"),
            pl.len().alias("n"),
            pl.col("tokens_reasoning").fill_null(0).mean().alias("r"),
        )
        rows = list(grouped.iter_rows(named=True))
        return cls(
            {(r["roster_name"], r["kind"]): (r["i"], r["o"], r["n"]) for r in rows},
            {(r["roster_name"], r["kind"]): float(r["r"] or 0.0) for r in rows},
        )

    def per_call(self, model: str, kind: str) -> tuple[float, float] | None:
        found = self.means.get((model, kind))
        return None if found is None else (found[0], found[1])

    def reasoning_per_call(self, model: str, kind: str) -> float:
        return self.reasoning.get((model, kind), 0.0)


# -- the plan table ---------------------------------------------------------------------------
#: the bound's prompt tokens over the estimate's (4 characters a token): a bound for English prose
#: and code, whose tokenizers give 3.2 or more characters a token (text in other scripts can exceed it)
PROMPT_BOUND_FACTOR = 1.25

PLAN_COLUMNS: dict[str, Any] = {
    "benchmark": pl.Utf8,
    "model": pl.Utf8,
    "jobs": pl.Int64,
    "why": pl.Utf8,
    "calls": pl.Int64,  # the bound: the most requests the jobs can make (cached ones included)
    "cached_calls": pl.Int64,
    "paid_calls": pl.Int64,  # the bound on paid requests
    "expected_calls": pl.Int64,  # paid requests expected (earlier games' means, else the game's structure)
    "tokens_in": pl.Int64,  # the bound
    "tokens_out": pl.Int64,  # the bound: every reply at its cap, a reasoning allowance included
    "tokens_reasoning": pl.Int64,  # inside tokens_out
    "expected_tokens_in": pl.Int64,
    "expected_tokens_out": pl.Int64,
    "cost_usd": pl.Float64,  # the bound (null: no bound, or no price); what the budget check reads
    "expected_cost_usd": pl.Float64,
    "batch_cost_usd": pl.Float64,  # the bound through the provider's batch API
    "tokens_from": pl.Utf8,
    "note": pl.Utf8,
}


@dataclass
class _Row:
    jobs: set[str] = field(default_factory=set)
    reasons: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    cached: int = 0
    expected_paid: float = 0.0
    tokens_in: float = 0.0
    tokens_out: float = 0.0
    tokens_reasoning: float = 0.0  # inside tokens_out
    expected_in: float = 0.0
    expected_out: float = 0.0
    cost: float | None = 0.0
    expected_cost: float | None = 0.0
    batch_cost: float | None = 0.0
    sources: set[str] = field(default_factory=set)
    notes: set[str] = field(default_factory=set)


def plan_table(
    estimates: Iterable[tuple[str, PlannedJob, CallEstimate]], models: ModelsParams, history: TokenHistory
) -> pl.DataFrame:
    """One row per (benchmark, model): jobs and why; calls, tokens and cost as a bound (the most the
    jobs can spend: every reply at its cap) and as expected (measured tokens per call where earlier
    calls of the model and kind exist, else the estimators' expectation); cache hits."""
    rows: dict[tuple[str, str], _Row] = {}
    prices: dict[tuple[str, bool], tuple[float, float] | None] = {}
    for benchmark, job, est in estimates:
        row = rows.setdefault((benchmark, est.model), _Row())
        job_name = f"{job.rule}:{','.join(job.wildcards.values())}"
        if job_name not in row.jobs:
            row.jobs.add(job_name)
            row.reasons[job.why] = row.reasons.get(job.why, 0) + 1
        row.calls += est.calls
        row.cached += est.cached
        paid = est.calls - est.cached
        expected_calls, expected_prompt, expected_reply = est.expected
        expected_paid = max(0.0, expected_calls - est.cached)
        row.expected_paid += expected_paid
        measured = history.per_call(est.model, est.kind)
        row.notes.update(part for part in est.note.split("; ") if part)  # one note once, however many jobs
        if est.unbounded:
            row.cost = row.batch_cost = row.expected_cost = None  # no bound: the cost cannot be promised
            row.sources.add("unknown")
            continue
        bound_tokens = (est.prompt_tokens * PROMPT_BOUND_FACTOR, float(est.reply_tokens))
        expected_tokens = (
            (expected_paid * measured[0], expected_paid * measured[1])
            if measured is not None
            else (expected_prompt, expected_reply)
        )
        if paid and not est.tokens_known and measured is None:
            row.sources.add("unknown")
        elif paid:
            row.sources.add("measured" if measured is not None else "prompt+cap")
        if paid and est.tokens_known:
            row.tokens_in += bound_tokens[0]
            row.tokens_out += bound_tokens[1]
            if est.model != NO_MODEL:  # estimators count the whole allowance inside reply_tokens
                row.tokens_reasoning += paid * reasoning_allowance(models.entry(est.model))
        if expected_paid and (est.tokens_known or measured is not None):
            row.expected_in += expected_tokens[0]
            row.expected_out += expected_tokens[1]
        if est.model == NO_MODEL or not (paid or expected_paid):
            continue
        entry = models.entry(est.model)
        by_batch = est.batchable and batchable(entry)
        direct = _priced(prices, entry, models, False)
        batch = _priced(prices, entry, models, True) if by_batch else direct
        now = batch if by_batch and models.gateway.batch.enabled else direct
        if direct is None:
            row.notes.add(f"no price for {entry.model}: set gateway.prices")
        free = now is not None and not any(now)
        if est.tokens_known or free:
            row.cost = _add(row.cost, bound_tokens, now)
            row.batch_cost = _add(row.batch_cost, bound_tokens, batch)
        else:  # tokens unknown: the bound is unknown unless the model is free
            row.cost = row.batch_cost = None
        if est.tokens_known or measured is not None or free:
            row.expected_cost = _add(row.expected_cost, expected_tokens, now)
        else:
            row.expected_cost = None
    records = [
        {
            "benchmark": b,
            "model": m,
            "jobs": len(r.jobs),
            "why": ", ".join(f"{k} {v}" for k, v in sorted(r.reasons.items())),
            "calls": r.calls,
            "cached_calls": r.cached,
            "paid_calls": r.calls - r.cached,
            "expected_calls": round(r.expected_paid),
            "tokens_in": round(r.tokens_in),
            "tokens_out": round(r.tokens_out),
            "tokens_reasoning": round(r.tokens_reasoning),
            "expected_tokens_in": round(r.expected_in),
            "expected_tokens_out": round(r.expected_out),
            "cost_usd": None if r.cost is None else round(r.cost, 6),
            "expected_cost_usd": None if r.expected_cost is None else round(r.expected_cost, 6),
            "batch_cost_usd": None if r.batch_cost is None else round(r.batch_cost, 6),
            "tokens_from": "+".join(sorted(r.sources)) or "-",
            "note": "; ".join(sorted(r.notes)),
        }
        for (b, m), r in rows.items()
    ]
    frame = pl.DataFrame(records, schema=PLAN_COLUMNS) if records else pl.DataFrame(schema=PLAN_COLUMNS)
    return frame.sort(["benchmark", "model"])


def _priced(
    cache: dict[tuple[str, bool], tuple[float, float] | None], entry: RosterEntry, models: ModelsParams, batch: bool
) -> tuple[float, float] | None:
    if (entry.name, batch) not in cache:
        cache[(entry.name, batch)] = price_per_token(entry, models, batch=batch)
    return cache[(entry.name, batch)]


def _add(total: float | None, tokens: tuple[float, float], price: tuple[float, float] | None) -> float | None:
    if total is None or price is None:
        return None  # unknown stays unknown: never a made-up 0
    return total + tokens[0] * price[0] + tokens[1] * price[1]


@dataclass(frozen=True)
class Plan:
    table: pl.DataFrame
    budget_usd: float | None
    spent_usd: float  # the ledger's total when the plan was made
    ledger: str
    created: float
    targets: tuple[str, ...]
    # attempts journaled by jobs that never wrote their calls table: failed or killed runs not yet
    # resumed (pipeline.core.models.journal); their spend is in spent_usd, their rows in no other table
    unfinished: pl.DataFrame = field(default_factory=pl.DataFrame)
    cache_dir: str = ""  # the response cache, whose calls/ folder holds the jobs' journals
    # adaptive benchmarks: rounds so far, expected further games and their cost (core.run.adaptive_plan);
    # an expectation beside the table, not part of `cost_usd` (the budget check prices jobs, not forecasts)
    adaptive: tuple[Any, ...] = ()
    # attempts journaled by jobs this plan does not run (a game removed from the schedule, or a job
    # outside the targets): not unfinished work of this run, said apart with how to clear them
    not_planned: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def cost_usd(self) -> float | None:
        costs = self.table["cost_usd"]
        return None if costs.null_count() else float(costs.sum())

    @property
    def expected_cost_usd(self) -> float | None:
        costs = self.table["expected_cost_usd"]
        return None if costs.null_count() else float(costs.sum())

    @property
    def batch_cost_usd(self) -> float | None:
        costs = self.table["batch_cost_usd"]
        return None if costs.null_count() else float(costs.sum())

    @property
    def left_usd(self) -> float | None:
        return None if self.budget_usd is None else self.budget_usd - self.spent_usd

    def exceeds_budget(self) -> bool:
        """Over the budget left, or budgeted and not priceable: a budgeted run never starts on
        work whose cost it cannot see."""
        left, cost = self.left_usd, self.cost_usd
        return left is not None and (cost is None or cost > left)

    def unfinished_summary(self) -> dict[str, Any]:
        """The unfinished jobs' attempts: how many, of how many jobs, what they cost, their faults."""
        return attempts_summary(self.unfinished)

    def not_planned_summary(self) -> dict[str, Any]:
        """The journals of jobs this plan does not run: as `unfinished_summary`, with the jobs and
        their journal files (what to delete once they are known to be gone from the schedule)."""
        from pipeline.core.models.journal import journal_path

        jobs = sorted(self.not_planned["job"].unique().to_list()) if not self.not_planned.is_empty() else []
        journals = [str(path) for job in jobs if (path := journal_path(self.cache_dir, job)) is not None]
        return {**attempts_summary(self.not_planned), "job_names": jobs, "journals": journals}

    def to_json(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "targets": list(self.targets),
            "budget_usd": self.budget_usd,
            "spent_usd": round(self.spent_usd, 6),
            "left_usd": None if self.left_usd is None else round(self.left_usd, 6),
            "cost_usd": self.cost_usd,
            "expected_cost_usd": self.expected_cost_usd,
            "batch_cost_usd": self.batch_cost_usd,
            "ledger": self.ledger,
            "rows": self.table.to_dicts(),
            "unfinished": self.unfinished_summary(),
            "not_planned": self.not_planned_summary(),
            "cache_dir": self.cache_dir,
            "adaptive": [item.to_json() for item in self.adaptive],
        }


def make_plan(
    targets: Sequence[str],
    estimates: Iterable[tuple[str, PlannedJob, CallEstimate]],
    models: ModelsParams,
    *,
    root: str | os.PathLike[str] = ".",
    results: str = "results",
) -> Plan:
    from pipeline.core.models.journal import unfinished_calls

    estimates = list(estimates)
    ledger = SpendLedger(_ledger_path(models, root))
    table = plan_table(estimates, models, TokenHistory.load(Path(root) / results))
    cache_dir = Path(root) / models.gateway.cache_dir
    unfinished, not_planned = split_unfinished(unfinished_calls(cache_dir), estimates)
    return Plan(
        table,
        models.gateway.budget_usd,
        ledger.total_usd(),
        str(ledger.path),
        time.time(),
        tuple(targets),
        unfinished,
        str(cache_dir),
        not_planned=not_planned,
    )


_CONTENT_ID = re.compile(r"[0-9a-f]{12,}")  # a job's content id, as its wildcards, outputs and command hold it


def split_unfinished(
    rows: pl.DataFrame, estimates: Sequence[tuple[str, PlannedJob, CallEstimate]]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The journaled attempts (`unfinished_calls`) of the jobs these planned jobs finish, and those of
    any other job. A journal names its job by content id (`whoisspy/<game id>`): it is this run's
    when a planned job holds the id (its wildcards, its outputs, or its command: a shard's games), or,
    for a job without an id (`roster`) or a benchmark with a planned model job that shows none (a
    whole game in one job), when the plan runs a job of its benchmark."""
    if rows.is_empty():
        return rows, rows
    ids: set[str] = set()
    benches: set[str] = set()
    opaque: set[str] = set()  # benchmarks with a planned model job whose inner jobs' ids do not show
    for benchmark, job, estimate in estimates:
        found = _CONTENT_ID.findall(" ".join([*job.wildcards.values(), *job.outputs, job.command]))
        ids.update(found)
        benches.add(benchmark)
        if not found and (estimate.model != NO_MODEL or estimate.note):
            opaque.add(benchmark)

    def planned(job: str) -> bool:
        parts = job.split("/")
        if _CONTENT_ID.fullmatch(parts[-1]):
            return parts[-1] in ids or parts[0] in opaque
        return parts[0] in benches

    ours = [name for name in rows["job"].unique().to_list() if planned(name)]
    return rows.filter(pl.col("job").is_in(ours)), rows.filter(~pl.col("job").is_in(ours))


def attempts_summary(rows: pl.DataFrame) -> dict[str, Any]:
    """Journaled attempts: how many, of how many jobs, what they cost, their faults."""
    if rows.is_empty():
        return {"attempts": 0, "jobs": 0, "answered": 0, "failed": 0, "cost_usd": 0.0}
    failed = rows.filter(pl.col("error_kind").is_not_null() & (pl.col("error_kind") != "empty")).height
    return {
        "attempts": rows.height,
        "jobs": rows["job"].n_unique(),
        "answered": rows.height - failed,
        "failed": failed,
        "cost_usd": round(float(rows["cost_usd"].fill_null(0.0).sum()), 6),
    }


def _ledger_path(models: ModelsParams, root: str | os.PathLike[str]) -> Path:
    from pipeline.core.models.budget import LEDGER_NAME

    settings = models.gateway
    return Path(root) / settings.ledger if settings.ledger else Path(root) / settings.cache_dir / LEDGER_NAME


UNFINISHED_CALLS = "unfinished_calls.parquet"


def save_plan(plan: Plan, out: str | os.PathLike[str]) -> Path:
    """plan.json, and beside it the unfinished jobs' attempts as a calls table (when there are any)."""
    path = Path(out) / "plan.json"
    write_json_atomic(path, plan.to_json())
    save_unfinished(plan.unfinished, out)
    return path


def save_unfinished(unfinished: pl.DataFrame, out: str | os.PathLike[str]) -> None:
    """The unfinished jobs' attempts beside plan.json; none: the file goes (every attempt of the
    jobs resumed since is in its job's calls table)."""
    from pipeline.core.artifacts.schemas import CallsSchema, write_table

    path = Path(out) / UNFINISHED_CALLS
    if unfinished.is_empty():
        path.unlink(missing_ok=True)
    else:
        write_table(path, unfinished, CallsSchema, sort_by=["job", "roster_name", "request_id", "attempt"])


# -- what to say --------------------------------------------------------------------------------
def _money(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value == 0 or value >= 0.01 else f"${value:.6f}"


def render_plan(plan: Plan) -> str:
    lines = [
        (
            f"{'benchmark':<12} {'model':<18} {'jobs':>4}  {'calls most/expected':>19} {'cached':>7} "
            f"{'tokens in':>10} {'tokens out':>10} {'reasoning':>10} {'cost most/expected':>21} {'batch cost':>10}  why"
        )
    ]
    for r in plan.table.iter_rows(named=True):
        lines.append(
            f"{r['benchmark']:<12} {r['model']:<18} {r['jobs']:>4}  {r['calls']:>9}/{r['expected_calls'] + r['cached_calls']:<9} "
            f"{r['cached_calls']:>7} {r['tokens_in']:>10} {r['tokens_out']:>10} {r['tokens_reasoning']:>10} "
            f"{_money(r['cost_usd']):>10}/{_money(r['expected_cost_usd']):<10} "
            f"{_money(r['batch_cost_usd']):>10}  {r['why']}" + (f"  [{r['note']}]" if r["note"] else "")
        )
    t = plan.table
    lines.append(
        "'most' is a bound (every reply at its cap, every re-ask the rules allow, prompts at 3.2 characters "
        "a token), which the budget check reads; 'expected' comes from earlier games of the model, else the "
        "game's structure"
    )
    lines.append(
        f"total: {t['jobs'].sum()} job(s), at most {t['calls'].sum()} call(s) (about "
        f"{int(t['expected_calls'].sum()) + int(t['cached_calls'].sum())} expected) of which {t['cached_calls'].sum()} "
        f"from the cache, at most {t['tokens_out'].sum()} output tokens ({t['tokens_reasoning'].sum()} of them "
        f"reasoning); cost at most {_money(plan.cost_usd)}, about {_money(plan.expected_cost_usd)} expected "
        f"({_money(plan.batch_cost_usd)} at most with gateway.batch.enabled); spent so far {_money(plan.spent_usd)}"
        + ("" if plan.budget_usd is None else f", budget ${plan.budget_usd:g}, left {_money(plan.left_usd)}")
    )
    done = plan.unfinished_summary()
    if done["attempts"]:
        lines.append(
            f"unfinished jobs (failed or killed runs): {done['attempts']} provider attempt(s) of {done['jobs']} job(s), "
            f"{done['answered']} answered (in the cache: a resumed job does not pay them again), {done['failed']} failed, "
            f"{_money(done['cost_usd'])} spent (inside 'spent so far'); their rows: {UNFINISHED_CALLS} beside plan.json, "
            "and each job's calls table once it finishes"
        )
    lines += _not_planned_lines(plan)
    lines += [item.line() for item in plan.adaptive]
    if plan.budget_usd is not None and plan.cost_usd is None:
        lines.append(
            "the budget cannot be checked in advance: part of the cost is unknown (see the notes), "
            "so a budgeted run refuses to start"
        )
    return "\n".join(lines)


def _not_planned_lines(plan: Plan, shown: int = 3) -> list[str]:
    other = plan.not_planned_summary()
    if not other["attempts"]:
        return []
    journals = other["journals"]
    more = f" and {len(journals) - shown} more (plan.json: not_planned.journals)" if len(journals) > shown else ""
    return [
        f"journals of {other['jobs']} job(s) this run does not plan (a game removed from the schedule, or a job "
        f"outside these targets): {other['attempts']} provider attempt(s), {_money(other['cost_usd'])} spent "
        "(inside 'spent so far'), not counted above. Once their games are gone from the schedule, clear them: "
        f"rm {' '.join(journals[:shown])}{more}"
    ]


def what_to_cut(plan: Plan, limit: int = 3) -> str:
    """The message of a plan over budget: the costliest rows first, with the knobs that cut them."""
    if plan.cost_usd is None:
        return _unpriced(plan)
    rows = plan.table.filter(pl.col("cost_usd") > 0).sort("cost_usd", descending=True).head(limit)
    biggest = "; ".join(
        f"{r['benchmark']}/{r['model']} ${r['cost_usd']:.4f} ({r['paid_calls']} paid call(s))"
        for r in rows.iter_rows(named=True)
    )
    return (
        f"the run plan costs {_money(plan.cost_usd)} but only {_money(plan.left_usd)} of gateway.budget_usd = "
        f"${plan.budget_usd:g} is left (params/models.yaml; spent {_money(plan.spent_usd)}). No model request "
        f"was started. Costliest: {biggest}. Cut: {_cuts(rows)}; or use a cheaper model, run one target "
        "at a time (`python -m pipeline plan TARGET` prices each), or raise gateway.budget_usd."
    )


def _unpriced(plan: Plan) -> str:
    """The message of a budgeted plan whose cost is unknown: which rows, and why."""
    rows = plan.table.filter(pl.col("cost_usd").is_null())
    which = "; ".join(
        f"{r['benchmark']}/{r['model']} ({r['paid_calls']} paid call(s){': ' + r['note'] if r['note'] else ''})"
        for r in rows.iter_rows(named=True)
    )
    return (
        f"gateway.budget_usd = ${plan.budget_usd:g} is set (params/models.yaml), but the run plan cannot price "
        f"{which}. No model request was started. Fix: set gateway.prices for the unpriced model strings, "
        "or remove the budget to run without a price check (the spend ledger still stops the run at the budget)."
    )


def _cuts(rows: pl.DataFrame) -> str:
    cuts = []
    for r in rows.iter_rows(named=True):
        where = "the roster in params/models.yaml" if r["benchmark"] == "roster" else f"params/{r['benchmark']}.yaml"
        cuts.append(f"remove {r['model']} from {where}")
    cuts.append("fewer rounds, games or samples (e.g. skate's answering.max_samples)")
    return ", or ".join(cuts)


# -- after the run: plan against spend -------------------------------------------------------
COMPARE_COLUMNS: dict[str, Any] = {
    "benchmark": pl.Utf8,
    "model": pl.Utf8,
    "planned_calls": pl.Int64,  # the plan's bound on paid calls
    "expected_calls": pl.Int64,
    "spent_calls": pl.Int64,
    "planned_tokens_in": pl.Int64,
    "expected_tokens_in": pl.Int64,
    "spent_tokens_in": pl.Int64,
    "planned_tokens_out": pl.Int64,
    "expected_tokens_out": pl.Int64,
    "spent_tokens_out": pl.Int64,
    "planned_cost_usd": pl.Float64,  # the bound (null: none could be stated)
    "expected_cost_usd": pl.Float64,
    "spent_cost_usd": pl.Float64,
    "within_bound": pl.Boolean,  # calls, tokens and cost spent at most the plan's bound
}


def compare(plan_json: dict[str, Any]) -> pl.DataFrame:
    """Bound, expected and spent per (benchmark, model), from the ledger lines since the plan."""
    records = [r for r in SpendLedger(Path(plan_json["ledger"])).records() if r.get("time", 0) >= plan_json["created"]]
    spent: dict[tuple[str, str], list[float]] = {}
    for r in records:
        key = (str(r.get("job", "")).split("/")[0], str(r.get("roster_name", "")))
        acc = spent.setdefault(key, [0, 0, 0, 0.0])
        acc[0] += 1
        acc[1] += int(r.get("tokens_in") or 0)
        acc[2] += int(r.get("tokens_out") or 0)
        acc[3] += float(r.get("cost_usd") or 0.0)
    rows = []
    planned = {(r["benchmark"], r["model"]): r for r in plan_json["rows"] if r["model"] != NO_MODEL}
    for key in sorted(set(planned) | set(spent)):
        p = planned.get(key, {})
        s = spent.get(key, [0, 0, 0, 0.0])
        if not p.get("paid_calls") and not p.get("expected_calls") and not s[0]:
            continue  # nothing planned, nothing spent (bots, answers from the cache)
        bound_cost = p.get("cost_usd", 0.0)
        tokens_in, tokens_out = int(p.get("tokens_in", 0)), int(p.get("tokens_out", 0))
        rows.append(
            {
                "benchmark": key[0],
                "model": key[1],
                "planned_calls": int(p.get("paid_calls", 0)),
                "expected_calls": int(p.get("expected_calls", p.get("paid_calls", 0))),
                "spent_calls": int(s[0]),
                "planned_tokens_in": tokens_in,
                "expected_tokens_in": int(p.get("expected_tokens_in", tokens_in)),
                "spent_tokens_in": int(s[1]),
                "planned_tokens_out": tokens_out,
                "expected_tokens_out": int(p.get("expected_tokens_out", tokens_out)),
                "spent_tokens_out": int(s[2]),
                "planned_cost_usd": bound_cost,
                "expected_cost_usd": p.get("expected_cost_usd", bound_cost),
                "spent_cost_usd": round(s[3], 6),
                "within_bound": s[0] <= int(p.get("paid_calls", 0))
                and s[2] <= tokens_out
                and (bound_cost is None or s[3] <= bound_cost + 1e-9),
            }
        )
    return pl.DataFrame(rows, schema=COMPARE_COLUMNS) if rows else pl.DataFrame(schema=COMPARE_COLUMNS)


def relative_error(planned: float | None, spent: float) -> float | None:
    if planned is None:
        return None
    if spent == 0:
        return 0.0 if planned == 0 else None
    return (planned - spent) / spent


def render_compare(table: pl.DataFrame) -> str:
    def err(p: Any, s: Any) -> str:  # numbers of the table: ints, floats or sums of them
        e = relative_error(p, s)
        return "n/a" if e is None else f"{e:+.0%}"

    lines = [
        (
            f"{'benchmark':<12} {'model':<18} {'calls most/expected/spent':>26} {'err':>6} "
            f"{'tokens out most/spent':>23} {'cost most/expected/spent':>32} {'err':>6}  bound"
        )
    ]
    for r in table.iter_rows(named=True):
        calls = f"{r['planned_calls']}/{r['expected_calls']}/{r['spent_calls']}"
        tokens = f"{r['planned_tokens_out']}/{r['spent_tokens_out']}"
        cost = f"{_money(r['planned_cost_usd'])}/{_money(r['expected_cost_usd'])}/{_money(r['spent_cost_usd'])}"
        lines.append(
            f"{r['benchmark']:<12} {r['model']:<18} {calls:>26} {err(r['expected_calls'], r['spent_calls']):>6} "
            f"{tokens:>23} {cost:>32} {err(r['expected_cost_usd'], r['spent_cost_usd']):>6}  "
            + ("kept" if r["within_bound"] else "EXCEEDED")
        )
    if table.height:
        over = table.filter(~pl.col("within_bound"))
        lines.append(
            f"total calls: at most {table['planned_calls'].sum()}, expected {table['expected_calls'].sum()}, spent "
            f"{table['spent_calls'].sum()} ({err(table['expected_calls'].sum(), table['spent_calls'].sum())} "
            f"expected against spent); cost: at most {_money(_total(table['planned_cost_usd']))}, expected "
            f"{_money(_total(table['expected_cost_usd']))}, spent {_money(float(table['spent_cost_usd'].sum()))}"
        )
        if over.height:
            lines.append(
                "spent beyond the plan's bound: "
                + ", ".join(f"{r['benchmark']}/{r['model']}" for r in over.iter_rows(named=True))
                + " (a defect of the plan's estimator: please report it)"
            )
    return "\n".join(lines)


def _total(column: pl.Series) -> float | None:
    return None if column.null_count() else float(column.sum())


def load_plan_json(out: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(out) / "plan.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"no saved plan at {path}: run `python -m pipeline plan` before the run") from None


__all__ = [
    "CallEstimate",
    "Plan",
    "PlanError",
    "PlannedJob",
    "compare",
    "dry_run",
    "jobs_of_dag",
    "make_plan",
    "render_compare",
    "render_plan",
    "save_plan",
    "what_to_cut",
]
