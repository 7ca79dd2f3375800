"""Page templates of the site. Jinja autoescaping is on: every value (model text above all) is
escaped unless marked safe, and nothing here marks model text safe."""

from __future__ import annotations

from functools import lru_cache

import jinja2

BASE = """\
<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{{ title }} · leaderboard</title>
<link rel="stylesheet" href="{{ root }}assets/site.css">
{% if stepper %}<script src="{{ root }}assets/replay.js" defer></script>{% endif %}
</head><body>
<header><nav><a href="{{ root }}index.html">Leaderboard</a>
{% for name in nav %} · <a href="{{ root }}{{ name }}/index.html">{{ name }}</a>{% endfor %}</nav></header>
<main>
<h1>{{ title }}</h1>
{% block main %}{% endblock %}
</main>
<footer class="stamp">{{ stamp.short }} · <a href="{{ root }}version.json">version.json</a></footer>
</body></html>
"""

MACROS = """\
{% macro rating_table(rows) %}
<table><tr><th>rank (95%)</th><th>model</th><th>mu [lo, hi]</th><th>sigma</th><th>not separable from</th></tr>
{% for r in rows %}<tr><td>{{ r.rank }}</td><td>{{ r.model }}</td><td class="num">{{ r.mu }}</td>
<td class="num">{{ r.sigma }}</td><td class="ns">{{ r.not_separable or "–" }}</td></tr>
{% endfor %}</table>
{% endmacro %}
{% macro stepper() %}
<nav id="stepper" class="stepper" hidden><button id="step-prev" type="button">◀ prev</button>
<button id="step-next" type="button">next ▶</button><button id="step-all" type="button">show all</button>
<span id="step-label"></span></nav>
{% endmacro %}
{% macro game_list(columns, rows) %}
<table><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in rows %}<tr><td><a href="{{ row.href }}">{{ row.cells[0] }}</a></td>
{% for cell in row.cells[1:] %}<td>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% endmacro %}
{% macro pages(links) %}{% if links|length > 1 %}<p class="pages">pages:
{% for link in links %}<a href="{{ link.href }}">{{ link.label }}</a>{% endfor %}</p>{% endif %}{% endmacro %}
"""

INDEX = """\
{% extends "base.html" %}{% import "macros.html" as m %}
{% block main %}
<p>Models ranked by the games they play. Ranks carry 95% intervals; models whose intervals overlap
are <span class="ns">not separable</span>. Combined score: mean percentile rank over the benchmarks a
model played (100 = first, 0 = last).</p>
{% if not combined %}<p>No benchmark results found.</p>{% endif %}
{% if combined %}
<table><tr><th>rank (95%)</th><th>model</th><th>score [lo, hi]</th><th>benchmarks</th>
{% for b in benchmarks %}<th><a href="{{ b }}/index.html">{{ b }}</a></th>{% endfor %}<th>not separable from</th></tr>
{% for r in combined %}<tr><td>{{ r.rank }}</td><td>{{ r.model }}</td><td class="num">{{ r.score }}</td>
<td class="num">{{ r.benchmarks }}</td>{% for cell in r.per_benchmark %}<td>{{ cell }}</td>{% endfor %}
<td class="ns">{{ r.not_separable or "–" }}</td></tr>
{% endfor %}</table>
{% endif %}
<div class="charts">{% for chart in charts %}
<p><img src="{{ chart.svg }}" alt="{{ chart.title }}"><br><a href="{{ chart.html }}">{{ chart.title }} (interactive)</a></p>
{% endfor %}</div>
<p>Files: <a href="leaderboard.json">leaderboard.json</a> · <a href="leaderboard.md">leaderboard.md</a> ·
<a href="version.json">version.json</a></p>
{% endblock %}
"""

BENCHMARK = """\
{% extends "base.html" %}{% import "macros.html" as m %}
{% block main %}
<p>Rank intervals: {{ interval_source }}.</p>
{{ m.rating_table(ratings) }}
{% if headline_columns %}
<table><tr><th>model</th>{% for c in headline_columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in headline_rows %}<tr><td>{{ row.model }}</td>{% for v in row.cells %}<td class="num">{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% endif %}
<div class="charts">{% for plot in plots %}
<p><img src="{{ plot.svg }}" alt="{{ plot.title }}">{% if plot.html %}<br><a href="{{ plot.html }}">{{ plot.title }} (interactive)</a>{% endif %}</p>
{% endfor %}</div>
<h2>{{ games_title }} ({{ total_games }})</h2>
{% if replay_note %}<p class="muted">{{ replay_note }}</p>{% endif %}
{{ m.game_list(columns, rows) }}
{{ m.pages(page_links) }}
{% endblock %}
"""

GAME_LIST = """\
{% extends "base.html" %}{% import "macros.html" as m %}
{% block main %}
<p><a href="../index.html">back to {{ benchmark }}</a></p>
{{ m.pages(page_links) }}
{{ m.game_list(columns, rows) }}
{{ m.pages(page_links) }}
{% endblock %}
"""

ELIMINATION_GAME = """\
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

WHOISSPY_GAME = """\
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

SKATE_GAME = """\
{% extends "base.html" %}{% import "macros.html" as m %}
{% block main %}
<p><a href="../index.html">back to skate</a></p>
<p>Round {{ q.round }} · set by <strong>{{ q.setter }}</strong></p>
<h2>Question</h2><p class="text">{{ q.description }}</p>
<h2>Code</h2><pre class="code">{{ q.program }}</pre>
<h2>Options</h2>
<table><tr><th>option</th><th></th></tr>
{% for o in options %}<tr><td><pre class="code">{{ o.text }}</pre></td><td>{% if o.correct %}<span class="tag good">correct</span>{% endif %}</td></tr>{% endfor %}</table>
<h2>p(correct) per model</h2>
<table><tr><th>model</th><th>p(correct)</th><th></th><th>± se</th><th>mode</th><th>samples</th></tr>
{% for a in answers %}<tr><td>{{ a.model }}</td><td class="num">{{ a.p }}</td><td><span class="bar" style="width: {{ a.width }}px"></span></td>
<td class="num">{{ a.se }}</td><td>{{ a.mode }}</td><td class="num">{{ a.samples }}</td></tr>{% endfor %}</table>
{% endblock %}
"""

XENT_GAME = """\
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

TEMPLATES = {
    "base.html": BASE, "macros.html": MACROS, "index.html": INDEX, "benchmark.html": BENCHMARK,
    "game_list.html": GAME_LIST, "elimination_game.html": ELIMINATION_GAME,
    "whoisspy_game.html": WHOISSPY_GAME, "skate_game.html": SKATE_GAME, "xent_game.html": XENT_GAME,
}


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.DictLoader(TEMPLATES), autoescape=True, trim_blocks=True, lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def render(name: str, **context: object) -> str:
    return environment().get_template(name).render(**context)
