# Leaderboard: combine the benchmarks into results/leaderboard/ (leaderboard.json, leaderboard.md,
# version.json, site/). Included last by the Snakefile, so ALL_TARGETS already lists every other
# benchmark's outputs: the benchmarks' files among them are this rule's inputs (a benchmark that is absent
# simply adds none), and a change to any of them re-publishes.
from pipeline.leaderboard.workflow import leaderboard_code, leaderboard_inputs, published_releases

LEADERBOARD_DIR = "results/leaderboard"


rule leaderboard_build:
    input:
        benchmarks=leaderboard_inputs(ALL_TARGETS, BENCHMARKS, workflow.rules),
        params=f"{PARAMS_DIR}/leaderboard.yaml",
        models=f"{PARAMS_DIR}/models.yaml",
        releases=published_releases(LEADERBOARD_DIR),
    output:
        leaderboard=f"{LEADERBOARD_DIR}/leaderboard.json",
        markdown=f"{LEADERBOARD_DIR}/leaderboard.md",
        version=f"{LEADERBOARD_DIR}/version.json",
        combined=f"{LEADERBOARD_DIR}/combined.csv",
        calibration=f"{LEADERBOARD_DIR}/calibration.json",
        site=directory(f"{LEADERBOARD_DIR}/site"),
    log:
        f"{LEADERBOARD_DIR}/logs/build.log",
    conda:
        PIPELINE_ENV
    params:
        code=leaderboard_code(BENCHMARKS),
    shell:
        "python -m pipeline leaderboard --params {input.params} --models {input.models} --results results "
        "--out results/leaderboard "
        "> {log} 2>&1"


rule leaderboard_all:
    input:
        rules.leaderboard_build.output,


ALL_TARGETS.extend(rules.leaderboard_all.input)
