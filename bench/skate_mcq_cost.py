"""SKATE MCQ cost: calls per (question, answerer) to measure p(correct), three ways.

- adaptive: sample until the standard error is at most sigma_stop (0.05), floor 10, cap 100;
- fixed: always 100 samples (the baseline);
- exact: one call per option set (8) reading the first token's log-probabilities (models only).

Answerers of known accuracy (noisy bots, q from 0 to 1) on template questions show how many calls
adaptive sampling saves and that its estimates match the fixed 100 samples; the embedded model
(local/gemma-3-270m at temperature 1) on a few questions compares all three modes on a real
model. Adaptive sampling reads a prefix of the fixed run's sample stream (same seeds and option
sets, served from the response cache), so the two estimates differ only by where sampling stopped.

    .venv/bin/python bench/skate_mcq_cost.py [--questions 20] [--model-questions 2]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result  # noqa: E402

import pipeline  # noqa: E402,F401
import pipeline.skate.bots  # noqa: E402,F401
from pipeline.core.llm import Gateway  # noqa: E402
from pipeline.core.players import make_players  # noqa: E402
from pipeline.core.roster import ModelsParams  # noqa: E402
from pipeline.skate.config import AnsweringParams  # noqa: E402
from pipeline.skate.mcq import Question, answer_exact, answer_sampled  # noqa: E402
from pipeline.skate.templates import draw_template, plausible_distractors, run_trusted  # noqa: E402

ACCURACIES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
SIGMA_STOP = 0.05
FIXED = 100
OPTION_SETS = 8


def questions(count: int, seed: int) -> list[Question]:
    rng = random.Random(seed)
    made = []
    for i in range(count):
        template = draw_template(rng)
        answer = run_trusted(template.program)
        wrong = plausible_distractors(template, answer, 9, rng)
        made.append(Question(f"bench-{seed}-{i}", 1, "setter-bot", template.description, template.program, answer, tuple(wrong)))
    return made


async def measure(player, qs: list[Question], exact: bool, answer_tokens: int) -> list[dict]:
    adaptive = AnsweringParams(sigma_stop=SIGMA_STOP, min_samples=10, max_samples=FIXED, max_tokens=answer_tokens, few_shot=2)
    fixed = AnsweringParams(sigma_stop=SIGMA_STOP, min_samples=FIXED, max_samples=FIXED, max_tokens=answer_tokens, few_shot=2)
    rows = []
    for q in qs:
        started = time.perf_counter()
        _, f = await answer_sampled(player, q, fixed, game_seed=0)
        fixed_s = time.perf_counter() - started
        _, a = await answer_sampled(player, q, adaptive, game_seed=0)  # a prefix of the fixed run: cached
        row = {"question": q.question_id, "answerer": player.name, "fixed_p": f["p_correct"], "fixed_calls": f["samples"],
               "adaptive_p": a["p_correct"], "adaptive_calls": a["samples"], "adaptive_se": a["std_error"],
               "fixed_s": round(fixed_s, 3)}
        if exact:
            started = time.perf_counter()
            _, e = await answer_exact(player, q, AnsweringParams(exact_option_sets=OPTION_SETS, few_shot=2), game_seed=0)
            row.update(exact_p=e["p_correct"], exact_calls=e["samples"], exact_s=round(time.perf_counter() - started, 3))
        rows.append(row)
        print(row, file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=20, help="template questions for the bots")
    parser.add_argument("--model-questions", type=int, default=2, help="questions for the local model (0: skip)")
    parser.add_argument("--cache", default=None, help="response cache to reuse (default: a fresh temp dir)")
    args = parser.parse_args()
    cache = args.cache or tempfile.mkdtemp(prefix="skate-mcq-bench-")
    roster = [{"name": f"noisy-{q:.2f}", "bot": "noisy", "bot_options": {"accuracy": q}} for q in ACCURACIES]
    roster.append({"name": "gemma-t1", "model": "local/gemma-3-270m", "sampling": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 1}})
    models = ModelsParams.model_validate({"roster": roster, "gateway": {"cache_dir": cache}})
    gateway = Gateway(models, job="bench/skate_mcq_cost")
    players = make_players(models, gateway, 0, game="skate")

    bot_questions = questions(args.questions, seed=1)
    bot_rows = []
    for q in ACCURACIES:
        rows = asyncio.run(measure(players[f"noisy-{q:.2f}"], bot_questions, exact=False, answer_tokens=1))
        for row in rows:
            row["true_p"] = q
        bot_rows += rows
    model_rows = asyncio.run(measure(players["gemma-t1"], questions(args.model_questions, seed=2), exact=True, answer_tokens=1)) if args.model_questions else []

    every = bot_rows + model_rows
    adaptive_calls = statistics.mean(r["adaptive_calls"] for r in every)
    diffs = [abs(r["adaptive_p"] - r["fixed_p"]) for r in every]
    by_accuracy = {
        f"{q:.2f}": {
            "adaptive_calls_mean": round(statistics.mean(r["adaptive_calls"] for r in bot_rows if r["true_p"] == q), 2),
            "adaptive_p_mean": round(statistics.mean(r["adaptive_p"] for r in bot_rows if r["true_p"] == q), 4),
            "fixed_p_mean": round(statistics.mean(r["fixed_p"] for r in bot_rows if r["true_p"] == q), 4),
        }
        for q in ACCURACIES
    }
    model = None
    if model_rows:
        model = {
            "answerer": "local/gemma-3-270m (temperature 1, 2 solved examples, 1-token answers)",
            "questions": len(model_rows),
            "fixed_calls_mean": FIXED,
            "adaptive_calls_mean": round(statistics.mean(r["adaptive_calls"] for r in model_rows), 2),
            "exact_calls_mean": OPTION_SETS,
            "seconds_per_question": {
                "fixed": round(statistics.mean(r["fixed_s"] for r in model_rows), 2),
                "exact": round(statistics.mean(r["exact_s"] for r in model_rows), 2),
            },
            "p_correct": [{"fixed": round(r["fixed_p"], 4), "adaptive": round(r["adaptive_p"], 4),
                           "exact": round(r["exact_p"], 4)} for r in model_rows],
            "max_abs_exact_minus_fixed": round(max(abs(r["exact_p"] - r["fixed_p"]) for r in model_rows), 4),
        }
    write_result(
        "skate_mcq_cost",
        metric="mean calls per (question, answerer) to reach sigma_stop 0.05 (adaptive sampling)",
        value=round(adaptive_calls, 2),
        unit="calls",
        target="fewer calls than a fixed 100 samples, with the same estimates within 2 sigma_stop; "
               f"exact mode: {OPTION_SETS} calls",
        baseline={"fixed_samples_calls": FIXED, "exact_mode_calls": OPTION_SETS},
        pairs=len(every),
        adaptive_minus_fixed={"mean_abs": round(statistics.mean(diffs), 4), "max_abs": round(max(diffs), 4),
                              "share_within_2_sigma_stop": round(sum(d <= 2 * SIGMA_STOP for d in diffs) / len(diffs), 4)},
        bots_by_true_accuracy=by_accuracy,
        local_model=model,
        settings={"sigma_stop": SIGMA_STOP, "min_samples": 10, "max_samples": FIXED, "option_sets_exact": OPTION_SETS,
                  "bot_questions": len(bot_questions)},
    )


if __name__ == "__main__":
    main()
