# Who is Spy: one job per scheduled game (its output named by the game's content id), then one job
# that turns every game into tables, TrueSkill ratings, metrics.json and plots.
from pipeline.whoisspy.workflow import rate_settings, report_outputs, scheduled_game_ids

WHOISSPY_PARAMS = "params/whoisspy.yaml"
WHOISSPY_GAMES = scheduled_game_ids(WHOISSPY_PARAMS, "params/models.yaml")


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


rule whoisspy_rate:
    input:
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
