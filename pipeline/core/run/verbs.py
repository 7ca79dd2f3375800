"""The verb set every benchmark's command line offers, and the argument helpers they share.

Every benchmark `B` answers the same four verbs (docs/design.md, "One verb set"):

    python -m pipeline B schedule [--json]            every scheduled job, its id first
    python -m pipeline B play JOB_ID [JOB_ID ...]     play scheduled jobs; several ids play concurrently
                                                      in one process (a shard) and --marker is written
                                                      when all of them are done
    python -m pipeline B rate                         played jobs in: tables, TrueSkill ratings, metrics.json
    python -m pipeline B report                       rated tables in: plots and summaries for people

and its rules are named after them: `B_play` (one job per game), `B_shard` (many API games per
job), `B_rate`, `B_report`, and `B_all`, the final rule. A benchmark may add verbs of its own
(Elimination's `import`, Xent's `rescore`), never rename these.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

VERBS = ("schedule", "play", "rate", "report")
DEFAULT_MODELS = "params/models.yaml"

Handler = Callable[[argparse.Namespace], int]


class BenchmarkCommands:
    """`python -m pipeline NAME ...`: the benchmark's subcommands, with the shared arguments.

    Every verb gets `--params params/NAME.yaml`, `--models params/models.yaml` and `--out` (the
    benchmark's results folder unless the verb says otherwise), spelled and defaulted the same way
    in every benchmark.
    """

    def __init__(self, commands: argparse._SubParsersAction, name: str, help_text: str,
                 *, out: str | None = None) -> None:
        self.name = name
        self.params = f"params/{name}.yaml"
        self.out = out or f"results/{name}"
        parser = commands.add_parser(name, help=help_text)
        self.sub = parser.add_subparsers(dest=f"{name}_command", metavar="VERB", required=True)

    def verb(self, verb: str, help_text: str, handler: Handler, *, out: str | None = None,
             out_help: str = "the benchmark's results folder", inputs: bool = True,
             writes: bool = True) -> argparse.ArgumentParser:
        parser = self.sub.add_parser(verb, help=help_text, description=help_text)
        if inputs:
            parser.add_argument("--params", default=self.params, help=f"the benchmark's params file (default {self.params})")
            parser.add_argument("--models", default=DEFAULT_MODELS, help=f"the roster (default {DEFAULT_MODELS})")
        if writes:
            parser.add_argument("--out", default=out or self.out, help=f"{out_help} (default {out or self.out})")
        parser.set_defaults(func=handler)
        return parser

    def schedule(self, handler: Handler, help_text: str = "list every scheduled job, its id first") -> argparse.ArgumentParser:
        parser = self.verb("schedule", help_text, handler)
        add_json(parser, "print the schedule as JSON")
        return parser

    def play(self, handler: Handler, help_text: str, *, out: str | None = None,
             out_help: str = "the folder the jobs write into", concurrent: bool = True) -> argparse.ArgumentParser:
        parser = self.verb("play", help_text, handler, out=out, out_help=out_help)
        together = "concurrently in one process" if concurrent else "one after the other in one process"
        parser.add_argument("jobs", nargs="+", metavar="JOB_ID",
                            help=f"job ids from `python -m pipeline {self.name} schedule` (commas also separate "
                                 f"them); several ids play {together}")
        parser.add_argument("--marker", default=None,
                            help="write this file (the ids and their outcomes) once every job is done")
        return parser

    def rate(self, handler: Handler, help_text: str, *, games: str | None = None) -> argparse.ArgumentParser:
        """`games`: where `play` wrote the games, for a benchmark whose rate job reads them from there."""
        parser = self.verb("rate", help_text, handler)
        if games:
            parser.add_argument("--games", default=games, help=f"the played games' folder (default {games})")
        return parser

    def report(self, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        return self.verb("report", help_text, handler)

    def extra(self, verb: str, help_text: str, handler: Handler, **kwargs: Any) -> argparse.ArgumentParser:
        """A verb of this benchmark's own; it must not be one of the shared four."""
        if verb in VERBS:
            raise ValueError(f"{self.name}: {verb!r} is a shared verb; add it with its own method")
        return self.verb(verb, help_text, handler, **kwargs)

    def check(self) -> None:
        missing = [v for v in VERBS if v not in self.sub.choices]
        if missing:
            raise ValueError(f"benchmark {self.name!r} lacks the verb(s) {', '.join(missing)} (pipeline/core/run/verbs.py)")


def add_json(parser: argparse.ArgumentParser, help_text: str = "print JSON") -> None:
    parser.add_argument("--json", action="store_true", help=help_text)


def job_ids(args: argparse.Namespace) -> list[str]:
    """The job ids of `play`, in order, without repeats; commas and spaces both separate them."""
    ids: list[str] = []
    for chunk in args.jobs:
        for part in chunk.replace(",", " ").split():
            if part not in ids:
                ids.append(part)
    return ids


def say(message: str) -> None:
    """A progress line: on stderr, which the rules send to the job's log."""
    print(message, file=sys.stderr, flush=True)
