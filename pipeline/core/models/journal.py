"""The calls journal: every provider attempt of a job, on disk the moment it happens.

A job's calls table is written when the job ends. A run that fails or is killed before that
would leave its attempts (the faults it met, the answers it paid for) in no table, so the gateway
also appends each provider attempt (answered or failed; not cache hits, not bot moves) as one
JSON line to the job's journal: `<cache dir>/calls/<job>.jsonl` (the job name's parts as
folders, e.g. `.cache/responses/calls/whoisspy/<game id>.jsonl`), one `write` per line on an
O_APPEND file, so a kill loses at most the line being written.

- The journal lives beside the response cache, outside results/: Snakemake never deletes it with
  a job's outputs, DVC never tracks it, git ignores it. A line holds the calls table's columns
  only (names, model strings, token counts, costs, error kinds; never a prompt, a reply or a key).
- When the job writes its calls table (`Gateway.write_calls`), the table holds the attempts that
  earlier runs of the same job journaled (a failed or killed run; each line names its run), then
  this run's own rows; the journal is then removed: it is settled.
- What remains under `calls/` are the attempts of jobs whose table was never written: failed or
  killed runs not yet resumed. `unfinished_calls` reads them as one calls table; the run plan
  writes it to `results/plan/unfinished_calls.parquet` and says what they cost.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts.io import append_lines


# one provider attempt, as the calls table and the journal hold it
@dataclass(frozen=True)
class CallRecord:
    job: str
    roster_name: str
    model: str
    request_id: str
    attempt: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    latency_s: float
    cache_hit: bool
    error_kind: str | None
    fault: str | None = None  # the injected fault of this attempt (pipeline.core.models.faults)
    batch: bool | None = None  # True: answered through the provider's batch API (pipeline.core.models.batch)
    tokens_reasoning: int | None = None  # hidden reasoning tokens inside tokens_out (null: not reported)
    finish_reason: str | None = None  # "length": the cap cut the reply
    dropped_params: str | None = None  # parameters the provider refused, dropped and sent again (comma-separated)


log = logging.getLogger(__name__)

JOURNAL_DIR = "calls"  # inside the response cache directory, beside its answers/ folder
#: jobs of commands that write no calls table (`python -m pipeline ask`, xent's `play-program`):
#: nothing would ever settle their journals, and they are no job of a run, so none is kept
UNTABLED_JOBS = ("ask", "xent-cli")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def new_run_id() -> str:
    """Names one gateway's session of a job in the journal (one run of the job)."""
    return uuid.uuid4().hex[:12]


def journal_path(cache_dir: str | os.PathLike[str], job: str) -> Path | None:
    """Where `job`'s attempts are journaled (None for a job without a name or without a calls
    table: nothing is)."""
    if job.split("/")[0] in UNTABLED_JOBS:
        return None
    parts = [_UNSAFE.sub("_", part) for part in job.split("/")]
    parts = [part for part in parts if part.strip(".")]
    if not parts:
        return None
    return Path(cache_dir, JOURNAL_DIR, *parts[:-1], f"{parts[-1]}.jsonl")


def is_provider_attempt(cache_hit: bool, model: str) -> bool:
    """A calls row of a request sent to a provider (answered or failed): what a rerun cannot see
    again. Cache hits are seen again by the rerun itself, and bots (`bot/<name>`) cost nothing."""
    return not cache_hit and not model.startswith("bot/")


def record_row(record: CallRecord) -> dict[str, Any]:
    """A call record as a row of the calls table (its fields are plain values: no deep copy)."""
    return dict(vars(record))


def append_attempt(path: Path, run: str, record: Mapping[str, Any], *, check_tail: bool = True) -> None:
    """One line, one `write` on an O_APPEND file. A torn last line of a killed writer is closed
    first: `check_tail` looks at the file's last byte (a session's later appends follow its own
    whole lines, so only its first append needs to look)."""
    line = (json.dumps({"run": run, **record}, sort_keys=True) + "\n").encode("utf-8")
    append_lines(path, line, check_tail=check_tail)


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Every complete line of one journal (a torn line is skipped)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = []
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def earlier_attempts(path: Path | None, run: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """The attempts other runs journaled for this job (only the calls table's `fields`)."""
    if path is None:
        return []
    return [{k: line.get(k) for k in fields} for line in read_journal(path) if line.get("run") != run]


def settle(path: Path | None) -> None:
    """The job's table now holds its attempts: the journal goes."""
    if path is not None:
        path.unlink(missing_ok=True)


def unfinished_calls(cache_dir: str | os.PathLike[str]) -> pl.DataFrame:
    """Every journaled attempt whose job never wrote its calls table (a failed or killed run not
    yet resumed, or a run still going), as one calls table (CallsSchema) in time order per job."""
    from pipeline.core.artifacts.schemas import CallsSchema, calls_frame

    fields = tuple(CallRecord.__dataclass_fields__)
    rows = [
        {k: line.get(k) for k in fields}
        for path in sorted(Path(cache_dir, JOURNAL_DIR).rglob("*.jsonl"))
        for line in read_journal(path)
    ]
    return CallsSchema.validate(calls_frame(rows))
