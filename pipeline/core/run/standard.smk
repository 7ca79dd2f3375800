# The standard rules of every benchmark that ships no rules of its own (pipeline/core/run/standard.py),
# built from its declaration: `<name>_play` (one job per scheduled job id, its files named by the id),
# `<name>_rate` (every job in), `<name>_report` and the final `<name>_all`. Params come from PARAMS_DIR;
# params that cannot be scheduled stop only the targets needing the benchmark (the rate rule's guard).
from pipeline.core.artifacts.progress import announce_games as _standard_announce
from pipeline.core.run.standard import JOB_ID_PATTERN as _STANDARD_JOB_ID
from pipeline.core.run.standard import standard_rules as _standard_rules

for _standard in _standard_rules(BENCHMARKS, PARAMS_DIR, PARAMS_PROBLEMS):
    # the files whose presence means a job is done, for the run's progress line (written when it starts)
    _standard_announce(_standard.name, _standard.done_paths)

    # no params input: a job id covers everything that decides the job, so a params change (a new
    # player) plays only the jobs whose id is new
    rule:
        name:
            f"{_standard.name}_play"
        output:
            _standard.play_outputs,
        log:
            f"{_standard.results}/logs/play/{{job_id}}.log",
        wildcard_constraints:
            job_id=_STANDARD_JOB_ID,
        conda:
            PIPELINE_ENV
        params:
            bench=_standard.name,
            args=_standard.args("play"),
        shell:
            "python -m pipeline {params.bench} play {wildcards.job_id} {params.args} 2> {log}"

    rule:
        name:
            f"{_standard.name}_rate"
        input:
            jobs=_standard.play_files,
            params=_standard.params,
            guard=params_guard(PARAMS_PROBLEMS, _standard.name),  # names that resolve to nothing stop here
        output:
            _standard.files("rate"),
        log:
            f"{_standard.results}/logs/rate.log",
        conda:
            PIPELINE_ENV
        params:
            bench=_standard.name,
            args=_standard.args("rate"),
        shell:
            "python -m pipeline {params.bench} rate {params.args} 2> {log}"

    rule:
        name:
            f"{_standard.name}_report"
        input:
            _standard.files("rate"),
        output:
            _standard.files("report"),
        log:
            f"{_standard.results}/logs/report.log",
        conda:
            PIPELINE_ENV
        params:
            bench=_standard.name,
            args=_standard.args("report"),
        shell:
            "python -m pipeline {params.bench} report {params.args} 2> {log}"

    rule:
        name:
            f"{_standard.name}_all"
        input:
            _standard.files("rate"),
            _standard.files("report"),

    ALL_TARGETS.extend([*_standard.files("rate"), *_standard.files("report")])
