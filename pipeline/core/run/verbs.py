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

The four are built here from the benchmark's declaration (`add_benchmark`): each verb is a function
of a `VerbCall`, the shared arguments parsed; a benchmark needs no command-line code for them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

VERBS = ("schedule", "play", "rate", "report")
DEFAULT_MODELS = "params/models.yaml"

Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class VerbCall:
    """What a verb receives: the shared arguments, as `python -m pipeline B VERB` parsed them."""

    params: str  # the benchmark's params file
    models: str  # the roster
    out: str  # where the verb writes
    jobs: tuple[str, ...] = ()  # play: the job ids, in order, without repeats
    marker: str | None = None  # play: the file to write once every job is done
    json: bool = False  # schedule: print JSON
    args: argparse.Namespace = field(default_factory=argparse.Namespace)  # the whole command line: a verb's own flags

    @classmethod
    def of(cls, args: argparse.Namespace) -> VerbCall:
        return cls(
            params=args.params,
            models=args.models,
            out=args.out,
            jobs=tuple(job_ids(args)) if hasattr(args, "jobs") else (),
            marker=getattr(args, "marker", None),
            json=bool(getattr(args, "json", False)),
            args=args,
        )


#: a verb's body: returns the exit status (None: 0)
VerbFunction = Callable[[VerbCall], "int | None"]
#: a standard schedule: job id -> what the job is (shown by `schedule`, one play job each in the standard rules)
ScheduleFunction = Callable[[VerbCall], Mapping[str, Any]]


@dataclass(frozen=True)
class Verb:
    """A declared verb with its command line: help, where `--out` points, and flags of its own."""

    run: VerbFunction
    help: str = ""
    out: str | None = None  # --out's default when not the results folder (play: the games folder)
    out_help: str | None = None
    concurrent: bool = True  # play: several ids play concurrently (else one after the other)
    flags: Callable[[argparse.ArgumentParser], None] | None = None  # the verb's own flags (rate's --games)
    jobs: ScheduleFunction | None = None  # schedule: the jobs as data, for the standard rules


def schedule_verb(jobs: ScheduleFunction) -> Verb:
    """`schedule` of a benchmark whose schedule function returns its jobs: one line per job, its id first."""

    def run(call: VerbCall) -> int:
        found = jobs(call)
        if call.json:
            print(json.dumps([{"job_id": job_id, **_fields(value)} for job_id, value in found.items()], indent=2))
            return 0
        for job_id, value in found.items():
            print(" ".join([job_id, *(str(v) for v in _fields(value).values())]))
        return 0

    return Verb(run, "list every scheduled job, its id first", jobs=jobs)


def _fields(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"job": value}


def flag(name: str, default: str, help_text: str) -> Callable[[argparse.ArgumentParser], None]:
    """A verb's own path flag (`--games`, `--maps`), for `Verb(flags=...)`."""

    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(name, default=default, help=f"{help_text} (default {default})")

    return add


def _handler(verb: Verb) -> Handler:
    def handle(args: argparse.Namespace) -> int:
        return int(verb.run(VerbCall.of(args)) or 0)

    return handle


def _play_handler(verb: Verb) -> Handler:
    """`play` with the job's progress on stderr: moves done of those its games plan, and the time left
    (pipeline.core.artifacts.progress; the games declare their moves, the players count them)."""

    def handle(args: argparse.Namespace) -> int:
        from pipeline.core.artifacts.progress import reporting_moves  # imports polars: not while parsing

        with reporting_moves(say):
            return int(verb.run(VerbCall.of(args)) or 0)

    return handle


class DeclaresVerbs(Protocol):
    """What `add_benchmark` reads of a declaration (core.run.registry.Benchmark), so that the verbs
    need not import the registry that imports them."""

    @property
    def name(self) -> str: ...

    @property
    def help_text(self) -> str: ...

    @property
    def extra_commands(self) -> Callable[[BenchmarkCommands], None] | None: ...

    def verb(self, name: str) -> Verb | None: ...


def add_benchmark(commands: argparse._SubParsersAction, bench: DeclaresVerbs) -> BenchmarkCommands:
    """`python -m pipeline NAME ...` from the declaration: the four verbs, then the benchmark's own."""
    cli = BenchmarkCommands(commands, bench.name, bench.help_text)
    for name in VERBS:
        verb = bench.verb(name)
        if verb is None:
            continue
        if name == "schedule":
            parser = cli.schedule(_handler(verb), verb.help or "list every scheduled job, its id first")
        elif name == "play":
            parser = cli.play(
                _play_handler(verb),
                verb.help,
                out=verb.out,
                out_help=verb.out_help or "the folder the jobs write into",
                concurrent=verb.concurrent,
            )
        else:
            parser = cli.verb(
                name,
                verb.help,
                _handler(verb),
                out=verb.out,
                out_help=verb.out_help or "the benchmark's results folder",
            )
        if verb.flags is not None:
            verb.flags(parser)
    if bench.extra_commands is not None:
        bench.extra_commands(cli)
    cli.check()
    return cli


class BenchmarkCommands:
    """`python -m pipeline NAME ...`: the benchmark's subcommands, with the shared arguments.

    Every verb gets `--params params/NAME.yaml`, `--models params/models.yaml` and `--out` (the
    benchmark's results folder unless the verb says otherwise), spelled and defaulted the same way
    in every benchmark.
    """

    def __init__(
        self, commands: argparse._SubParsersAction, name: str, help_text: str, *, out: str | None = None
    ) -> None:
        self.name = name
        self.params = f"params/{name}.yaml"
        self.out = out or f"results/{name}"
        parser = commands.add_parser(name, help=help_text)
        self.sub = parser.add_subparsers(dest=f"{name}_command", metavar="VERB", required=True)

    def verb(
        self,
        verb: str,
        help_text: str,
        handler: Handler,
        *,
        out: str | None = None,
        out_help: str = "the benchmark's results folder",
        inputs: bool = True,
        writes: bool = True,
    ) -> argparse.ArgumentParser:
        parser = self.sub.add_parser(verb, help=help_text, description=help_text)
        if inputs:
            parser.add_argument(
                "--params", default=self.params, help=f"the benchmark's params file (default {self.params})"
            )
            parser.add_argument("--models", default=DEFAULT_MODELS, help=f"the roster (default {DEFAULT_MODELS})")
        if writes:
            parser.add_argument("--out", default=out or self.out, help=f"{out_help} (default {out or self.out})")
        parser.set_defaults(func=handler)
        return parser

    def schedule(
        self, handler: Handler, help_text: str = "list every scheduled job, its id first"
    ) -> argparse.ArgumentParser:
        parser = self.verb("schedule", help_text, handler)
        add_json(parser, "print the schedule as JSON")
        return parser

    def play(
        self,
        handler: Handler,
        help_text: str,
        *,
        out: str | None = None,
        out_help: str = "the folder the jobs write into",
        concurrent: bool = True,
    ) -> argparse.ArgumentParser:
        parser = self.verb("play", help_text, handler, out=out, out_help=out_help)
        together = "concurrently in one process" if concurrent else "one after the other in one process"
        parser.add_argument(
            "jobs",
            nargs="+",
            metavar="JOB_ID",
            help=f"job ids from `python -m pipeline {self.name} schedule` (commas also separate "
            f"them); several ids play {together}",
        )
        parser.add_argument(
            "--marker", default=None, help="write this file (the ids and their outcomes) once every job is done"
        )
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
            raise ValueError(
                f"benchmark {self.name!r} lacks the verb(s) {', '.join(missing)} (pipeline/core/run/verbs.py)"
            )


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
