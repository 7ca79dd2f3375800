"""What a benchmark declares about its rules (`Benchmark.rules`, a `Rules`) and what its schedule
hook returns at parse time (`Scheduled`): the standard rules (core.run.standard, standard.smk) are
built from them. Kept apart from the rule builder so the declaration imports nothing above it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

#: a job id in a file name: a content id (core.artifacts.io.content_id), as every play job's is
JOB_ID_PATTERN = r"[0-9a-f]{16}"
#: the wildcard that names a play job in writes["play"] (the run plan's estimators read it too)
GAME_ID = "game_id"
State = TypeVar("State")


@dataclass(frozen=True)
class PlayJob:
    """One scheduled play job, as the standard rules see it when Snakemake parses them."""

    seats: tuple[str, ...] = ()  # the roster names it seats: which shard it joins (none: bots only)
    content: str | None = None  # what decides the job, as text: a rule param, so a change reruns it


@dataclass(frozen=True)
class ScheduleCall:
    """What a benchmark's schedule hook receives: its params and roster files, its results folder,
    and the run's params problems."""

    name: str
    params: str
    models: str
    results: str
    problems: dict[str, str] = field(default_factory=dict)

    def stop(self, problem: Exception) -> None:
        """Record why these params cannot be scheduled: the benchmark's targets stop on it (the
        rate and rounds rules' guard), the other benchmarks' run. For a hook that returns its state
        even then (its rules file needs it); a hook may instead raise the ParamsError."""
        self.problems.setdefault(self.name, str(problem))


@dataclass(frozen=True)
class Scheduled(Generic[State]):
    """A benchmark's schedule as its rules see it at parse time: what its schedule hook returns."""

    jobs: Mapping[str, PlayJob] = field(default_factory=dict)  # job id -> job: the standard play jobs
    played: tuple[str, ...] = ()  # the files its own play stages make: what rate and rounds wait for
    rate_settings: Mapping[str, Any] = field(default_factory=dict)  # what decides rate beyond its inputs
    report_settings: Mapping[str, Any] = field(default_factory=dict)  # what decides report beyond its inputs
    final: tuple[str, ...] = ()  # more files `<name>_all` builds: its own stages' final outputs
    state: State | None = None  # the benchmark's own parse-time object, for its rules file


#: (call) -> the schedule; raises ParamsError when the params cannot be scheduled
ScheduleHook = Callable[[ScheduleCall], Scheduled[Any]]


@dataclass(frozen=True)
class Rules:
    """How the standard rules play, rate and report one benchmark: its declaration's `rules`.

    Paths are relative to the results folder, as in `writes`; a path ending in `/` is a folder."""

    # the scheduled jobs and settings at parse time; None: every job of the schedule verb's `jobs`
    # (`schedule(call) -> {job_id: fields}`), bots only, no settings
    schedule: ScheduleHook | None = None
    shards: bool = False  # play API, embedded-model and bot-only games many a process (core.run.shards)
    local_threads: int = 1  # the cores a job with the embedded model takes (its torch threads)
    done: str | None = None  # the file marking a job done, for the progress line; default: writes["play"]'s last
    rate_reads: tuple[str, ...] | None = None  # what rate reads; default: every played job's files
    report_reads: tuple[str, ...] | None = None  # what report reads besides params; default: what rate writes
    rate_code: tuple[str, ...] = ()  # the package's modules whose code decides rate: a change reruns it
    report_code: tuple[str, ...] = ()  # the same for report
