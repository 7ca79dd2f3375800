# SKATE's own stages (docs/skate.md): models set code-output-prediction questions for each other and
# answer them, generate (round, setter) -> round (round) -> answer (round, answerer), then the paper's
# analyses and strategy games. rate, rounds, report and all are the standard rules
# (pipeline/core/run/standard.smk), from the declaration (benchmark.py) and SKATE's schedule.
# Every job's output is named by a content id of what decides it (see pipeline/skate/schedule.py);
# a setter's attempts run the sandbox and the uniqueness check inside its generate job, because
# each retry must be told why the last attempt failed. With adaptive on, the jobs are those of the
# adaptive rounds' files in results/skate/rounds (round-NNN.json; pipeline/skate/schedule.py).
from pathlib import Path

from pipeline.core.run import setting_items

# The files the analyses write are declared once, in benchmark.py (skate.outputs).
from pipeline.skate.workflow import analysis_outputs, strategy_game_output, strategy_outputs

SKATE_PARAMS = f"{PARAMS_DIR}/skate.yaml"  # PARAMS_DIR: the Snakefile's params directory
SKATE_MODELS = f"{PARAMS_DIR}/models.yaml"
SKATE_OUT = "results/skate"
# the schedule the Snakefile read once (pipeline/skate/workflow.py: SkateWorkflow); unreadable params
# schedule nothing and stop skate's targets (PARAMS_PROBLEMS, the standard rate rule's guard)
SKATE = BENCHMARK_RULES["skate"].state
# the params file is an input only of the jobs it decides as a whole (a job's id covers the rest)
SKATE_INPUTS = f"--params {SKATE_PARAMS} --models {SKATE_MODELS}"
SKATE_ARGS = f"{SKATE_INPUTS} --out {SKATE_OUT}"


rule skate_generate:
    input:
        lambda wc: SKATE.generate_inputs(wc.gen_id),
    output:
        record=f"{SKATE_OUT}/generate/{{gen_id}}.json",
        calls=f"{SKATE_OUT}/generate/{{gen_id}}.calls.parquet",
    log:
        f"{SKATE_OUT}/logs/generate/{{gen_id}}.log",
    wildcard_constraints:
        gen_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    params:
        args=SKATE_ARGS,
    shell:
        "python -m pipeline skate play {wildcards.gen_id} {params.args} 2> {log}"


rule skate_round:
    input:
        lambda wc: SKATE.round_inputs(wc.round_id),
    output:
        f"{SKATE_OUT}/rounds/{{round_id}}.json",
    log:
        f"{SKATE_OUT}/logs/rounds/{{round_id}}.log",
    wildcard_constraints:
        round_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    params:
        args=SKATE_ARGS,
    shell:
        "python -m pipeline skate play {wildcards.round_id} {params.args} 2> {log}"


rule skate_answer:
    input:
        lambda wc: SKATE.answer_inputs(wc.answer_id),
    output:
        samples=f"{SKATE_OUT}/answers/{{answer_id}}.samples.parquet",
        pcorrect=f"{SKATE_OUT}/answers/{{answer_id}}.pcorrect.parquet",
        calls=f"{SKATE_OUT}/answers/{{answer_id}}.calls.parquet",
    log:
        f"{SKATE_OUT}/logs/answers/{{answer_id}}.log",
    wildcard_constraints:
        answer_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    params:
        args=SKATE_ARGS,
    shell:
        "python -m pipeline skate play {wildcards.answer_id} {params.args} 2> {log}"


# The paper's analyses (docs/skate.md): stability as models join and re-ranking with
# the answer-only models re-rate the game's own tables; the strategy comparison plays the same
# roster once per augmentation strategy (the response cache makes repeated model calls free).
rule skate_analyses:
    input:
        f"{SKATE_OUT}/pcorrect.parquet",
        params=SKATE_PARAMS,
    output:
        analysis_outputs(SKATE_OUT),
    log:
        f"{SKATE_OUT}/logs/analyses.log",
    conda:
        PIPELINE_ENV
    params:
        *setting_items(SKATE.settings),
        args=SKATE_ARGS,
    shell:
        "python -m pipeline skate analyse {params.args} 2> {log}"


rule skate_strategy_game:
    output:
        f"{SKATE_OUT}/strategies/{{strategy}}/metrics.json",
    log:
        f"{SKATE_OUT}/logs/strategies/{{strategy}}.log",
    wildcard_constraints:
        strategy="no_info|historical_tasks|historical_performance|full_personal_context|full_context",
    conda:
        PIPELINE_ENV
    params:
        *setting_items(SKATE.game_settings),
        args=SKATE_INPUTS,
        folder=lambda wildcards, output: str(Path(output[0]).parent),
    shell:
        "python -m pipeline skate play-game --strategy {wildcards.strategy} {params.args} "
        "--out {params.folder} 2> {log}"


rule skate_strategies:
    input:
        [strategy_game_output(SKATE_OUT, s) for s in SKATE.strategies],
        params=SKATE_PARAMS,
    output:
        strategy_outputs(SKATE_OUT),
    log:
        f"{SKATE_OUT}/logs/strategies.log",
    conda:
        PIPELINE_ENV
    params:
        *setting_items(SKATE.settings),
        args=SKATE_ARGS,
    shell:
        "python -m pipeline skate compare-strategies {params.args} 2> {log}"
