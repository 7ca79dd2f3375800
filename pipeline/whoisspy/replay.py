"""Who is Spy replays: the words, then each round's descriptions (with fouls) and votes."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pipeline.core.artifacts import GamePage, ReplaySet, by_game, num, safe_key, seat_order
from pipeline.core.artifacts.results import BenchmarkResults

GAMES = [
    "game_id",
    "variant",
    "civilian_word",
    "spy_word",
    "spy_seat",
    "spy_model",
    "winner",
    "end_reason",
    "rounds_played",
]
SEATS = ["game_id", "seat", "model", "role", "word", "score", "eliminated_round", "eliminated_by"]
SPEECHES = ["game_id", "round", "seat", "model", "role", "text", "shown", "truncated", "fouled", "foul_kinds"]
VOTES = ["game_id", "round", "voter", "model", "target", "abstained", "correct"]


def replays(bench: BenchmarkResults, limit: int = 0) -> ReplaySet | None:
    games = bench.table("games.parquet", GAMES)
    seats_table = bench.table("seats.parquet", SEATS)
    if games is None or seats_table is None:
        return None
    seats_by_game = by_game(seats_table)
    speeches_by_game = by_game(bench.table("speeches.parquet", SPEECHES))
    votes_by_game = by_game(bench.table("votes.parquet", VOTES))
    rows = sorted(games.iter_rows(named=True), key=lambda g: g["game_id"])
    shown = rows[:limit] if limit else rows
    pages = []
    for game in shown:
        game_id = game["game_id"]
        seats = sorted(seats_by_game.get(game_id, []), key=lambda s: seat_order(s["seat"]))
        speeches: dict[int, list] = defaultdict(list)
        for s in speeches_by_game.get(game_id, []):
            speeches[s["round"]].append(s)
        votes: dict[int, list] = defaultdict(list)
        for v in votes_by_game.get(game_id, []):
            votes[v["round"]].append(v)
        numbers = sorted(set(speeches) | set(votes) | {s["eliminated_round"] for s in seats if s["eliminated_round"]})
        rounds: list[dict[str, Any]] = []
        for n in numbers:
            rounds.append(
                {
                    "title": f"Round {n}",
                    "speeches": [
                        {
                            "seat": s["seat"],
                            "model": s["model"],
                            "role": s["role"],
                            # the text the other players saw (cut to the character limit)
                            "text": s["shown"] if s["shown"] is not None else s["text"],
                            "fouled": s["fouled"],
                            "foul_kinds": s["foul_kinds"],
                            "truncated": s["truncated"],
                        }
                        for s in sorted(speeches[n], key=lambda s: seat_order(s["seat"]))
                    ],
                    "votes": [
                        {
                            "voter": v["voter"],
                            "model": v["model"],
                            "target": "abstained" if v["abstained"] or v["target"] is None else v["target"],
                            "correct": v["correct"],
                        }
                        for v in sorted(votes[n], key=lambda v: seat_order(v["voter"]))
                    ],
                    "eliminated": [
                        {"seat": s["seat"], "model": s["model"], "role": s["role"], "by": s["eliminated_by"]}
                        for s in seats
                        if s["eliminated_round"] == n
                    ],
                }
            )
        pages.append(
            GamePage(
                key=safe_key(game_id),
                cells=[
                    game_id,
                    game["variant"],
                    f"{game['civilian_word']} / {game['spy_word']}",
                    game["spy_model"],
                    game["winner"],
                    str(game["rounds_played"]),
                ],
                title=f"Who is Spy game {game_id}",
                context={
                    "game": game,
                    "seats": [
                        {
                            "seat": s["seat"],
                            "model": s["model"],
                            "role": s["role"],
                            "word": s["word"],
                            "score": num(s["score"]),
                            "out": f"round {s['eliminated_round']} ({s['eliminated_by']})"
                            if s["eliminated_round"]
                            else "–",
                        }
                        for s in seats
                    ],
                    "rounds": rounds,
                },
            )
        )
    note = f"Replays of the first {len(shown)} of {len(rows)} games." if len(shown) < len(rows) else ""
    return ReplaySet(
        TEMPLATE, ["game", "variant", "words (civilian / spy)", "spy", "winner", "rounds"], "Games", pages, note
    )


# the replay page (jinja, autoescaped: model text is never marked safe); extends the site's base.html
TEMPLATE = """\
{% extends "base.html" %}{% import "macros.html" as m %}
{% block main %}
<p><a href="../index.html">back to whoisspy</a></p>
<p>Variant <strong>{{ game.variant }}</strong> · civilians' word <strong>{{ game.civilian_word }}</strong> ·
spy's word <strong>{{ game.spy_word }}</strong> · spy {{ game.spy_seat }} ({{ game.spy_model }}) ·
winner: <strong>{{ game.winner }}</strong> ({{ game.end_reason }})</p>
<table><tr><th>seat</th><th>model</th><th>role</th><th>word</th><th>score</th><th>out</th></tr>
{% for s in seats %}<tr><td>{{ s.seat }}</td><td>{{ s.model }}</td><td>{{ s.role }}</td><td>{{ s.word }}</td>
<td class="num">{{ s.score }}</td><td>{{ s.out }}</td></tr>{% endfor %}</table>
{{ m.stepper() }}
{% for r in rounds %}
<section class="step" id="step-{{ loop.index }}" data-title="{{ r.title }}">
<h2>{{ r.title }}</h2>
<h3>Descriptions</h3>
{% for s in r.speeches %}<p class="msg"><span class="seat">{{ s.seat }}</span> <span class="muted">{{ s.model }} · {{ s.role }}</span>
{% if s.fouled %}<span class="tag bad">foul: {{ s.foul_kinds }}</span>{% endif %}{% if s.truncated %}<span class="tag">cut</span>{% endif %}:
<span class="text">{{ s.text }}</span></p>
{% else %}<p class="muted">(none)</p>{% endfor %}
<h3>Votes</h3>
<table><tr><th>voter</th><th>vote</th><th></th></tr>
{% for v in r.votes %}<tr><td>{{ v.voter }} <span class="muted">{{ v.model }}</span></td><td>{{ v.target }}</td>
<td>{% if v.correct %}<span class="tag good">found the spy</span>{% endif %}</td></tr>{% endfor %}</table>
{% for e in r.eliminated %}<p><strong>Out: {{ e.seat }}</strong> ({{ e.model }}, {{ e.role }}) by {{ e.by }}</p>{% endfor %}
</section>
{% endfor %}
{% endblock %}
"""
