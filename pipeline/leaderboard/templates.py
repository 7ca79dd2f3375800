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
{% for name in nav %} · <a href="{{ root }}{{ name }}/index.html">{{ name }}</a>{% endfor %}
 · <a href="{{ root }}releases.html">releases</a></nav>
<p class="version">leaderboard v{{ stamp.version }} · built from {{ stamp.commit_text }}</p></header>
<main>
<h1>{{ title }}</h1>
{% block main %}{% endblock %}
</main>
<footer class="stamp">{{ stamp.short }} · <a href="{{ root }}version.json">version.json</a></footer>
</body></html>
"""

MACROS = """\
{% macro not_separable(names) %}{% if names %}<details><summary>{{ names|length }}</summary>{{ names|join(", ") }}</details>{% else %}0{% endif %}{% endmacro %}
{% macro rating_table(rows) %}
<table><tr><th>rank (95%)</th><th>model</th><th>mu [lo, hi]</th><th>sigma</th><th>games</th><th>not separable</th></tr>
{% for r in rows %}<tr><td>{{ r.rank }}</td><td>{{ r.model }}</td><td class="num">{{ r.mu }}</td>
<td class="num">{{ r.sigma }}</td><td class="num">{{ r.games }}</td><td class="ns">{{ not_separable(r.not_separable) }}</td></tr>
{% endfor %}</table>
{% endmacro %}
{% macro combined_table(rows, benchmarks) %}
<table class="combined"><tr><th>rank (95%)</th><th>model</th><th>score [95%]</th><th>games</th><th>benchmarks</th>
{% for b in benchmarks %}<th><a href="{{ b }}/index.html">{{ b }}</a></th>{% endfor %}<th>not separable</th></tr>
{% for r in rows %}<tr class="{{ 'bot' if r.bot else 'model' }}"><td>{{ r.rank }}</td><td>{{ r.model }}{% if r.bot %} <span class="muted">bot</span>{% endif %}</td>
<td class="num">{{ r.score }}</td><td class="num">{{ r.games }}</td><td title="{{ r.played }}">{{ r.benchmarks }}</td>
{% for cell in r.per_benchmark %}<td>{{ cell }}</td>{% endfor %}<td class="ns">{{ not_separable(r.not_separable) }}</td></tr>
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
{% if method == "mean_percentile" %}<p>Models ranked by the games they play. Combined score: mean percentile
rank over the benchmarks a model played (100 = first, 0 = last; it rewards playing fewer benchmarks).</p>
{% else %}<p>Models ranked by the games they play: one rating over every benchmark's games, each benchmark
weighted equally, on the Elo scale (400 points: 10-to-1 odds), with 95% intervals from a bootstrap over
games. Ranks whose intervals overlap are <span class="ns">not separable</span>; a rank marked
<span class="ns">unsettled</span> rests on too few games or resamples, and its interval is the whole section.</p>{% endif %}
{% for line in calibration %}<p class="{{ 'muted' if calibration_ok else 'unsettled' }}" id="calibration">{{ line }}</p>{% endfor %}
{% if settled_note %}<p class="{{ 'unsettled' if settled_note.startswith('Rankings not settled') else 'muted' }}">{{ settled_note }}</p>{% endif %}
{% if not combined %}<p>No benchmark results found.</p>{% endif %}
{% if combined %}
{% if has_bots %}<p><label><input type="checkbox" id="models-only"> models only (hide bots)</label></p>{% endif %}
{% set full = combined|rejectattr("provisional")|list %}{% set partial = combined|selectattr("provisional")|list %}
{% if full %}{{ m.combined_table(full, benchmarks) }}{% endif %}
{% if partial %}<h2>Provisional</h2>
<p class="muted">These models missed a benchmark the board combines: rated against the full-coverage models'
fixed ratings, ranked after them.</p>
{{ m.combined_table(partial, benchmarks) }}{% endif %}
<script>
document.getElementById("models-only")?.addEventListener("change", (e) => {
  document.body.classList.toggle("models-only", e.target.checked);
});
</script>
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
{% if settled_note %}<p class="{{ 'unsettled' if settled_note.startswith('Rankings not settled') else 'muted' }}">{{ settled_note }}</p>{% endif %}
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

RELEASES = """\
{% extends "base.html" %}
{% block main %}
{% if not published %}<p class="unsettled">This site's version, v{{ stamp.version }}, is not published yet
(<code>python -m pipeline publish</code> tags and records it).</p>{% endif %}
{% if not releases %}<p>No version published yet.</p>{% endif %}
{% for r in releases %}
<section class="release"><h2 id="v{{ r.version }}">v{{ r.version }} · {{ r.tag }}{% if r.current %} (this site){% endif %}</h2>
<ul>{% for line in r.lines %}<li>{{ line.removeprefix("- ") }}</li>{% endfor %}</ul>
{% if not r.current %}<p class="muted">Open its site: <code>python -m pipeline site {{ r.tag }}</code>
(or <code>git checkout {{ r.tag }} &amp;&amp; dvc pull</code>)</p>{% endif %}
</section>
{% endfor %}
<p>Files: <a href="CHANGELOG.md">CHANGELOG.md</a> · <a href="releases.json">releases.json</a></p>
{% endblock %}
"""

TEMPLATES = {
    "base.html": BASE,
    "macros.html": MACROS,
    "index.html": INDEX,
    "benchmark.html": BENCHMARK,
    "game_list.html": GAME_LIST,
    "releases.html": RELEASES,
}


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.DictLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def render(name: str, **context: object) -> str:
    return environment().get_template(name).render(**context)


@lru_cache(maxsize=32)
def compiled(source: str) -> jinja2.Template:
    return environment().from_string(source)


def render_source(source: str, **context: object) -> str:
    """Render a benchmark's own page template (its replay.py), which extends the site's base.html."""
    return compiled(source).render(**context)
