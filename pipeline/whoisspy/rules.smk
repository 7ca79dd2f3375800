# Who is Spy: one job per scheduled game (its output named by the game's content id), then one job
# that turns every game into tables, TrueSkill ratings, metrics.json and plots. Games of API models
# are played by shard jobs instead, many games per process (pipeline/core/shards.py): each game
# still writes its own content-named files; the shard's output is a marker.
from pipeline.core.progress import announce_games
from pipeline.core.shards import jobs_for_games
from pipeline.whoisspy.workflow import rate_settings, report_outputs, scheduled_seats

WHOISSPY_PARAMS = "params/whoisspy.yaml"
WHOISSPY_SEATS = scheduled_seats(WHOISSPY_PARAMS, "params/models.yaml")
WHOISSPY_SOLO, WHOISSPY_SHARDS = jobs_for_games(WHOISSPY_SEATS, "params/models.yaml")
WHOISSPY_GAMES = WHOISSPY_SOLO
announce_games("whoisspy", [f"results/whoisspy/games/{g}.json" for g in WHOISSPY_SEATS])


rule whoisspy_game:
    output:
        game="results/whoisspy/games/{game_id}.json",
        calls="results/whoisspy/games/{game_id}.calls.parquet",
    wildcard_constraints:
        game_id="[0-9a-f]{16}",
    log:
        "results/whoisspy/logs/games/{game_id}.log",
    shell:
        "{PYTHON} -m pipeline whoisspy play {wildcards.game_id} --params {WHOISSPY_PARAMS} "
        "--models params/models.yaml --out results/whoisspy/games 2> {log}"


rule whoisspy_shard:
    output:
        "results/whoisspy/shards/{shard_id}.json",
    params:
        games=lambda wildcards: ",".join(WHOISSPY_SHARDS[wildcards.shard_id]),
    wildcard_constraints:
        shard_id="[0-9a-f]{16}",
    resources:
        api_jobs=1,  # a cluster profile bounds the jobs that share the provider limits
    log:
        "results/whoisspy/logs/shards/{shard_id}.log",
    shell:
        "{PYTHON} -m pipeline whoisspy play-shard {params.games} --params {WHOISSPY_PARAMS} "
        "--models params/models.yaml --out results/whoisspy/games --marker {output} 2> {log}"


rule whoisspy_rate:
    input:
        shards=expand("results/whoisspy/shards/{shard_id}.json", shard_id=sorted(WHOISSPY_SHARDS)),
        games=expand("results/whoisspy/games/{game_id}.json", game_id=WHOISSPY_GAMES),
        calls=expand("results/whoisspy/games/{game_id}.calls.parquet", game_id=WHOISSPY_GAMES),
        params=WHOISSPY_PARAMS,
    output:
        report_outputs("results/whoisspy"),
    params:
        settings=rate_settings(WHOISSPY_PARAMS),
    log:
        "results/whoisspy/logs/rate.log",
    shell:
        "{PYTHON} -m pipeline whoisspy rate --params {WHOISSPY_PARAMS} --models params/models.yaml "
        "--games results/whoisspy/games --out results/whoisspy 2> {log}"


rule whoisspy_all:
    input:
        rules.whoisspy_rate.output,


ALL_TARGETS.extend(rules.whoisspy_all.input)
