"""Elimination replays, round by round: public talk, private talk by pair, votes, tie-breaks, jury."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pipeline.core.artifacts import GamePage, ReplaySet, by_game, num, safe_key, seat_order
from pipeline.core.artifacts.results import BenchmarkResults

TABLES = {
    "games": ["game_id", "rounds", "winner_seat", "winner_model"],
    "seats": ["game_id", "seat", "model"],
    "messages": ["game_id", "round", "subround", "kind", "seat", "model", "target_seat", "text", "cut"],
    "votes": ["game_id", "round", "phase", "voter_seat", "voter_model", "target_seat", "valid", "reason"],
    "eliminations": ["game_id", "round", "order", "seat", "model", "jury", "tie_break", "random_pick"],
    "pairs": ["game_id", "round", "seat_a", "seat_b"],
    "final_ranks": ["game_id", "seat", "rank", "points"],
}
PHASE_TITLE = {"vote": "Votes", "revote": "Tie-break re-vote", "jury": "Jury vote"}


def build_round(
    number: int,
    messages: list[dict],
    votes: list[dict],
    pairs: list[dict],
    eliminations: list[dict],
    models: dict[str, str],
) -> dict[str, Any]:
    def label(seat: str | None) -> str:
        return f"{seat} ({models.get(seat or '', '?')})" if seat else "?"

    public = [m for m in messages if m["kind"] == "public"]
    private = [m for m in messages if m["kind"] == "private"]
    conversations = []
    paired: set[int] = set()
    for pair in sorted(pairs, key=lambda p: seat_order(p["seat_a"])):
        members = {pair["seat_a"], pair["seat_b"]}
        chat = [(i, m) for i, m in enumerate(private) if {m["seat"], m["target_seat"]} == members]
        paired.update(i for i, _ in chat)
        conversations.append(
            {
                "title": f"{label(pair['seat_a'])} and {label(pair['seat_b'])}",
                "messages": [
                    {"seat": m["seat"], "target": m["target_seat"], "text": m["text"]}
                    for _, m in sorted(chat, key=lambda im: im[1]["subround"])
                ],
            }
        )
    unpaired = [m for i, m in enumerate(private) if i not in paired]
    if unpaired:  # a log without pair records still shows its private messages
        conversations.append(
            {
                "title": "other private messages",
                "messages": [{"seat": m["seat"], "target": m["target_seat"], "text": m["text"]} for m in unpaired],
            }
        )
    blocks = []
    for phase, extra_kind in (("vote", None), ("revote", "tiebreak"), ("jury", "plea")):
        rows = [v for v in votes if v["phase"] == phase]
        said = [m for m in messages if m["kind"] == extra_kind] if extra_kind else []
        if not rows and not said:
            continue
        blocks.append(
            {
                "title": PHASE_TITLE[phase]
                + (
                    " (after tie-break statements)"
                    if phase == "revote"
                    else " (after the finalists' pleas)"
                    if phase == "jury"
                    else ""
                ),
                "messages": [
                    {"seat": m["seat"], "model": m["model"], "text": m["text"]}
                    for m in sorted(said, key=lambda m: seat_order(m["seat"]))
                ],
                "rows": [
                    {
                        "voter": label(v["voter_seat"]),
                        "target": label(v["target_seat"]),
                        "valid": v["valid"],
                        "reason": v["reason"] or "",
                    }
                    for v in sorted(rows, key=lambda v: seat_order(v["voter_seat"]))
                ],
            }
        )
    out = []
    for e in sorted(eliminations, key=lambda e: e["order"]):
        flags = [
            name
            for name, on in (("jury", e["jury"]), ("tie-break", e["tie_break"]), ("random pick", e["random_pick"]))
            if on
        ]
        out.append({"seat": e["seat"], "model": e["model"] or "?", "flags": flags})
    jury = any(v["phase"] == "jury" for v in votes) or any(m["kind"] == "plea" for m in messages)
    return {
        "title": f"Round {number}" + (" · jury" if jury else ""),
        "public": [
            {"seat": m["seat"], "model": m["model"], "text": m["text"], "cut": m["cut"]}
            for m in sorted(public, key=lambda m: (m["subround"], seat_order(m["seat"])))
        ],
        "private": conversations,
        "votes": blocks,
        "eliminated": out,
    }


def replays(bench: BenchmarkResults, limit: int = 0) -> ReplaySet | None:
    tables = {name: bench.table(f"tables/{name}.parquet", columns) for name, columns in TABLES.items()}
    if tables["games"] is None or tables["seats"] is None:
        return None
    grouped = {name: by_game(frame) for name, frame in tables.items()}
    game_ids = sorted(grouped["games"])
    shown = game_ids[:limit] if limit else game_ids
    pages = []
    for game_id in shown:
        game = grouped["games"][game_id][0]
        models = {s["seat"]: s["model"] for s in grouped["seats"].get(game_id, [])}
        ranks = {r["seat"]: r for r in grouped["final_ranks"].get(game_id, [])}
        seats = [
            {
                "seat": seat,
                "model": model,
                "rank": num(ranks.get(seat, {}).get("rank")),
                "points": num(ranks.get(seat, {}).get("points"), 3),
            }
            for seat, model in sorted(models.items(), key=lambda item: seat_order(item[0]))
        ]
        per_round: dict[str, dict[int, list]] = {}
        for name in ("messages", "votes", "pairs", "eliminations"):
            split: dict[int, list] = defaultdict(list)
            for row in grouped[name].get(game_id, []):
                split[row["round"]].append(row)
            per_round[name] = split
        numbers = sorted(set().union(*(set(split) for split in per_round.values())))
        rounds = [
            build_round(
                n,
                per_round["messages"][n],
                per_round["votes"][n],
                per_round["pairs"][n],
                per_round["eliminations"][n],
                models,
            )
            for n in numbers
        ]
        winner = game["winner_model"] or "–"
        pages.append(
            GamePage(
                key=safe_key(game_id),
                cells=[game_id, winner, ", ".join(sorted(set(models.values()))), str(game["rounds"])],
                title=f"Elimination game {game_id}",
                context={"seats": seats, "rounds": rounds},
            )
        )
    note = f"Replays of the first {len(shown)} of {len(game_ids)} games." if len(shown) < len(game_ids) else ""
    return ReplaySet(TEMPLATE, ["game", "winner", "models", "rounds"], "Games", pages, note)


# the replay page (jinja, autoescaped: model text is never marked safe); extends the site's base.html
TEMPLATE = """\
{% extends "base.html" %}{% import "macros.html" as m %}
{% block main %}
<p><a href="../index.html">back to elimination</a></p>
<table><tr><th>seat</th><th>model</th><th>final rank</th><th>points</th></tr>
{% for s in seats %}<tr><td>{{ s.seat }}</td><td>{{ s.model }}</td><td class="num">{{ s.rank }}</td><td class="num">{{ s.points }}</td></tr>
{% endfor %}</table>
{{ m.stepper() }}
{% for r in rounds %}
<section class="step" id="step-{{ loop.index }}" data-title="{{ r.title }}">
<h2>{{ r.title }}</h2>
{% if r.public %}<h3>Public talk</h3>
{% for msg in r.public %}<p class="msg"><span class="seat">{{ msg.seat }}</span> <span class="muted">{{ msg.model }}</span>{% if msg.cut %}<span class="tag bad">cut</span>{% endif %}: <span class="text">{{ msg.text }}</span></p>
{% endfor %}{% endif %}
{% if r.private %}<h3>Private talk</h3>
{% for pair in r.private %}<h4>{{ pair.title }}</h4>
{% for msg in pair.messages %}<p class="msg"><span class="seat">{{ msg.seat }}</span> → {{ msg.target }}: <span class="text">{{ msg.text }}</span></p>
{% else %}<p class="muted">(no messages)</p>{% endfor %}
{% endfor %}{% endif %}
{% for block in r.votes %}<h3>{{ block.title }}</h3>
{% if block.messages %}{% for msg in block.messages %}<p class="msg"><span class="seat">{{ msg.seat }}</span> <span class="muted">{{ msg.model }}</span>: <span class="text">{{ msg.text }}</span></p>
{% endfor %}{% endif %}
<table><tr><th>voter</th><th>vote</th><th>reason</th></tr>
{% for v in block.rows %}<tr><td>{{ v.voter }}</td><td>{% if v.valid %}{{ v.target }}{% else %}<span class="tag bad">invalid</span>{% endif %}</td><td class="text">{{ v.reason }}</td></tr>
{% endfor %}</table>
{% endfor %}
{% for e in r.eliminated %}<p><strong>Eliminated: {{ e.seat }}</strong> ({{ e.model }}){% for flag in e.flags %}<span class="tag">{{ flag }}</span>{% endfor %}</p>
{% endfor %}
</section>
{% endfor %}
{% endblock %}
"""
