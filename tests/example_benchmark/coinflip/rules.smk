# Coin flip: one job per scheduled game (named by its content id), then one rating job.
from coinflip.config import load as _coinflip_load
from coinflip.play import schedule as _coinflip_schedule

COINFLIP_PARAMS = "params/coinflip.yaml"
COINFLIP_GAMES = sorted(_coinflip_schedule(_coinflip_load(COINFLIP_PARAMS)))


# no params input: the game id already covers everything that decides the game, so editing the
# params (adding a player) reruns only the games whose id is new
rule coinflip_play:
    output:
        "results/coinflip/games/{game_id}.json",
    wildcard_constraints:
        game_id="[0-9a-f]{16}",
    shell:
        "{PYTHON} -m coinflip play {wildcards.game_id} --params " + COINFLIP_PARAMS


rule coinflip_rate:
    input:
        games=expand("results/coinflip/games/{game_id}.json", game_id=COINFLIP_GAMES),
        params=COINFLIP_PARAMS,
    output:
        table="results/coinflip/games.parquet",
        metrics="results/coinflip/metrics.json",
    shell:
        "{PYTHON} -m coinflip rate --params " + COINFLIP_PARAMS


rule coinflip_all:
    input:
        rules.coinflip_rate.output,


ALL_TARGETS.extend(rules.coinflip_all.input)
