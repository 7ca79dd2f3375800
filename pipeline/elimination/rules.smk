# Elimination Game: one job per scheduled game (its output named by the game's content id), then
# `rate` (every scheduled log into tables, multi-pass TrueSkill and metrics.json) and `report` (plots).
# The files `rate` and `report` write are declared once, in benchmark.py. With schedule.adaptive on, the
# scheduled games are those of the round files in results/elimination/rounds (pipeline/elimination/schedule.py).
from pipeline.core.artifacts.params import ParamsError as _EliminationParamsError
from pipeline.core.artifacts.progress import announce_games as _elimination_announce
from pipeline.core.run.shards import jobs_for_games as _elimination_jobs
from pipeline.core.run.workflow import code_fingerprint as _elimination_code
from pipeline.core.run.workflow import setting_items as _elimination_settings
from pipeline.elimination.benchmark import BENCHMARK as ELIMINATION
from pipeline.elimination.config import load_elimination_params as _elimination_params
from pipeline.elimination.schedule import schedule_from_files as _elimination_schedule
from pipeline.elimination.schedule import uses_local_model as _elimination_uses_local

ELIMINATION_DIR = "results/elimination"
ELIMINATION_PARAMS = f"{PARAMS_DIR}/elimination.yaml"  # PARAMS_DIR: the Snakefile's params directory
ELIMINATION_MODELS = f"{PARAMS_DIR}/models.yaml"
try:
    ELIMINATION_GAMES = {g.game_id: g for g in _elimination_schedule(ELIMINATION_PARAMS, ELIMINATION_MODELS)}
    ELIMINATION_RATING = _elimination_params(ELIMINATION_PARAMS).rating.model_dump(mode="json")
except _EliminationParamsError as _exc:
    # the names of valid params that resolve to nothing (the Snakefile stopped on invalid ones): other
    # benchmarks' targets still work; building the DAG of this benchmark's stops with the problem (the guard)
    ELIMINATION_GAMES, ELIMINATION_RATING = {}, {}
    PARAMS_PROBLEMS.setdefault("elimination", str(_exc))
# API games, and apart from them the embedded model's games, are played many per job by shard jobs
# (pipeline/core/run/shards.py); bot-only games one job each
ELIMINATION_SOLO, ELIMINATION_SHARDS, ELIMINATION_LOCAL_SHARDS = _elimination_jobs(
    {g.game_id: g.seats for g in ELIMINATION_GAMES.values()}, ELIMINATION_MODELS
)
# the files whose presence means a game is done, for the run's progress line (written when the run starts)
_elimination_announce("elimination", [f"{ELIMINATION_DIR}/games/{g}/calls.parquet" for g in ELIMINATION_GAMES])

# the modules that turn logs into tables, ratings and metrics, and those that draw the plots: a change
# reruns rate or report (games replay only when their content id changes)
ELIMINATION_RATE_CODE = _elimination_code(
    "pipeline.elimination",
    ("reader.py", "records.py", "metrics.py", "ratings.py", "schemas.py", "importer.py", "matching.py", "config.py"),
)
ELIMINATION_REPORT_CODE = _elimination_code("pipeline.elimination", ("plots.py",))
# the params file is not an input of the games (a game's content already covers what decides it)
ELIMINATION_ARGS = f"--params {ELIMINATION_PARAMS} --models {ELIMINATION_MODELS} --out {ELIMINATION_DIR}/games"


rule elimination_play:
    output:
        directory(f"{ELIMINATION_DIR}/games/{{game_id}}"),
    log:
        f"{ELIMINATION_DIR}/logs/games/{{game_id}}.log",
    wildcard_constraints:
        game_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    # a game with the embedded model takes both cores (torch threads), so two never compete
    threads: lambda wildcards: 2 if _elimination_uses_local(ELIMINATION_GAMES[wildcards.game_id]) else 1
    params:
        # what decides the game (seats, roster entries, rules): a change reruns it
        game=lambda wildcards: ELIMINATION_GAMES[wildcards.game_id].content,
        args=ELIMINATION_ARGS,
    shell:
        "python -m pipeline elimination play {wildcards.game_id} {params.args} 2> {log}"


rule elimination_shard:
    output:
        marker=f"{ELIMINATION_DIR}/shards/{{shard_id}}.json",
    log:
        f"{ELIMINATION_DIR}/logs/shards/{{shard_id}}.log",
    wildcard_constraints:
        shard_id="[0-9a-f]{16}",
    conda:
        PIPELINE_ENV
    # the embedded model's games share its batch and both cores, as one such game does alone
    threads: lambda wildcards: 2 if wildcards.shard_id in ELIMINATION_LOCAL_SHARDS else 1
    resources:
        # a cluster profile bounds the jobs that share the provider limits
        api_jobs=lambda wildcards: 0 if wildcards.shard_id in ELIMINATION_LOCAL_SHARDS else 1,
    params:
        games=lambda wildcards: ",".join(ELIMINATION_SHARDS[wildcards.shard_id]),
        args=ELIMINATION_ARGS,
    shell:
        "python -m pipeline elimination play {params.games} {params.args} --marker {output.marker} 2> {log}"


rule elimination_rate:
    input:
        games=expand(f"{ELIMINATION_DIR}/games/{{game_id}}", game_id=sorted(ELIMINATION_SOLO)),
        shards=expand(f"{ELIMINATION_DIR}/shards/{{shard_id}}.json", shard_id=sorted(ELIMINATION_SHARDS)),
        params=ELIMINATION_PARAMS,
        guard=params_guard(PARAMS_PROBLEMS, "elimination"),  # names that resolve to nothing stop here
    output:
        ELIMINATION.files("rate"),
    log:
        f"{ELIMINATION_DIR}/logs/rate.log",
    conda:
        PIPELINE_ENV
    params:
        # one value a field, and one a scheduled game (the shards' included: the rate job reads them
        # all), so that a rerun's reason names the field or the games that changed
        *_elimination_settings({"rating": ELIMINATION_RATING}),
        *(("game", game_id) for game_id in sorted(ELIMINATION_GAMES)),
        code=ELIMINATION_RATE_CODE,
    shell:
        f"python -m pipeline elimination rate --params {{input.params}} --models {ELIMINATION_MODELS} "
        "--games results/elimination/games --out results/elimination 2> {log}"


# every game of the schedule played, nothing rated: with the adaptive schedule on, `python -m pipeline run`
# builds this target between rounds (pipeline/core/run/rounds.py), so each round plays only its games
rule elimination_rounds:
    input:
        games=expand(f"{ELIMINATION_DIR}/games/{{game_id}}", game_id=sorted(ELIMINATION_SOLO)),
        shards=expand(f"{ELIMINATION_DIR}/shards/{{shard_id}}.json", shard_id=sorted(ELIMINATION_SHARDS)),
        guard=params_guard(PARAMS_PROBLEMS, "elimination"),


rule elimination_report:
    input:
        leaderboard=f"{ELIMINATION_DIR}/leaderboard.parquet",
        tables=[f for f in ELIMINATION.files("rate") if f.startswith(f"{ELIMINATION_DIR}/tables/")],
    output:
        plots=directory(*ELIMINATION.files("report")),
    log:
        f"{ELIMINATION_DIR}/logs/report.log",
    conda:
        PIPELINE_ENV
    params:
        code=ELIMINATION_REPORT_CODE,
    shell:
        "python -m pipeline elimination report --out results/elimination 2> {log}"


rule elimination_all:
    input:
        rules.elimination_rate.output,
        rules.elimination_report.output,


ALL_TARGETS.extend(rules.elimination_all.input)
