"""One replay page per game: who drew what."""

from __future__ import annotations

from pipeline.core.artifacts import GamePage, ReplaySet, num
from pipeline.core.artifacts.results import BenchmarkResults


def replays(bench: BenchmarkResults, limit: int = 0) -> ReplaySet | None:
    games = bench.table("games.parquet", ["game_id", "player_a", "player_b", "draw_a", "draw_b", "winner"])
    if games is None:
        return None
    rows = list(games.iter_rows(named=True))
    pages = [
        GamePage(
            key=r["game_id"],
            cells=[r["game_id"], r["player_a"], r["player_b"], r["winner"]],
            title=f"Coin flip {r['game_id']}",
            context={"game": {**r, "draw_a": num(r["draw_a"]), "draw_b": num(r["draw_b"])}},
        )
        for r in (rows[:limit] if limit else rows)
    ]
    return ReplaySet(TEMPLATE, ["game", "a", "b", "winner"], "Games", pages)


TEMPLATE = """\
{% extends "base.html" %}
{% block main %}
<p>{{ game.player_a }} drew {{ game.draw_a }}, {{ game.player_b }} drew {{ game.draw_b }}:
<strong>{{ game.winner }}</strong> wins.</p>
{% endblock %}
"""
