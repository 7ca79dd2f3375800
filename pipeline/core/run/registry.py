"""The benchmark registry: each benchmark declares itself once, in its package's `benchmark.py`.

The declaration names the benchmark, its params file, its verbs (schedule, play, rate, report: the
functions behind `python -m pipeline NAME VERB`), what each verb's rule writes, how its rules play,
rate and report (`rules`), the outputs DVC keeps, the tables the leaderboard reads (with their pandera
schemas) and its replay builder. The command line, the Snakefile (every benchmark gets the standard
rules, core/run/standard.smk; a benchmark with stages of its own adds them in its `rules_file`),
`dvc.yaml` (`python -m pipeline dvc-yaml`) and the leaderboard all derive from it, so adding a
benchmark touches its own folder and its params file (docs/adding-a-benchmark.md).

Benchmarks are found in three places, in this order:
- every subpackage `pipeline.<name>` that has a `benchmark` module defining `BENCHMARK`;
- the entry-point group `pipeline.benchmarks` (an installed package: `name = "module:BENCHMARK"`);
- the environment variable `PIPELINE_BENCHMARKS`: comma-separated module names, each defining
  `BENCHMARK` (handy for a benchmark that lives outside the package, e.g. in tests).

A copy of the project runs every registered benchmark's rules but those named in
`PIPELINE_LEAVE_OUT` (comma-separated) and those whose own rules file it lacks: they stay
registered, so the leaderboard still reads their results.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pipeline.core.run.declaration import Rules
from pipeline.core.run.verbs import ScheduleFunction, Verb, VerbFunction, schedule_verb

if TYPE_CHECKING:
    from pipeline.core.artifacts.dataset import DatasetRows
    from pipeline.core.artifacts.schemas import Schema
    from pipeline.core.run.rounds import AdaptiveSpec
    from pipeline.core.run.verbs import BenchmarkCommands

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
ENTRY_POINT_GROUP = "pipeline.benchmarks"
ENV_MODULES = "PIPELINE_BENCHMARKS"
ENV_LEAVE_OUT = "PIPELINE_LEAVE_OUT"  # benchmarks whose rules a run leaves out (comma-separated)
STANDARD_RULES = Path(__file__).with_name("standard.smk")
PLOT_FORMATS = ("html", "png", "svg")


def plot_files(*names: str, folder: str = "plots") -> tuple[str, ...]:
    """The files of plots saved in every format (core.artifacts.save_chart), for a verb's `writes`."""
    return tuple(f"{folder}/{name}.{fmt}" for name in names for fmt in PLOT_FORMATS)


class RegistryError(ValueError):
    """A benchmark declaration that cannot be used, named with where it came from."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, as the rest of the pipeline sees it.

    Paths in `outputs`, `writes`, `tables` and `extra_inputs` are relative to the results folder
    `results/<name>/`. `replays(benchmark, limit)` builds the site's replay pages (or None).

    The verbs: `schedule(call) -> {job_id: fields}` (or a `Verb` that prints its own listing),
    `play`, `rate` and `report` (functions of a `VerbCall`, or `Verb`s with their help and flags);
    `extra_commands(commands)` adds the benchmark's own verbs (core.run.verbs.BenchmarkCommands).
    `writes` says what each verb's rule writes: `play` one game's files (named by its id,
    `games/{game_id}.json`), `rate`, `report`, and any rule of the benchmark's own; a path ending in
    `/` is a folder. `rules` says how the standard rules (core/run/standard.py) play, rate
    and report it: the schedule at parse time, shards, the settings and code that decide rate and
    report; `rules_file`, the package's rules for stages of its own (they come before the standard ones).
    `adaptive` declares the adaptive schedule (core/run/rounds.py): rounds chosen from the results.
    `dataset(folder)` reads the results folder's games as rows of the published dataset
    (core/artifacts/dataset.py; `python -m pipeline export`), or None: the export leaves it out.
    """

    name: str
    title: str
    package: str  # the importable package of the benchmark (its rules file, config, cli)
    outputs: tuple[str, ...]  # what DVC keeps (persisted) besides metrics.json, in dvc.yaml's order
    writes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # verb or rule -> the files it writes
    schedule: Verb | ScheduleFunction | None = None
    play: Verb | VerbFunction | None = None
    rate: Verb | VerbFunction | None = None
    report: Verb | VerbFunction | None = None
    extra_commands: Callable[[BenchmarkCommands], None] | None = None  # the benchmark's own verbs
    description: str = ""  # the command's help (default: the title)
    rules: Rules = field(default_factory=Rules)  # how the standard rules play, rate and report it
    rules_file: str | None = None  # the package's Snakemake rules for its own stages; None: none
    tables: Mapping[str, Schema] = field(default_factory=dict)
    replays: Callable[..., Any] | None = None
    # what the leaderboard's site reads besides metrics.json (dvc.yaml's leaderboard deps); default: the tables
    site_reads: tuple[str, ...] | None = None
    extra_inputs: tuple[str, ...] = ()  # globs of other files the leaderboard hashes into its stamp
    headline: tuple[str, ...] = ()  # metrics.json keys the leaderboard shows (params can override)
    order: int = 100  # position in the Snakefile and on the leaderboard (then by name)
    # the run plan's estimators: a module defining ESTIMATORS = {rule: estimator} (core.run.estimates),
    # imported only when a plan is made, or a function returning the table (GameSkeleton.estimators)
    estimators: str | Callable[[], Mapping[str, Callable[..., Any]]] | None = None
    # the game contract (core.run.contract): a module defining CONTRACT = a GameContract, imported on
    # first use (one game with players made by the core, its rating events and a seat's score)
    contract: str | None = None
    plays_models: bool = True  # False: no rule calls a model (the plan shows no calls, not unknown ones)
    # what a run of these params should be told before it starts, (params file, models file) ->
    # messages: Xent's "nothing scheduled" until its map set is imported. `plan` and the run's
    # onstart print them; parsing the rules prints nothing.
    schedule_notes: Callable[[str, str], list[str]] | None = None
    # the adaptive schedule (core.run.rounds.AdaptiveSpec): how the benchmark plays rounds chosen from
    # its results when its params turn it on; None: fixed schedules only. Its ledger lies in `rounds`,
    # which must be one of the outputs (DVC keeps the rounds when a model is added)
    adaptive: AdaptiveSpec | None = None
    # the benchmark's games as dataset rows (`python -m pipeline export`); None: not exported
    dataset: Callable[[Path], DatasetRows] | None = None

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name):
            raise RegistryError(f"benchmark name {self.name!r} must match {NAME_PATTERN.pattern}")
        written = [path for files in self.writes.values() for path in files]
        for relative in (*self.outputs, *self.tables, *written):
            if relative.startswith("/") or ".." in Path(relative).parts:
                raise RegistryError(f"{self.name}: {relative!r} must be a path inside results/{self.name}/")
        kept = set(self.outputs) | {"metrics.json"}
        unkept = [path for path in written if not any(path == o or path.startswith(f"{o}/") for o in kept)]
        if unkept:  # DVC would not keep what a rule writes: declare its folder in `outputs`
            raise RegistryError(f"{self.name}: {unkept[0]!r} is written but lies in none of the outputs {self.outputs}")
        if self.adaptive is not None and "rounds" not in self.outputs:  # the ledger must survive a rerun
            raise RegistryError(
                f"{self.name}: an adaptive schedule keeps its rounds in 'rounds'; add it to the outputs"
            )
        if self.adaptive is not None and self.adaptive.play_target != f"{self.name}_rounds":
            raise RegistryError(f"{self.name}: the standard rules' rounds target is {self.name}_rounds")

    def verb(self, verb: str) -> Verb | None:
        """The declared verb (schedule, play, rate or report) as a `Verb`; None when not declared."""
        declared = getattr(self, verb)
        if declared is None or isinstance(declared, Verb):
            return declared
        if verb == "schedule":
            return schedule_verb(declared)
        return Verb(declared, (declared.__doc__ or "").strip().split("\n")[0])

    def files(self, verb: str, root: str | None = None) -> list[str]:
        """What `verb`'s rule writes, under `root` (default: the results folder); folders without their `/`."""
        return [f"{root or self.results}/{path.rstrip('/')}" for path in self.writes.get(verb, ())]

    @property
    def leaderboard_reads(self) -> tuple[str, ...]:
        return tuple(self.tables) if self.site_reads is None else self.site_reads

    @property
    def help_text(self) -> str:
        return self.description or self.title

    @property
    def params_file(self) -> str:
        return f"params/{self.name}.yaml"

    @property
    def results(self) -> str:
        return f"results/{self.name}"

    @property
    def metrics(self) -> str:
        return f"{self.results}/metrics.json"

    @property
    def final_rule(self) -> str:
        return f"{self.name}_all"

    def load_estimators(self) -> Mapping[str, Callable[..., Any]]:
        """The rule -> estimator table of `estimators` ({} when the benchmark declares none)."""
        if self.estimators is None:
            return {}
        table: object
        if callable(self.estimators):
            table, origin = self.estimators(), getattr(self.estimators, "__qualname__", "estimators")
        else:
            table, origin = getattr(importlib.import_module(self.estimators), "ESTIMATORS", None), self.estimators
        if not isinstance(table, Mapping):
            raise RegistryError(f"{self.name}: {origin} must define ESTIMATORS = {{rule: estimator}}")
        foreign = [rule for rule in table if not rule.startswith(f"{self.name}_")]
        if foreign:
            raise RegistryError(f"{self.name}: {origin} estimates rules of another benchmark: {foreign}")
        return table

    @property
    def extra_rules(self) -> Path | None:
        """The package's rules for stages of its own (`rules_file`), included before the standard rules."""
        return None if self.rules_file is None else package_dir(self.package) / self.rules_file

    @property
    def in_workflow(self) -> bool:
        """Whether this copy of the project runs the benchmark's rules: not named in $PIPELINE_LEAVE_OUT,
        and its own rules file, if it declares one, is there."""
        left_out = {part.strip() for part in os.environ.get(ENV_LEAVE_OUT, "").split(",")}
        return self.name not in left_out and (self.extra_rules is None or self.extra_rules.exists())

    @property
    def source_dir(self) -> str:
        """The package folder relative to the project root when it lies inside it (a dvc.yaml dep)."""
        folder = package_dir(self.package)
        try:
            return folder.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return folder.as_posix()


def package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RegistryError(f"benchmark package {package!r} cannot be imported")
    return Path(next(iter(spec.submodule_search_locations)))


def _declared(module: ModuleType, origin: str) -> Benchmark:
    found = getattr(module, "BENCHMARK", None)
    if not isinstance(found, Benchmark):
        raise RegistryError(f"{origin}: {module.__name__} must define BENCHMARK = Benchmark(...)")
    return found


def _package_benchmarks() -> list[Benchmark]:
    import pipeline

    found = []
    for info in pkgutil.iter_modules(pipeline.__path__):
        name = f"pipeline.{info.name}.benchmark"
        if info.ispkg and importlib.util.find_spec(name) is not None:
            found.append(_declared(importlib.import_module(name), name))
    return found


def _plugin_benchmarks() -> list[Benchmark]:
    found = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        value = entry.load()
        if not isinstance(value, Benchmark):
            raise RegistryError(f"entry point {entry.name} = {entry.value} must name a Benchmark")
        found.append(value)
    for name in filter(None, (part.strip() for part in os.environ.get(ENV_MODULES, "").split(","))):
        found.append(_declared(importlib.import_module(name), f"${ENV_MODULES}"))
    return found


@lru_cache(maxsize=8)
def _discover(env_modules: str) -> tuple[Benchmark, ...]:
    del env_modules  # part of the cache key only
    every = _package_benchmarks() + _plugin_benchmarks()
    names: dict[str, Benchmark] = {}
    for bench in every:
        if bench.name in names and names[bench.name] != bench:
            raise RegistryError(
                f"two benchmarks are named {bench.name!r} ({names[bench.name].package}, {bench.package})"
            )
        names[bench.name] = bench
    return tuple(sorted(names.values(), key=lambda b: (b.order, b.name)))


def benchmarks() -> tuple[Benchmark, ...]:
    """Every registered benchmark, in run order."""
    return _discover(os.environ.get(ENV_MODULES, ""))


def benchmark(name: str) -> Benchmark:
    for bench in benchmarks():
        if bench.name == name:
            return bench
    raise RegistryError(f"unknown benchmark {name!r}; registered: {names()}")


def names() -> list[str]:
    return [bench.name for bench in benchmarks()]
