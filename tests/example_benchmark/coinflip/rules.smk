# Coin flip: one job per scheduled game (named by its content id), then `rate` and `report`, like
# every benchmark (the verb set: pipeline/core/run/verbs.py).
from coinflip.config import load as _coinflip_load
from coinflip.play import schedule as _coinflip_schedule

COINFLIP_PARAMS = "params/coinflip.yaml"
COINFLIP_GAMES = sorted(_coinflip_schedule(_coinflip_load(COINFLIP_PARAMS)))


# no params input: the game id already covers everything that decides the game, so editing the
# params (adding a player) reruns only the games whose id is new
rule coinflip_play:
    output:
        game="results/coinflip/games/{game_id}.json",
    wildcard_constraints:
        game_id="[0-9a-f]{16}",
    params:
        params_file=COINFLIP_PARAMS,
    log:
        "results/coinflip/logs/games/{game_id}.log",
    conda:
        PIPELINE_ENV
    shell:
        "python -m pipeline coinflip play {wildcards.game_id} --params {params.params_file} 2> {log}"


rule coinflip_rate:
    input:
        games=expand("results/coinflip/games/{game_id}.json", game_id=COINFLIP_GAMES),
        params=COINFLIP_PARAMS,
    output:
        table="results/coinflip/games.parquet",
        metrics="results/coinflip/metrics.json",
    log:
        "results/coinflip/logs/rate.log",
    conda:
        PIPELINE_ENV
    shell:
        "python -m pipeline coinflip rate --params {input.params} 2> {log}"


rule coinflip_report:
    input:
        metrics="results/coinflip/metrics.json",
    output:
        summary="results/coinflip/summary.md",
    log:
        "results/coinflip/logs/report.log",
    conda:
        PIPELINE_ENV
    shell:
        "python -m pipeline coinflip report 2> {log}"


rule coinflip_all:
    input:
        rules.coinflip_rate.output,
        rules.coinflip_report.output,


ALL_TARGETS.extend(rules.coinflip_all.input)
