# Xent's own stages: build maps (one job per game; stories sampled once and kept as literals) -> play
# (a job per game and player, all maps concurrent on one batching judge; paths are content ids; many
# jobs per process, as shards, unless parallel.games_per_job is 0) -> rescore (every recorded move
# re-scored in large batches; per-token xents; checked against play). Then the standard rules
# (pipeline/core/run/standard.smk): rate (scores, playability, TrueSkill, metrics.json), report
# (plots), rounds and all. The files `rescore`, `rate` and `report` write are declared once, in
# benchmark.py. With schedule.adaptive on, the play jobs are those of the round files in
# results/xent/rounds (pipeline/xent/schedule.py).
from pipeline.xent.benchmark import BENCHMARK as XENT

XENT_PARAMS = f"{PARAMS_DIR}/xent.yaml"  # PARAMS_DIR: the Snakefile's params directory
XENT_MODELS = f"{PARAMS_DIR}/models.yaml"
# the work the Snakefile read once (pipeline/xent/workflow.py: XentRuleInputs); params that cannot be
# scheduled (no map set imported yet) schedule nothing: the other benchmarks run, xent's jobs fail
# with the full message, and `plan` and the run's start say so (schedule_notes)
XENT_INPUTS = BENCHMARK_RULES["xent"].state
# the params file is not an input of the maps and plays (their content ids cover what decides them)
XENT_ARGS = f"--params {XENT_PARAMS} --models {XENT_MODELS}"

for _xent_game, _xent_maps in XENT_INPUTS.maps.items():

    rule:
        name:
            f"xent_maps_{_xent_game}"
        output:
            _xent_maps,
        log:
            f"results/xent/logs/maps/{_xent_game}.log",
        conda:
            PIPELINE_ENV
        params:
            game=_xent_game,
            args=XENT_ARGS,
        shell:
            "python -m pipeline xent build --game {params.game} {params.args} --out results/xent/maps 2> {log}"


rule xent_play:
    input:
        maps=lambda w: XENT_INPUTS.job_maps[w.job_id],
    output:
        record="results/xent/play/{game}/{job_id}.json",
        calls="results/xent/play/{game}/{job_id}.calls.parquet",
    log:
        "results/xent/logs/play/{game}/{job_id}.log",
    wildcard_constraints:
        game="[A-Za-z0-9_.-]+",
        job_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    params:
        args=XENT_ARGS,
    shell:
        "python -m pipeline xent play {wildcards.job_id} {params.args} --maps results/xent/maps "
        "--out results/xent/play 2> {log}"


# With parallel.games_per_job > 0 (the default) the play jobs are played by shard jobs instead, many
# jobs concurrently in one process (pipeline/core/run/shards.py): the judge and the embedded model load
# once, and the jobs' requests share their batches. Each job still writes its own content-named
# record; the shard's output is a marker.
rule xent_shard:
    input:
        maps=lambda w: XENT_INPUTS.shard_maps[w.shard_id],
    output:
        marker="results/xent/shards/{shard_id}.json",
    log:
        "results/xent/logs/shards/{shard_id}.log",
    wildcard_constraints:
        shard_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    params:
        jobs=lambda w: ",".join(XENT_INPUTS.shards[w.shard_id]),
        args=XENT_ARGS,
    shell:
        "python -m pipeline xent play {params.jobs} {params.args} --maps results/xent/maps "
        "--out results/xent/play --marker {output.marker} 2> {log}"


rule xent_rescore:
    input:
        records=XENT_INPUTS.played,
        params=XENT_PARAMS,
        guard=params_guard(PARAMS_PROBLEMS, "xent"),  # names that resolve to nothing stop here
    output:
        XENT.files("rescore"),
    log:
        "results/xent/logs/rescore.log",
    conda:
        PIPELINE_ENV
    resources:
        gpu=1,
    params:
        judges=XENT_INPUTS.judges,
    shell:
        f"python -m pipeline xent rescore --params {{input.params}} --models {XENT_MODELS} "
        "--plays results/xent/play --out results/xent 2> {log}"
