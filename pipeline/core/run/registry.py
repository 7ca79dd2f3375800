"""The benchmark registry: each benchmark declares itself once, in its package's `benchmark.py`.

The declaration names the benchmark, its params file, its Snakemake rules, the outputs DVC keeps,
the tables the leaderboard reads (with their pandera schemas) and its replay builder. The
Snakefile, the leaderboard and the test that checks `dvc.yaml` all derive from it, so adding a
benchmark touches its own folder, its `dvc.yaml` stage and its params file (docs/adding-a-benchmark.md).

Benchmarks are found in three places, in this order:
- every subpackage `pipeline.<name>` that has a `benchmark` module defining `BENCHMARK`;
- the entry-point group `pipeline.benchmarks` (an installed package: `name = "module:BENCHMARK"`);
- the environment variable `PIPELINE_BENCHMARKS`: comma-separated module names, each defining
  `BENCHMARK` (handy for a benchmark that lives outside the package, e.g. in tests).
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
from typing import Any

import pandera.polars as pa

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
ENTRY_POINT_GROUP = "pipeline.benchmarks"
ENV_MODULES = "PIPELINE_BENCHMARKS"


class RegistryError(ValueError):
    """A benchmark declaration that cannot be used, named with where it came from."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, as the rest of the pipeline sees it.

    Paths in `outputs`, `tables` and `extra_inputs` are relative to the results folder
    `results/<name>/`. `replays(benchmark, limit)` builds the site's replay pages (or None).
    """

    name: str
    title: str
    package: str  # the importable package holding rules.smk
    outputs: tuple[str, ...]  # what DVC keeps (persisted) besides metrics.json
    tables: Mapping[str, type[pa.DataFrameModel]] = field(default_factory=dict)
    replays: Callable[..., Any] | None = None
    extra_inputs: tuple[str, ...] = ()  # globs of other files the leaderboard hashes into its stamp
    headline: tuple[str, ...] = ()  # metrics.json keys the leaderboard shows (params can override)
    order: int = 100  # position in the Snakefile and on the leaderboard (then by name)
    # the run plan's estimators: a module defining ESTIMATORS = {rule: estimator} (core.run.estimates),
    # imported only when a plan is made
    estimators: str | None = None
    plays_models: bool = True  # False: no rule calls a model (the plan shows no calls, not unknown ones)

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name):
            raise RegistryError(f"benchmark name {self.name!r} must match {NAME_PATTERN.pattern}")
        for relative in (*self.outputs, *self.tables):
            if relative.startswith("/") or ".." in Path(relative).parts:
                raise RegistryError(f"{self.name}: {relative!r} must be a path inside results/{self.name}/")

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
        module = importlib.import_module(self.estimators)
        table = getattr(module, "ESTIMATORS", None)
        if not isinstance(table, Mapping):
            raise RegistryError(f"{self.name}: {self.estimators} must define ESTIMATORS = {{rule: estimator}}")
        foreign = [rule for rule in table if not rule.startswith(f"{self.name}_")]
        if foreign:
            raise RegistryError(f"{self.name}: {self.estimators} estimates rules of another benchmark: {foreign}")
        return table

    @property
    def rules(self) -> Path:
        return package_dir(self.package) / "rules.smk"

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
            raise RegistryError(f"two benchmarks are named {bench.name!r} ({names[bench.name].package}, {bench.package})")
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
