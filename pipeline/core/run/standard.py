"""What the standard rules (standard.smk) need at parse time, for a benchmark without rules of its own.

From the declaration alone: one play job per scheduled job id (`schedule(call)` returns them), whose
files are `writes["play"]` with the id filled in; then `rate` over every job, `report`, and
`<name>_all`. Params come from the run's params directory. Params that cannot be scheduled schedule
nothing and record their problem, so only the targets needing the benchmark stop (`params_guard`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipeline.core.run.registry import Benchmark, RegistryError
from pipeline.core.run.verbs import VerbCall

#: a job id in a file name: one path part, no wildcard of its own
JOB_ID_PATTERN = r"[A-Za-z0-9_.-]+"


@dataclass(frozen=True)
class StandardRules:
    """One benchmark's standard rules: its paths, its command-line arguments and its scheduled jobs."""

    bench: Benchmark
    params: str  # <params dir>/<name>.yaml
    models: str  # <params dir>/models.yaml
    jobs: tuple[str, ...]  # the scheduled job ids

    @property
    def name(self) -> str:
        return self.bench.name

    @property
    def results(self) -> str:
        return self.bench.results

    def args(self, verb: str) -> str:
        """`--params --models --out` of `verb`: its declared out folder, else the results folder."""
        declared = self.bench.verb(verb)
        out = declared.out if declared is not None and declared.out else self.results
        return f"--params {self.params} --models {self.models} --out {out}"

    @property
    def play_outputs(self) -> list[str]:
        """One play job's files, with the wildcard `{job_id}`."""
        return self.bench.files("play")

    @property
    def play_files(self) -> list[str]:
        """Every scheduled job's files: the rate job's inputs."""
        return [path.format(job_id=job) for job in self.jobs for path in self.play_outputs]

    @property
    def done_paths(self) -> list[str]:
        """The file whose presence means a job is done (its last), per job: the run's progress line."""
        return [self.play_outputs[-1].format(job_id=job) for job in self.jobs]

    def files(self, verb: str) -> list[str]:
        return self.bench.files(verb)


def standard_rules(benchmarks: Iterable[Benchmark], params_dir: str, problems: dict[str, str]) -> list[StandardRules]:
    """The standard rules of every benchmark in `benchmarks` that has no rules of its own."""
    found = []
    for bench in benchmarks:
        if bench.standard_rules:
            found.append(_rules_of(bench, params_dir, problems))
    return found


def _rules_of(bench: Benchmark, params_dir: str, problems: dict[str, str]) -> StandardRules:
    from pipeline.core.artifacts.params import ParamsError

    schedule = bench.verb("schedule")
    missing = [verb for verb in ("play", "rate", "report") if bench.verb(verb) is None]
    if schedule is None or schedule.jobs is None or missing or not bench.writes.get("play"):
        raise RegistryError(
            f"{bench.name}: the standard rules need schedule(call) -> {{job_id: fields}}, play, rate and report, "
            "and writes['play'] naming one job's files with {job_id}; or name rules of the package's own "
            "with rules_file="
        )
    _check_play(bench.name, bench.writes["play"])
    params, models = f"{params_dir}/{bench.name}.yaml", f"{params_dir}/models.yaml"
    try:
        jobs: Sequence[str] = tuple(schedule.jobs(VerbCall(params=params, models=models, out=bench.results)))
    except ParamsError as exc:  # its targets stop on this when they are built (params_guard)
        problems.setdefault(bench.name, str(exc))
        jobs = ()
    return StandardRules(bench, params, models, tuple(jobs))


def _check_play(name: str, files: Sequence[str]) -> None:
    unnamed = [path for path in files if "{job_id}" not in path]
    if unnamed:
        raise RegistryError(f"{name}: writes['play'] {unnamed[0]!r} must name the job by {{job_id}}")
