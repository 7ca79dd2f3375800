"""Commands of the roster stage: `python -m pipeline roster check`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_roster_check(args: argparse.Namespace) -> int:
    from pipeline.core.models import Gateway, load_models
    from pipeline.roster.check import JOB, run_roster_check

    models = load_models(args.params)
    table = run_roster_check(models, args.out, Gateway(models, job=JOB, deadline_s=args.timeout_s or None))
    for row in table.iter_rows(named=True):
        status = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}[row["status"]]
        detail = row["reason"] or repr(row["reply"][:40])
        print(f"[{status}] {row['name']:<24} {row['latency_s']:6.2f}s  {detail}  ({row['budgets']})", file=sys.stderr)
    unreachable = table.filter(~table["reachable"]).height
    if unreachable:
        print(
            f"{unreachable} roster entr{'y' if unreachable == 1 else 'ies'} unreachable; "
            f"see {Path(args.out) / 'check.parquet'}",
            file=sys.stderr,
        )
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    roster = commands.add_parser("roster", help="roster stage commands")
    roster_commands = roster.add_subparsers(dest="roster_command", metavar="SUBCOMMAND", required=True)
    check = roster_commands.add_parser("check", help="ask every roster entry a small question; write results")
    check.add_argument("--params", default="params/models.yaml")
    check.add_argument("--out", default="results/roster")
    check.add_argument(
        "--timeout-s",
        type=float,
        default=60.0,
        help="an entry without an answer after this many seconds, every retry included, is marked FAIL "
        "with the last error; the others are still checked (default 60; 0: no limit)",
    )
    check.set_defaults(func=_cmd_roster_check)
