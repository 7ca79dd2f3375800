# SKATE (docs/skate.md): models set code-output-prediction questions for each other and answer them.
#   generate (round, setter) -> round (round) -> answer (round, answerer) -> rate -> report
# Every job's output is named by a content id of what decides it (see pipeline/skate/schedule.py);
# a setter's attempts run the sandbox and the uniqueness check inside its generate job, because
# each retry must be told why the last attempt failed.
from pipeline.skate.workflow import (
    SkateWorkflow,
    analysis_outputs,
    rate_outputs,
    report_outputs,
    strategy_game_output,
    strategy_outputs,
)

SKATE_PARAMS = "params/skate.yaml"
SKATE_OUT = "results/skate"
SKATE = SkateWorkflow(SKATE_PARAMS, "params/models.yaml", SKATE_OUT)
SKATE_ARGS = f"--params {SKATE_PARAMS} --models params/models.yaml --out {SKATE_OUT}"


rule skate_generate:
    input:
        lambda wc: SKATE.generate_inputs(wc.gen_id),
    output:
        record=SKATE_OUT + "/generate/{gen_id}.json",
        calls=SKATE_OUT + "/generate/{gen_id}.calls.parquet",
    wildcard_constraints:
        gen_id="[0-9a-f]{16}",
    log:
        SKATE_OUT + "/logs/generate/{gen_id}.log",
    shell:
        "{PYTHON} -m pipeline skate generate {wildcards.gen_id} {SKATE_ARGS} 2> {log}"


rule skate_round:
    input:
        lambda wc: SKATE.round_inputs(wc.round_id),
    output:
        SKATE_OUT + "/rounds/{round_id}.json",
    wildcard_constraints:
        round_id="[0-9a-f]{16}",
    log:
        SKATE_OUT + "/logs/rounds/{round_id}.log",
    shell:
        "{PYTHON} -m pipeline skate round {wildcards.round_id} {SKATE_ARGS} 2> {log}"


rule skate_answer:
    input:
        lambda wc: SKATE.answer_inputs(wc.answer_id),
    output:
        samples=SKATE_OUT + "/answers/{answer_id}.samples.parquet",
        pcorrect=SKATE_OUT + "/answers/{answer_id}.pcorrect.parquet",
        calls=SKATE_OUT + "/answers/{answer_id}.calls.parquet",
    wildcard_constraints:
        answer_id="[0-9a-f]{16}",
    log:
        SKATE_OUT + "/logs/answers/{answer_id}.log",
    shell:
        "{PYTHON} -m pipeline skate answer {wildcards.answer_id} {SKATE_ARGS} 2> {log}"


rule skate_rate:
    input:
        SKATE.rate_inputs(),
        params=SKATE_PARAMS,
    output:
        rate_outputs(SKATE_OUT),
    params:
        settings=SKATE.settings,
    log:
        SKATE_OUT + "/logs/rate.log",
    shell:
        "{PYTHON} -m pipeline skate rate {SKATE_ARGS} 2> {log}"


rule skate_report:
    input:
        rate_outputs(SKATE_OUT),
        params=SKATE_PARAMS,
    output:
        report_outputs(SKATE_OUT),
    params:
        settings=SKATE.settings,
    log:
        SKATE_OUT + "/logs/report.log",
    shell:
        "{PYTHON} -m pipeline skate report {SKATE_ARGS} 2> {log}"


# The paper's analyses (docs/skate.md): stability as models join and re-ranking with
# the answer-only models re-rate the game's own tables; the strategy comparison plays the same
# roster once per augmentation strategy (the response cache makes repeated model calls free).
rule skate_analyses:
    input:
        SKATE_OUT + "/pcorrect.parquet",
        params=SKATE_PARAMS,
    output:
        analysis_outputs(SKATE_OUT),
    params:
        settings=SKATE.settings,
    log:
        SKATE_OUT + "/logs/analyses.log",
    shell:
        "{PYTHON} -m pipeline skate analyse {SKATE_ARGS} 2> {log}"


rule skate_strategy_game:
    output:
        SKATE_OUT + "/strategies/{strategy}/metrics.json",
    wildcard_constraints:
        strategy="no_info|historical_tasks|historical_performance|full_personal_context|full_context",
    params:
        settings=SKATE.game_settings,
    log:
        SKATE_OUT + "/logs/strategies/{strategy}.log",
    shell:
        "{PYTHON} -m pipeline skate play --strategy {wildcards.strategy} --params {SKATE_PARAMS} "
        "--models params/models.yaml --out {SKATE_OUT}/strategies/{wildcards.strategy} 2> {log}"


rule skate_strategies:
    input:
        [strategy_game_output(SKATE_OUT, s) for s in SKATE.strategies],
        params=SKATE_PARAMS,
    output:
        strategy_outputs(SKATE_OUT),
    params:
        settings=SKATE.settings,
    log:
        SKATE_OUT + "/logs/strategies.log",
    shell:
        "{PYTHON} -m pipeline skate compare-strategies {SKATE_ARGS} 2> {log}"


rule skate_all:
    input:
        rules.skate_report.output,
        rules.skate_analyses.output,
        strategy_outputs(SKATE_OUT) if SKATE.strategies else [],


ALL_TARGETS.extend(rules.skate_all.input)
