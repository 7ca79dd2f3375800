"""xent replays: one page per (game, map, player); each round's moves and rewards, every reward
shown as a per-token heat map of cross-entropy in bits."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pipeline.core.artifacts import GamePage, ReplaySet, num, safe_key
from pipeline.core.artifacts.results import BenchmarkResults

MOVES = ["game", "map_id", "model", "round", "elicit_index", "player_role", "register", "move", "reply", "attempts"]
REWARDS = ["game", "map_id", "model", "round", "reward_index", "player_role", "total_bits"]
TOKENS = ["game", "map_id", "model", "round", "reward_index", "token_index", "token", "bits"]
SCORES = ["game", "map_id", "model", "map_score", "normalized_score", "rounds"]


def grouped(frame, key_columns: list[str]) -> dict[tuple, list[dict[str, Any]]]:
    out: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    if frame is not None:
        for row in frame.iter_rows(named=True):
            out[tuple(row[c] for c in key_columns)].append(row)
    return out


def page_key(game: str, map_id: str, model: str) -> str:
    return safe_key(f"{game}--{map_id}--{model}")


def replays(bench: BenchmarkResults, limit: int = 0) -> ReplaySet | None:
    moves_table = bench.table("moves.parquet", MOVES)
    if moves_table is None:
        return None
    key = ["game", "map_id", "model"]
    moves = grouped(moves_table, key)
    rewards = grouped(bench.table("rewards.parquet", REWARDS), key)
    tokens = grouped(bench.table("token_xents.parquet", TOKENS), key)
    scores = {k: rows[0] for k, rows in grouped(bench.table("scores.parquet", SCORES), key).items()}
    played = sorted(set(moves) | set(rewards))
    shown = played[:limit] if limit else played
    pages = []
    for game, map_id, model in shown:
        per_reward: dict[tuple[int, int], list] = defaultdict(list)
        for t in tokens.get((game, map_id, model), []):
            per_reward[(t["round"], t["reward_index"])].append(t)
        max_bits = max((t["bits"] for rows in per_reward.values() for t in rows), default=0.0)
        scale = max(max_bits, 1e-9)
        by_round: dict[int, dict[str, list]] = defaultdict(lambda: {"moves": [], "rewards": []})
        for mv in sorted(moves.get((game, map_id, model), []), key=lambda m: (m["round"], m["elicit_index"])):
            by_round[mv["round"]]["moves"].append(
                {
                    "role": mv["player_role"],
                    "register": mv["register"],
                    "move": mv["move"],
                    "reply": mv["reply"],
                    "attempts": mv["attempts"],
                }
            )
        for rw in sorted(rewards.get((game, map_id, model), []), key=lambda r: (r["round"], r["reward_index"])):
            toks = sorted(per_reward.get((rw["round"], rw["reward_index"]), []), key=lambda t: t["token_index"])
            by_round[rw["round"]]["rewards"].append(
                {
                    "role": rw["player_role"],
                    "index": rw["reward_index"],
                    "total": num(rw["total_bits"]),
                    "tokens": [
                        {
                            "text": t["token"],
                            "bits": num(t["bits"]),
                            "alpha": f"{min(max(t['bits'], 0.0) / scale, 1.0):.2f}",
                        }
                        for t in toks
                    ],
                }
            )
        score = scores.get((game, map_id, model), {})
        program_path = bench.path(f"maps/{game}/{map_id}.xgl")
        program = program_path.read_text(encoding="utf-8") if program_path else ""
        pages.append(
            GamePage(
                key=page_key(game, map_id, model),
                cells=[f"{game} / {map_id}", model, num(score.get("map_score")), num(score.get("normalized_score"), 3)],
                title=f"xent {game} · map {map_id} · {model}",
                context={
                    "info": {
                        "game": game,
                        "map_id": map_id,
                        "model": model,
                        "map_score": num(score.get("map_score")) if score else None,
                        "normalized": num(score.get("normalized_score"), 3),
                    },
                    "program": program,
                    "max_bits": num(max_bits),
                    "rounds": [{"title": f"Round {n}", **by_round[n]} for n in sorted(by_round)],
                },
            )
        )
    note = f"Replays of the first {len(shown)} of {len(played)} plays." if len(shown) < len(played) else ""
    return ReplaySet(TEMPLATE, ["game / map", "player", "map score (bits)", "normalized"], "Plays", pages, note)


# the replay page (jinja, autoescaped: model text is never marked safe); extends the site's base.html
TEMPLATE = """\
{% extends "base.html" %}{% import "macros.html" as m %}
{% block main %}
<p><a href="../index.html">back to xent</a></p>
<p>Game <strong>{{ info.game }}</strong> · map {{ info.map_id }} · player <strong>{{ info.model }}</strong>
{% if info.map_score is not none %}· map score {{ info.map_score }} bits (best round) · normalized {{ info.normalized }}{% endif %}</p>
{% if program %}<details><summary>the map's program</summary><pre class="code">{{ program }}</pre></details>{% endif %}
<p class="muted">Heat map: each scored token shaded by its cross-entropy (darker = more bits; page maximum {{ max_bits }} bits). Hover a token for its bits.</p>
{{ m.stepper() }}
{% for r in rounds %}
<section class="step" id="step-{{ loop.index }}" data-title="{{ r.title }}">
<h2>{{ r.title }}</h2>
<h3>Moves</h3>
{% for mv in r.moves %}<p class="msg"><span class="seat">{{ mv.role }}</span> → {{ mv.register }}{% if mv.attempts > 1 %}<span class="tag">{{ mv.attempts }} attempts</span>{% endif %}:
<span class="text">{{ mv.move }}</span></p>
{% if mv.reply != mv.move %}<details><summary>raw reply</summary><pre class="code">{{ mv.reply }}</pre></details>{% endif %}
{% else %}<p class="muted">(no moves)</p>{% endfor %}
<h3>Rewards</h3>
{% for rw in r.rewards %}<p><span class="seat">{{ rw.role }}</span> reward {{ rw.index }}: <strong>{{ rw.total }}</strong> bits</p>
<p class="tokens">{% for t in rw.tokens %}<span class="tok" style="background: rgba(213, 94, 0, {{ t.alpha }})" title="{{ t.bits }} bits">{{ t.text }}</span>{% endfor %}</p>
{% else %}<p class="muted">(no rewards)</p>{% endfor %}
</section>
{% endfor %}
{% endblock %}
"""
