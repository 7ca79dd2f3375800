# Xent: build maps (one job per game; stories sampled once and kept as literals) -> play (one job
# per game and player, all maps concurrent on one batching judge; paths are content ids) ->
# rescore (every recorded move re-scored in large batches; per-token xents; checked against play)
# -> rate (scores, playability, TrueSkill, metrics.json) -> report (plots).
from pipeline.xent.workflow import RESCORE_OUTPUTS, rate_outputs, report_outputs, xent_rule_inputs

XENT_PARAMS = f"{PARAMS_DIR}/xent.yaml"  # PARAMS_DIR: the Snakefile's params directory
XENT_MODELS = f"{PARAMS_DIR}/models.yaml"
XENT_INPUTS = xent_rule_inputs(XENT_PARAMS, XENT_MODELS)
# the params file is not an input of the maps and plays (their content ids cover what decides them)
XENT_ARGS = f"--params {XENT_PARAMS} --models {XENT_MODELS}"

for _xent_game, _xent_maps in XENT_INPUTS.maps.items():

    rule:
        name:
            f"xent_maps_{_xent_game}"
        output:
            _xent_maps,
        params:
            game=_xent_game,
            args=XENT_ARGS,
        log:
            f"results/xent/logs/maps/{_xent_game}.log",
        conda:
            PIPELINE_ENV
        shell:
            "python -m pipeline xent build --game {params.game} {params.args} --out results/xent/maps 2> {log}"


rule xent_play:
    input:
        maps=lambda w: XENT_INPUTS.job_maps[w.job_id],
    output:
        record="results/xent/play/{game}/{job_id}.json",
        calls="results/xent/play/{game}/{job_id}.calls.parquet",
    wildcard_constraints:
        game="[A-Za-z0-9_.-]+",
        job_id="[0-9a-f]{16}",
    params:
        args=XENT_ARGS,
    log:
        "results/xent/logs/play/{game}/{job_id}.log",
    conda:
        PIPELINE_ENV
    shell:
        "python -m pipeline xent play {wildcards.job_id} {params.args} --maps results/xent/maps "
        "--out results/xent/play 2> {log}"


rule xent_rescore:
    input:
        records=XENT_INPUTS.jobs,
        params=XENT_PARAMS,
        guard=params_guard(PARAMS_PROBLEMS, "xent"),  # names that resolve to nothing stop here
    output:
        [f"results/xent/{name}" for name in RESCORE_OUTPUTS],
    params:
        judges=XENT_INPUTS.judges,
    resources:
        gpu=1,
    log:
        "results/xent/logs/rescore.log",
    conda:
        PIPELINE_ENV
    shell:
        f"python -m pipeline xent rescore --params {{input.params}} --models {XENT_MODELS} "
        "--plays results/xent/play --out results/xent 2> {log}"


rule xent_rate:
    input:
        rules.xent_rescore.output,
        params=XENT_PARAMS,
    output:
        rate_outputs("results/xent"),
    params:
        settings=XENT_INPUTS.report,
    log:
        "results/xent/logs/rate.log",
    conda:
        PIPELINE_ENV
    shell:
        f"python -m pipeline xent rate --params {{input.params}} --models {XENT_MODELS} --out results/xent "
        "2> {log}"


rule xent_report:
    input:
        rules.xent_rate.output,
    output:
        report_outputs("results/xent"),
    params:
        code=XENT_INPUTS.plots_code,  # the plots' code: a change redraws them
    log:
        "results/xent/logs/report.log",
    conda:
        PIPELINE_ENV
    shell:
        "python -m pipeline xent report --out results/xent 2> {log}"


rule xent_all:
    input:
        rules.xent_rescore.output,
        rules.xent_rate.output,
        rules.xent_report.output,


ALL_TARGETS.extend(rules.xent_all.input)
