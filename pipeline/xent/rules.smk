# Xent: build maps (one job per game; stories sampled once and kept as literals) -> play (one job
# per game and player, all maps concurrent on one batching judge; paths are content ids) ->
# rescore (every recorded move re-scored in large batches; per-token xents; checked against play)
# -> report (scores, playability, TrueSkill, metrics.json, plots).
from pipeline.xent.workflow import RESCORE_OUTPUTS, report_outputs, xent_plan

XENT_PARAMS = "params/xent.yaml"
XENT_PLAN = xent_plan(XENT_PARAMS, "params/models.yaml")

for _xent_game, _xent_maps in XENT_PLAN.maps.items():

    rule:
        name:
            f"xent_maps_{_xent_game}"
        output:
            _xent_maps,
        params:
            game=_xent_game,
        log:
            f"results/xent/logs/maps/{_xent_game}.log",
        shell:
            "{PYTHON} -m pipeline xent build --game {params.game} --params {XENT_PARAMS} "
            "--models params/models.yaml --out results/xent/maps 2> {log}"


rule xent_play:
    input:
        maps=lambda w: XENT_PLAN.job_maps[w.job_id],
    output:
        record="results/xent/play/{game}/{job_id}.json",
        calls="results/xent/play/{game}/{job_id}.calls.parquet",
    wildcard_constraints:
        game="[A-Za-z0-9_.-]+",
        job_id="[0-9a-f]{16}",
    log:
        "results/xent/logs/play/{game}/{job_id}.log",
    shell:
        "{PYTHON} -m pipeline xent play-job --game {wildcards.game} --job-id {wildcards.job_id} "
        "--params {XENT_PARAMS} --models params/models.yaml --maps results/xent/maps --out results/xent/play 2> {log}"


rule xent_rescore:
    input:
        records=XENT_PLAN.jobs,
        params=XENT_PARAMS,
    output:
        [f"results/xent/{name}" for name in RESCORE_OUTPUTS],
    params:
        judges=XENT_PLAN.judges,
    resources:
        gpu=1,
    log:
        "results/xent/logs/rescore.log",
    shell:
        "{PYTHON} -m pipeline xent rescore --params {XENT_PARAMS} --models params/models.yaml "
        "--plays results/xent/play --out results/xent 2> {log}"


rule xent_report:
    input:
        rules.xent_rescore.output,
    output:
        report_outputs("results/xent"),
    params:
        settings=XENT_PLAN.report,
    log:
        "results/xent/logs/report.log",
    shell:
        "{PYTHON} -m pipeline xent report --params {XENT_PARAMS} --models params/models.yaml --out results/xent 2> {log}"


rule xent_all:
    input:
        rules.xent_rescore.output,
        rules.xent_report.output,


ALL_TARGETS.extend(rules.xent_all.input)
