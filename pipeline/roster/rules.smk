# Roster stage: one small question to every roster entry; tells who is reachable before games spend.


rule roster_check:
    input:
        params=f"{PARAMS_DIR}/models.yaml",
    output:
        check="results/roster/check.parquet",
        calls="results/roster/calls.parquet",
        metrics="results/roster/metrics.json",
    log:
        "results/roster/logs/check.log",
    conda:
        PIPELINE_ENV
    shell:
        "python -m pipeline roster check --params {input.params} --out results/roster 2> {log}"


rule roster_all:
    input:
        rules.roster_check.output,


ALL_TARGETS.extend(rules.roster_all.input)
