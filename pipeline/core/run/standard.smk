# The standard rules of every benchmark (pipeline/core/run/standard.py), built from its declaration
# and its schedule, which the Snakefile read once (BENCHMARK_RULES): `<name>_play` (one job per
# scheduled game, its files named by the game's content id) and `<name>_shard` (many games a job),
# `<name>_rate`, `<name>_rounds` (adaptive rounds), `<name>_report` and the final `<name>_all`.
# A rule's `shell:` (and a lambda) is evaluated when its job runs, when the loop has moved on to the
# last benchmark: the lines are constant, what differs goes through params, and every function of
# a job is a method of its benchmark's rules (bound when the rule is made).
for _rules in BENCHMARK_RULES.values():
    if _rules.plays:
        # the files whose presence means a game is done, for the run's progress line (written when it starts)
        announce_games(_rules.name, _rules.done_paths)

        # no params input: a game's id covers everything that decides it, so a params change (a new
        # player) plays only the games whose id is new
        rule:
            name:
                f"{_rules.name}_play"
            output:
                _rules.outputs("play"),
            log:
                _rules.play_log,
            wildcard_constraints:
                game_id=JOB_ID_PATTERN,
            conda:
                PIPELINE_ENV
            threads: _rules.play_threads
            params:
                **_rules.play_params(),
                bench=_rules.name,
            shell:
                "python -m pipeline {params.bench} play {wildcards.game_id} {params.args} 2> {log}"

    if _rules.plays and _rules.bench.rules.shards:

        rule:
            name:
                f"{_rules.name}_shard"
            output:
                marker=_rules.shard_marker,
            log:
                _rules.shard_log,
            wildcard_constraints:
                shard_id=JOB_ID_PATTERN,
            conda:
                PIPELINE_ENV
            # the embedded model's games share its batch and its cores, as one such game does alone
            threads: _rules.shard_threads
            resources:
                # a cluster profile bounds the jobs that share the provider limits
                api_jobs=_rules.shard_api_jobs,
            params:
                bench=_rules.name,
                games=_rules.shard_games,
                args=_rules.args("play"),
            shell:
                "python -m pipeline {params.bench} play {params.games} {params.args} --marker {output.marker} 2> {log}"

    rule:
        name:
            f"{_rules.name}_rate"
        input:
            _rules.rate_inputs,
            params=_rules.params,
            guard=params_guard(PARAMS_PROBLEMS, _rules.name),  # names that resolve to nothing stop here
        output:
            _rules.outputs("rate"),
        log:
            f"{_rules.results}/logs/rate.log",
        conda:
            PIPELINE_ENV
        params:
            *_rules.rate_params,  # one value a field: a rerun's reason names the field that changed
            bench=_rules.name,
            args=_rules.args("rate"),
        shell:
            "python -m pipeline {params.bench} rate {params.args} 2> {log}"

    if _rules.bench.adaptive is not None:

        # every game of the schedule played, nothing rated: with the adaptive schedule on, `python -m
        # pipeline run` builds this target between rounds (pipeline/core/run/rounds.py)
        rule:
            name:
                f"{_rules.name}_rounds"
            input:
                _rules.played,
                guard=params_guard(PARAMS_PROBLEMS, _rules.name),

    rule:
        name:
            f"{_rules.name}_report"
        input:
            _rules.report_inputs,
            params=_rules.params,
        output:
            _rules.outputs("report"),
        log:
            f"{_rules.results}/logs/report.log",
        conda:
            PIPELINE_ENV
        params:
            *_rules.report_params,
            bench=_rules.name,
            args=_rules.args("report"),
        shell:
            "python -m pipeline {params.bench} report {params.args} 2> {log}"

    rule:
        name:
            f"{_rules.name}_all"
        input:
            _rules.final,

    ALL_TARGETS.extend(_rules.final)
