"""The spend ledger and the budget guard shared by every job process of a run.

Snakemake runs each job in its own process (on a cluster, on other machines), so a run's spend
cannot live in memory. Every request a provider answers is appended as one JSON line to a ledger
file (default: `spend-ledger.jsonl` inside the response cache directory, `gateway.ledger` to move
it), under an exclusive `flock`; the lines of one append (a process's answers stored together)
are a single `write` on an O_APPEND file, so concurrent appends never interleave and a kill
leaves at worst one torn last line, which readers skip. The ledger lives beside the cache on purpose: what it counts is what the cache holds, so
a cached answer (never sent again) is never paid again.

The budget (`gateway.budget_usd`) caps the ledger's total: the gateway checks it before starting
each new provider request and raises BudgetExceeded (pipeline.core.models.gateway) once it is reached. Requests already in
flight finish and are recorded (so the total can end slightly above the budget, by at most the
requests in flight). To resume: raise `gateway.budget_usd` and rerun; to start a new budget period,
move the ledger file away. The ledger also serves as the journal of every request actually sent
(one line per answered request key), which is how the crash tests prove no answered request was
sent twice.
"""

from __future__ import annotations

import fcntl
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.io import append_lines

LEDGER_NAME = "spend-ledger.jsonl"


@dataclass
class SpendLedger:
    path: Path
    _offset: int = 0
    _total: float = 0.0

    def total_usd(self) -> float:
        """The sum of cost_usd over the ledger (read incrementally: only new lines are parsed)."""
        try:
            with open(self.path, "rb") as handle:
                fcntl.flock(handle, fcntl.LOCK_SH)
                try:
                    handle.seek(self._offset)
                    data = handle.read()
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)
        except FileNotFoundError:
            return 0.0
        complete, newline, _partial = data.rpartition(b"\n")
        if newline:
            self._offset += len(complete) + 1
            for line in complete.split(b"\n"):
                self._total += _line_cost(line)
        return self._total

    def append(self, record: dict[str, Any]) -> None:
        self.append_many([record])

    def append_many(self, records: list[dict[str, Any]]) -> None:
        """One line per record, all in one write under the lock, then one fsync (the answer writer
        appends the lines of every answer it stored together)."""
        stamp = round(time.time(), 3)
        data = b"".join((json.dumps({**r, "time": stamp}, sort_keys=True) + "\n").encode("utf-8") for r in records)
        append_lines(self.path, data, lock=True, durable=True)

    def records(self) -> list[dict[str, Any]]:
        """Every complete ledger line (for reports and tests)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        rows = []
        for line in text.splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return rows


def _line_cost(line: bytes) -> float:
    try:
        cost = json.loads(line).get("cost_usd")
    except (json.JSONDecodeError, AttributeError):
        return 0.0
    return float(cost) if isinstance(cost, (int, float)) else 0.0


def budget_message(spent: float, budget: float, ledger: Path) -> str:
    return (
        f"spend budget reached: ${spent:.6f} spent of gateway.budget_usd = ${budget:g} "
        f"(params/models.yaml; ledger {ledger}). No new model request was started. Raise "
        "gateway.budget_usd and rerun to resume: answered requests come from the cache and are "
        "not paid again."
    )
