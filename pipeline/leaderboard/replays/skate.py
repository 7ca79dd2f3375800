"""SKATE replays: one page per accepted question: the question, its code, the options, p(correct)."""

from __future__ import annotations

import json
from collections import defaultdict

from pipeline.leaderboard.replays import GamePage, ReplaySet, num, safe_key
from pipeline.leaderboard.sources import RoomInputs

QUESTIONS = ["round", "setter", "status", "question_id", "description", "program", "answer", "distractors"]
PCORRECT = ["question_id", "answerer", "mode", "p_correct", "std_error", "samples"]


def options(answer: str | None, distractors: str | None) -> list[dict[str, object]]:
    try:
        wrong = json.loads(distractors or "[]")
    except json.JSONDecodeError:
        wrong = []
    listed = [{"text": answer or "", "correct": True}]
    return listed + [{"text": str(d), "correct": False} for d in wrong if isinstance(d, (str, int, float))]


def replays(room: RoomInputs, limit: int = 0) -> ReplaySet | None:
    questions = room.table("questions.parquet", QUESTIONS)
    if questions is None:
        return None
    accepted = sorted(
        (q for q in questions.iter_rows(named=True) if q["status"] == "accepted" and q["question_id"]),
        key=lambda q: (q["round"], q["setter"], q["question_id"]),
    )
    answers: dict[str, list] = defaultdict(list)
    pcorrect = room.table("pcorrect.parquet", PCORRECT)
    for row in pcorrect.iter_rows(named=True) if pcorrect is not None else ():
        answers[row["question_id"]].append(row)
    shown = accepted[:limit] if limit else accepted
    pages = []
    for q in shown:
        rows = sorted(answers.get(q["question_id"], []), key=lambda a: (-a["p_correct"], a["answerer"]))
        mean = sum(a["p_correct"] for a in rows) / len(rows) if rows else None
        pages.append(GamePage(
            key=safe_key(q["question_id"]),
            cells=[q["question_id"], str(q["round"]), q["setter"], num(mean), str(len(rows))],
            title=f"SKATE question {q['question_id']}",
            context={
                "q": q, "options": options(q["answer"], q["distractors"]),
                "answers": [{"model": a["answerer"], "p": num(a["p_correct"], 3), "width": round(120 * a["p_correct"]),
                             "se": num(a["std_error"], 3), "mode": a["mode"], "samples": a["samples"]} for a in rows],
            },
        ))
    note = f"Pages for the first {len(shown)} of {len(accepted)} questions." if len(shown) < len(accepted) else ""
    return ReplaySet("skate_game.html", ["question", "round", "setter", "mean p(correct)", "answerers"],
                     "Questions", pages, note)
