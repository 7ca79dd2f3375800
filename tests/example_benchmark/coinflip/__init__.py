"""Coin flip: the smallest complete benchmark, the worked example of docs/adding-a-benchmark.md.

Players are scripted coins with a bias; each game pits two of them, the higher draw wins. It has
every part a real benchmark has: params, a content-named job per game, a rating job, a metrics.json
with the TrueSkill keys the leaderboard reads, a declared table and a replay page.
"""
