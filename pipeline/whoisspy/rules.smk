# Who is Spy: one job per scheduled game (its output named by the game's content id), then `rate`
# (every game into tables, TrueSkill ratings and metrics.json) and `report` (plots). Games of API
# models, and apart from them games of the embedded model, are played by shard jobs instead, many
# games per process (pipeline/core/run/shards.py): each game still writes its own content-named
# files; the shard's output is a marker.
# The files `rate` and `report` write are declared once, in benchmark.py. With schedule.adaptive on, the
# scheduled games are those of the round files in results/whoisspy/rounds (pipeline/whoisspy/schedule.py).
from pipeline.core.artifacts.progress import announce_games
from pipeline.core.run import jobs_for_games
from pipeline.core.run import setting_items
from pipeline.whoisspy.benchmark import BENCHMARK as WHOISSPY
from pipeline.whoisspy.workflow import rate_settings, report_code_fingerprint, scheduled_seats

WHOISSPY_PARAMS = f"{PARAMS_DIR}/whoisspy.yaml"  # PARAMS_DIR: the Snakefile's params directory
WHOISSPY_MODELS = f"{PARAMS_DIR}/models.yaml"
# unreadable params schedule nothing and stop whoisspy's targets (PARAMS_PROBLEMS, the guard below)
WHOISSPY_SEATS = scheduled_seats(WHOISSPY_PARAMS, WHOISSPY_MODELS, PARAMS_PROBLEMS)
WHOISSPY_SOLO, WHOISSPY_SHARDS, WHOISSPY_LOCAL_SHARDS = jobs_for_games(WHOISSPY_SEATS, WHOISSPY_MODELS)
# the files whose presence means a game is done, for the run's progress line (written when the run starts)
announce_games("whoisspy", [f"results/whoisspy/games/{g}.json" for g in WHOISSPY_SEATS])
# the params file is not an input of the games (a game's id already covers what decides it)
WHOISSPY_ARGS = f"--params {WHOISSPY_PARAMS} --models {WHOISSPY_MODELS}"


rule whoisspy_play:
    output:
        game="results/whoisspy/games/{game_id}.json",
        calls="results/whoisspy/games/{game_id}.calls.parquet",
    log:
        "results/whoisspy/logs/games/{game_id}.log",
    wildcard_constraints:
        game_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    params:
        args=WHOISSPY_ARGS,
    shell:
        "python -m pipeline whoisspy play {wildcards.game_id} {params.args} --out results/whoisspy/games 2> {log}"


rule whoisspy_shard:
    output:
        marker="results/whoisspy/shards/{shard_id}.json",
    log:
        "results/whoisspy/logs/shards/{shard_id}.log",
    wildcard_constraints:
        shard_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    resources:
        # a cluster profile bounds the jobs that share the provider limits
        api_jobs=lambda wildcards: 0 if wildcards.shard_id in WHOISSPY_LOCAL_SHARDS else 1,
    params:
        games=lambda wildcards: ",".join(WHOISSPY_SHARDS[wildcards.shard_id]),
        args=WHOISSPY_ARGS,
    shell:
        "python -m pipeline whoisspy play {params.games} {params.args} --out results/whoisspy/games "
        "--marker {output.marker} 2> {log}"


rule whoisspy_rate:
    input:
        shards=expand("results/whoisspy/shards/{shard_id}.json", shard_id=sorted(WHOISSPY_SHARDS)),
        games=expand("results/whoisspy/games/{game_id}.json", game_id=WHOISSPY_SOLO),
        calls=expand("results/whoisspy/games/{game_id}.calls.parquet", game_id=WHOISSPY_SOLO),
        params=WHOISSPY_PARAMS,
        guard=params_guard(PARAMS_PROBLEMS, "whoisspy"),  # names that resolve to nothing stop here
    output:
        WHOISSPY.files("rate"),
    log:
        "results/whoisspy/logs/rate.log",
    conda:
        PIPELINE_ENV
    params:
        # one value a field: a rerun's reason names the field that changed
        *setting_items(rate_settings(WHOISSPY_PARAMS)),
    shell:
        f"python -m pipeline whoisspy rate --params {{input.params}} --models {WHOISSPY_MODELS} "
        "--games results/whoisspy/games --out results/whoisspy 2> {log}"


# every game of the schedule played, nothing rated: with the adaptive schedule on, `python -m pipeline run`
# builds this target between rounds (pipeline/core/run/rounds.py), so each round plays only its games
rule whoisspy_rounds:
    input:
        shards=expand("results/whoisspy/shards/{shard_id}.json", shard_id=sorted(WHOISSPY_SHARDS)),
        games=expand("results/whoisspy/games/{game_id}.json", game_id=WHOISSPY_SOLO),
        calls=expand("results/whoisspy/games/{game_id}.calls.parquet", game_id=WHOISSPY_SOLO),
        guard=params_guard(PARAMS_PROBLEMS, "whoisspy"),


rule whoisspy_report:
    input:
        rules.whoisspy_rate.output,
    output:
        WHOISSPY.files("report"),
    log:
        "results/whoisspy/logs/report.log",
    conda:
        PIPELINE_ENV
    params:
        code=report_code_fingerprint(),  # the plots' code: a change redraws them
    shell:
        "python -m pipeline whoisspy report --out results/whoisspy 2> {log}"


rule whoisspy_all:
    input:
        rules.whoisspy_rate.output,
        rules.whoisspy_report.output,


ALL_TARGETS.extend(rules.whoisspy_all.input)
