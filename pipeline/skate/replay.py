"""SKATE replays: one page per accepted question: the question, its code, the options, p(correct)."""

from __future__ import annotations

import json
from collections import defaultdict

from pipeline.core.artifacts import GamePage, ReplaySet, num, safe_key
from pipeline.core.artifacts.results import BenchmarkResults

QUESTIONS = ["round", "setter", "status", "question_id", "description", "program", "answer", "distractors"]
PCORRECT = ["question_id", "answerer", "mode", "p_correct", "std_error", "samples"]


def options(answer: str | None, distractors: str | None) -> list[dict[str, object]]:
    try:
        wrong = json.loads(distractors or "[]")
    except json.JSONDecodeError:
        wrong = []
    listed = [{"text": answer or "", "correct": True}]
    return listed + [{"text": str(d), "correct": False} for d in wrong if isinstance(d, (str, int, float))]


def replays(bench: BenchmarkResults, limit: int = 0) -> ReplaySet | None:
    questions = bench.table("questions.parquet", QUESTIONS)
    if questions is None:
        return None
    accepted = sorted(
        (q for q in questions.iter_rows(named=True) if q["status"] == "accepted" and q["question_id"]),
        key=lambda q: (q["round"], q["setter"], q["question_id"]),
    )
    answers: dict[str, list] = defaultdict(list)
    pcorrect = bench.table("pcorrect.parquet", PCORRECT)
    for row in pcorrect.iter_rows(named=True) if pcorrect is not None else ():
        answers[row["question_id"]].append(row)
    shown = accepted[:limit] if limit else accepted
    pages = []
    for q in shown:
        rows = sorted(answers.get(q["question_id"], []), key=lambda a: (-a["p_correct"], a["answerer"]))
        mean = sum(a["p_correct"] for a in rows) / len(rows) if rows else None
        pages.append(
            GamePage(
                key=safe_key(q["question_id"]),
                cells=[q["question_id"], str(q["round"]), q["setter"], num(mean), str(len(rows))],
                title=f"SKATE question {q['question_id']}",
                context={
                    "q": q,
                    "options": options(q["answer"], q["distractors"]),
                    "answers": [
                        {
                            "model": a["answerer"],
                            "p": num(a["p_correct"], 3),
                            "width": round(120 * a["p_correct"]),
                            "se": num(a["std_error"], 3),
                            "mode": a["mode"],
                            "samples": a["samples"],
                        }
                        for a in rows
                    ],
                },
            )
        )
    note = f"Pages for the first {len(shown)} of {len(accepted)} questions." if len(shown) < len(accepted) else ""
    return ReplaySet(
        TEMPLATE, ["question", "round", "setter", "mean p(correct)", "answerers"], "Questions", pages, note
    )


# the replay page (jinja, autoescaped: model text is never marked safe); extends the site's base.html
TEMPLATE = """\
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
