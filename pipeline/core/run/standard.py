"""The standard rules (standard.smk): what the core generates for every benchmark of the workflow.

From a benchmark's declaration (core.run.registry.Benchmark) and its `rules` (a `Rules`):

- `<name>_play`: one job per scheduled job, its files `writes["play"]` named by the job's content
  id, when the benchmark declares `writes["play"]`. With `Rules.shards`, the games of API models,
  apart from them those of the embedded model, and apart again the bot-only ones are played by
  `<name>_shard` jobs instead, many a process (core.run.shards): each game still writes its own
  content-named files; a shard's output is a marker;
- `<name>_rate`: every played job in (or `Rules.rate_reads`), with the params file and the settings
  and code that decide it as rule params, so a change reruns it;
- `<name>_rounds`, when the benchmark declares `adaptive`: every job of the schedule played, nothing
  rated. `python -m pipeline run` builds it between adaptive rounds (core.run.rounds);
- `<name>_report`: the rated files in, plots and summaries out;
- `<name>_all`: what rate and report write, and the final files of the benchmark's own stages.

A benchmark with stages of its own (SKATE's generate, round and answer jobs, its analyses and
strategy games; Xent's maps, play and rescore) writes them in its rules file (`rules_file`), and
its schedule hook tells the standard rules what those stages play (`Scheduled.played`) and finish
(`Scheduled.final`). Params that cannot be scheduled schedule nothing and stop only the targets
needing the benchmark (core.run.workflow.params_guard). Parsing writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from posixpath import dirname
from typing import TYPE_CHECKING, Any

from pipeline.core.run.declaration import GAME_ID as GAME_ID
from pipeline.core.run.declaration import JOB_ID_PATTERN as JOB_ID_PATTERN
from pipeline.core.run.declaration import PlayJob as PlayJob
from pipeline.core.run.declaration import Rules as Rules
from pipeline.core.run.declaration import ScheduleCall as ScheduleCall
from pipeline.core.run.declaration import Scheduled as Scheduled
from pipeline.core.run.declaration import ScheduleHook as ScheduleHook
from pipeline.core.run.verbs import VerbCall

if TYPE_CHECKING:
    from pipeline.core.run.registry import Benchmark
    from pipeline.core.run.shards import GameJobs


@dataclass(frozen=True)
class BenchmarkRules:
    """One benchmark's rules as Snakemake parses them: paths, arguments, the scheduled jobs."""

    bench: Benchmark
    params: str  # <params dir>/<name>.yaml
    models: str  # <params dir>/models.yaml
    scheduled: Scheduled[Any]
    jobs: GameJobs  # the play jobs: one job each, or shards

    @property
    def name(self) -> str:
        return self.bench.name

    @property
    def results(self) -> str:
        return self.bench.results

    @property
    def state(self) -> Any:
        """The benchmark's own parse-time object (`Scheduled.state`), for its rules file."""
        return self.scheduled.state

    def args(self, verb: str) -> str:
        """`--params --models --out` of `verb`: its declared out folder, else the results folder."""
        declared = self.bench.verb(verb)
        out = declared.out if declared is not None and declared.out else self.results
        return f"--params {self.params} --models {self.models} --out {out}"

    def outputs(self, verb: str) -> list[Any]:
        """What `verb`'s rule writes, folders marked as Snakemake's `directory` outputs."""
        from snakemake.io import directory

        return [directory(path) if folder else path for path, folder in self._written(verb)]

    def files(self, verb: str) -> list[str]:
        return [path for path, _ in self._written(verb)]

    def _written(self, verb: str) -> list[tuple[str, bool]]:
        return [(f"{self.results}/{path.rstrip('/')}", path.endswith("/")) for path in self.bench.writes.get(verb, ())]

    # play and shard: only for a benchmark whose play jobs are standard (writes["play"])
    @property
    def plays(self) -> bool:
        return bool(self.bench.writes.get("play"))

    @property
    def play_log(self) -> str:
        """Beside the play files' folder: logs/games/<id>.log for games/<id>.json."""
        folder = dirname(self.bench.writes["play"][0].rstrip("/"))
        return f"{self.results}/logs/{folder + '/' if folder else ''}{{{GAME_ID}}}.log"

    @property
    def shard_marker(self) -> str:
        return f"{self.results}/shards/{{shard_id}}.json"

    @property
    def shard_log(self) -> str:
        return f"{self.results}/logs/shards/{{shard_id}}.log"

    def play_params(self) -> dict[str, Any]:
        """The play rule's params: its arguments, and each job's content where the jobs carry one."""
        found: dict[str, Any] = {}
        if any(job.content is not None for job in self.scheduled.jobs.values()):
            found["game"] = self.job_content  # what decides the game: a change reruns it
        return found | {"args": self.args("play")}

    def job_content(self, wildcards: Any) -> str:
        return str(self.scheduled.jobs[wildcards[GAME_ID]].content)

    def play_threads(self, wildcards: Any) -> int:
        return self.bench.rules.local_threads if wildcards[GAME_ID] in self.jobs.local_solo else 1

    def shard_games(self, wildcards: Any) -> str:
        return ",".join(self.jobs.shards[wildcards.shard_id])

    def shard_threads(self, wildcards: Any) -> int:
        return self.bench.rules.local_threads if wildcards.shard_id in self.jobs.local else 1

    def shard_api_jobs(self, wildcards: Any) -> int:
        """A shard of API games holds one of the slots a cluster profile gives the provider limits."""
        return 0 if wildcards.shard_id in self.jobs.local else 1

    @property
    def played(self) -> list[str]:
        """Every job of the schedule played: the solo jobs' files and the shards' markers, or the
        files of the benchmark's own play stages."""
        if not self.plays:
            return list(self.scheduled.played)
        solo = [path.format(**{GAME_ID: job}) for job in sorted(self.jobs.solo) for path in self.files("play")]
        return solo + [self.shard_marker.format(shard_id=shard) for shard in sorted(self.jobs.shards)]

    @property
    def rate_inputs(self) -> list[str]:
        reads = self.bench.rules.rate_reads
        return self.played if reads is None else [f"{self.results}/{path.rstrip('/')}" for path in reads]

    @property
    def rate_params(self) -> list[tuple[str, Any]]:
        """One value a setting, and one a scheduled job: a rerun's reason names what changed."""
        from pipeline.core.run.workflow import setting_items

        settings = setting_items(self._with_code(self.scheduled.rate_settings, self.bench.rules.rate_code))
        return settings + [("game", job) for job in sorted(self.scheduled.jobs)]

    @property
    def report_inputs(self) -> list[str]:
        reads = self.bench.rules.report_reads
        return self.files("rate") if reads is None else [f"{self.results}/{path.rstrip('/')}" for path in reads]

    @property
    def report_params(self) -> list[tuple[str, Any]]:
        from pipeline.core.run.workflow import setting_items

        return setting_items(self._with_code(self.scheduled.report_settings, self.bench.rules.report_code))

    def _with_code(self, settings: Mapping[str, Any], modules: Sequence[str]) -> dict[str, Any]:
        from pipeline.core.run.workflow import code_fingerprint

        return {**settings, **({"code": code_fingerprint(self.bench.package, modules)} if modules else {})}

    @property
    def final(self) -> list[str]:
        """What `<name>_all` builds: rate's and report's files and the own stages' final files."""
        return [*self.files("rate"), *self.files("report"), *self.scheduled.final]

    @property
    def done_paths(self) -> list[str]:
        """Per scheduled job, the file whose presence means it is done: the run's progress line."""
        done = self.bench.rules.done or self.bench.writes["play"][-1]
        return [f"{self.results}/{done.rstrip('/')}".format(**{GAME_ID: job}) for job in self.scheduled.jobs]


def check_play_files(name: str, files: Sequence[str]) -> None:
    """Every file of writes["play"] names its game by `{game_id}`, and by nothing else."""
    from pipeline.core.run.registry import RegistryError

    wrong = [path for path in files if set(re.findall(r"\{(\w+)\}", path)) != {GAME_ID}]
    if wrong:
        raise RegistryError(f"{name}: writes['play'] {wrong[0]!r} must name the game by {{{GAME_ID}}} alone")


def standard_rules(
    benchmarks: Iterable[Benchmark], params_dir: str, problems: dict[str, str]
) -> dict[str, BenchmarkRules]:
    """The rules of every benchmark of `benchmarks` that this copy of the project runs, by name."""
    return {bench.name: rules_of(bench, params_dir, problems) for bench in benchmarks if bench.in_workflow}


def rules_of(bench: Benchmark, params_dir: str, problems: dict[str, str]) -> BenchmarkRules:
    """One benchmark's rules: its schedule read once, its jobs grouped into shards."""
    from pipeline.core.artifacts.params import ParamsError
    from pipeline.core.run.shards import jobs_for_games

    _check(bench)
    params, models = f"{params_dir}/{bench.name}.yaml", f"{params_dir}/models.yaml"
    call = ScheduleCall(bench.name, params, models, bench.results, problems)
    try:
        scheduled = _schedule(bench, call)
    except ParamsError as exc:  # its targets stop on this when they are built (params_guard)
        call.stop(exc)
        scheduled = Scheduled()
    seats = {job_id: job.seats for job_id, job in scheduled.jobs.items()}
    jobs = jobs_for_games(seats, models, shards=bench.rules.shards)
    return BenchmarkRules(bench, params, models, scheduled, jobs)


def _schedule(bench: Benchmark, call: ScheduleCall) -> Scheduled[Any]:
    if bench.rules.schedule is not None:
        return bench.rules.schedule(call)
    verb = bench.verb("schedule")
    assert verb is not None and verb.jobs is not None  # _check
    found = verb.jobs(VerbCall(params=call.params, models=call.models, out=call.results))
    return Scheduled(jobs={job_id: PlayJob() for job_id in found})


def _check(bench: Benchmark) -> None:
    from pipeline.core.run.registry import RegistryError

    missing = [verb for verb in ("play", "rate", "report") if bench.verb(verb) is None]
    schedule = bench.verb("schedule")
    if missing:
        raise RegistryError(f"{bench.name}: the rules need the verbs play, rate and report; missing {missing}")
    if bench.writes.get("play"):
        check_play_files(bench.name, bench.writes["play"])
        if bench.rules.schedule is None and (schedule is None or schedule.jobs is None):
            raise RegistryError(
                f"{bench.name}: the play jobs come from rules=Rules(schedule=...) or from "
                "schedule(call) -> {job_id: fields}; declare one"
            )
    elif bench.rules.schedule is None or bench.rules_file is None:
        raise RegistryError(
            f"{bench.name}: declare writes['play'] (one game's files, named by {{{GAME_ID}}}) for the standard "
            "play rules, or play in rules of its own (rules_file=) and say what they play with rules=Rules(schedule=...)"
        )
