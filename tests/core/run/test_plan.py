"""The run plan as a user meets it: `python -m pipeline plan`, the budget guard, plan against spend.

A fake API model answers at litellm's provider boundary (`mock_response`), with the roster's
own price, so estimated and spent money are real numbers without a network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.testing.project import snakemake_command
from tests.conftest import write_roster

pytestmark = pytest.mark.slow  # every plan runs Snakemake's real dry run in a temp work directory
PRICE = {"openai/gpt-4o-mini": {"input_usd_per_mtok": 150.0, "output_usd_per_mtok": 600.0}}
ROSTER = [
    {"name": "random-bot", "bot": "random"},
    {"name": "setter-bot", "bot": "setter"},
    {"name": "oracle-bot", "bot": "oracle"},
    {"name": "gpt-mini", "model": "openai/gpt-4o-mini", "sampling": {"max_tokens": 8}, "extra": {"mock_response": "A"}},
]
QUESTION = {
    "question_id": "q1",
    "round": 1,
    "setter": "setter-bot",
    "description": "sum of a range",
    "program": "print(sum(range(5)))",
    "answer": "10",
    "distractors": ["9", "11", "12", "15", "5", "4", "0", "1", "20"],
}


def _setup(project: Path, budget: float | None = None) -> None:
    write_roster(
        project,
        ROSTER,
        gateway={
            "cache_dir": str(project / ".cache" / "responses"),
            "budget_usd": budget,
            "prices": PRICE,
            "backoff_base_s": 0.0,
        },
    )
    skate = yaml.safe_load((project / "params/skate.yaml").read_text())
    skate.update(players=["setter-bot"], answer_only=["gpt-mini", "oracle-bot"], rounds=1)
    skate["answering"]["mode"] = "sampled"  # the paper's adaptive sampling (the demo params use exact)
    (project / "params/skate.yaml").write_text(yaml.safe_dump(skate, sort_keys=False))


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in `project`: `python -m pipeline plan` there plans the repository's workflow in the
    work directory (a copy's own); `-m snakemake` runs it (snakemake_command)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-fake-plan-test", "PYTHONPATH": str(project)}
    command = snakemake_command(project, *args[2:]) if args[:2] == ("-m", "snakemake") else [sys.executable, *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False)


def _prior_samples(project: Path) -> float:
    """SKATE's expected samples per question before any answer (the stopping rule's mean)."""
    from pipeline.skate.config import load_skate
    from pipeline.skate.estimators import expected_samples

    return expected_samples(load_skate(project / "params/skate.yaml").answering)


def _rows(project: Path) -> dict[tuple[str, str], dict]:
    plan = json.loads((project / "results/plan/plan.json").read_text())
    return {(r["benchmark"], r["model"]): r for r in plan["rows"]}


def test_plan_counts_calls_before_a_run_and_cache_hits_with_the_gateways_own_keys(project: Path) -> None:
    _setup(project)
    first = _run(project, "-m", "pipeline", "plan", "roster_all", "skate_all")
    assert first.returncode == 0, first.stderr
    rows = _rows(project)
    roster = rows[("roster", "gpt-mini")]
    # one request expected; a chat model whose reply showed hidden reasoning is asked again: two at most
    assert (roster["calls"], roster["expected_calls"], roster["cached_calls"], roster["jobs"]) == (2, 1, 0, 1)
    assert roster["why"] == "new job 1" and roster["cost_usd"] > 0
    skate = rows[("skate", "gpt-mini")]
    # before any question exists: one question per player; adaptive sampling at its cap bounds it, the
    # stopping rule's mean for an answerer of unknown accuracy is expected; the demo params' two strategy
    # games are a whole game each, and the one under the main game's strategy sends the main game's
    # requests again (answered by the cache)
    prior = _prior_samples(project)
    assert (skate["calls"], skate["expected_calls"], skate["cached_calls"]) == (300, round(2 * prior), 0)
    assert "10 to 100 samples per question" in skate["note"]
    assert rows[("skate", "oracle-bot")]["calls"] == 0  # bots cost nothing
    assert "gpt-mini" in first.stdout and "budget" not in first.stdout.splitlines()[-1]

    # the round's question exists and the answer job really ran once through the real gateway
    from pipeline.core.models.roster import load_models
    from pipeline.skate.config import load_skate
    from pipeline.skate.schedule import answer_paths, build_schedule, round_path

    schedule = build_schedule(load_skate(project / "params/skate.yaml"), load_models(project / "params/models.yaml"))
    round_file = project / "results/skate" / round_path("", schedule.rounds[1].job_id)
    round_file.parent.mkdir(parents=True)
    round_file.write_text(
        json.dumps({"job_id": schedule.rounds[1].job_id, "round": 1, "questions": [QUESTION], "no_question": []})
    )
    job = schedule.answers[(1, "gpt-mini")].job_id
    answered = _run(project, "-m", "pipeline", "skate", "play", job)
    assert answered.returncode == 0, answered.stderr
    calls = pl.read_parquet(project / "results/skate" / answer_paths("", job)["calls"])
    sent = calls.filter(~pl.col("cache_hit")).height
    assert 10 <= sent < 100
    for path in answer_paths(project / "results/skate", job).values():
        path.unlink()  # the job must run again: its answers are all in the response cache

    again = _run(project, "-m", "pipeline", "plan", "skate_all")
    assert again.returncode == 0, again.stderr
    skate = _rows(project)[("skate", "gpt-mini")]
    assert skate["cached_calls"] == sent  # every request the job sent is found under its real key
    # the main game's cached answers replay and end where they ended: nothing paid expected there; the
    # no_info game (its own questions) is expected at the stopping rule's mean
    assert skate["calls"] == 300 and skate["paid_calls"] == 300 - sent and skate["expected_calls"] == round(prior)


def test_a_run_whose_plan_exceeds_the_budget_stops_before_the_first_call(project: Path) -> None:
    _setup(project, budget=0.001)
    run = _run(project, "-m", "snakemake", "roster_all", "--cores", "1")
    assert run.returncode != 0
    assert "No model request was started" in run.stderr
    assert "remove gpt-mini from the roster in params/models.yaml" in run.stderr
    assert not (project / ".cache" / "responses").exists()  # nothing asked, nothing paid
    assert not (project / "results/roster/check.parquet").exists()

    planned = _run(project, "-m", "pipeline", "plan", "roster_all")
    assert planned.returncode == 3 and "budget" in planned.stderr


def test_after_a_run_the_plan_is_compared_with_what_was_spent(project_copy: Path) -> None:
    project = project_copy  # it edits a rule file: a repository copy, whose pipeline/ its processes import
    # the bound: the check's request, and a second one with a reasoning allowance should the reply show
    # hidden reasoning (8,240 tokens at this test's price, 1000x the real one's)
    _setup(project, budget=10.0)
    # litellm's mock bills 20 reply tokens whatever the cap, as no provider does: a cap above that
    check = {"prompt": "Reply with the single word: blue", "expect": "blue", "max_tokens": 24}
    write_roster(project, [*ROSTER[:3], {**ROSTER[3], "sampling": {"max_tokens": 24}}], check=check)
    run = _run(project, "-m", "snakemake", "roster_all", "--cores", "1")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "run plan against spend" in run.stderr
    compared = {r["model"]: r for r in json.loads((project / "results/plan/compare.json").read_text())["rows"]}
    check = pl.read_parquet(project / "results/roster/check.parquet")
    spent = check.filter(pl.col("name") == "gpt-mini")["cost_usd"].item()
    row = compared["gpt-mini"]
    assert row["planned_calls"] == 2 and row["expected_calls"] == row["spent_calls"] == 1
    assert row["spent_cost_usd"] == pytest.approx(spent)
    bound, expected = row["planned_cost_usd"], row["expected_cost_usd"]
    assert bound >= spent > 0 and expected > 0 and row["within_bound"]  # the bound held
    # the expectation's error is reported: (expected - spent) / spent
    assert f"{(expected - spent) / spent:+.0%}" in run.stderr and "kept" in run.stderr

    rerun = _run(project, "-m", "pipeline", "plan", "roster_all")
    assert "total: 0 job(s)" in rerun.stdout  # nothing left to do, nothing to pay

    # a changed rule reruns the job (Snakemake's reason), and the cache answers its request
    rules = project / "pipeline/roster/rules.smk"
    rules.write_text(rules.read_text().replace("--out results/roster", "--out results/roster/"))
    changed = _run(project, "-m", "pipeline", "plan", "roster_all")
    assert changed.returncode == 0, changed.stderr
    row = _rows(project)[("roster", "gpt-mini")]
    assert row["why"] == "changed code 1"
    assert (row["calls"], row["cached_calls"], row["expected_calls"]) == (1, 1, 0)  # the cache answers it
    assert row["expected_cost_usd"] == 0.0


def test_game_benchmarks_are_planned_from_their_schedules_and_priced_before_any_game(project: Path) -> None:
    _setup(project)
    write_roster(project, [*ROSTER, {"name": "gpt-4o", "model": "openai/gpt-4o"}])  # priced by litellm's map
    whoisspy = yaml.safe_load((project / "params/whoisspy.yaml").read_text())
    whoisspy.update(players=["gpt-mini"], fill=["random-bot"])
    (project / "params/whoisspy.yaml").write_text(yaml.safe_dump(whoisspy, sort_keys=False))
    elimination = yaml.safe_load((project / "params/elimination.yaml").read_text())
    elimination["schedule"].update(lineups=[["gpt-4o"] + ["random-bot"] * 7], max_seats_per_player=7)
    (project / "params/elimination.yaml").write_text(yaml.safe_dump(elimination, sort_keys=False))
    planned = _run(project, "-m", "pipeline", "plan", "whoisspy_all", "elimination_all", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    rows = {r["model"]: r for r in plan["rows"] if r["benchmark"] == "whoisspy"}
    # API games are played many per shard job (pipeline.core.run.shards): one job, every game counted
    games = int(_run(project, "-m", "pipeline", "whoisspy", "schedule").stdout.count("\n"))
    assert games >= 2 and rows["gpt-mini"]["jobs"] == 1 and rows["gpt-mini"]["why"] == "new job 1"
    # one seat per game, at most 3 rounds x (description + vote), as the rules bound it
    assert rows["gpt-mini"]["calls"] == games * 2 * whoisspy["rules"]["rounds"]
    # no game ran yet: tokens come from the game's own prompts and the model's reply budgets
    assert rows["gpt-mini"]["cost_usd"] > 0 and rows["gpt-mini"]["tokens_from"] == "prompt+cap"
    assert "tokens unknown" not in rows["gpt-mini"]["note"]
    assert rows["random-bot"]["calls"] == 0
    # the Elimination Game too: its structure bounds a seat's calls before any game of the model
    seat = next(r for r in plan["rows"] if r["benchmark"] == "elimination" and r["model"] == "gpt-4o")
    assert seat["calls"] > 0 and seat["cost_usd"] > 0 and "before its first game" in seat["note"]
    assert plan["cost_usd"] is not None and plan["cost_usd"] >= rows["gpt-mini"]["cost_usd"] + seat["cost_usd"]


def test_the_plan_samples_a_reasoning_answerer_of_an_exact_skate_game(project: Path) -> None:
    _setup(project)
    # a reasoning model's API refuses logprobs: in an exact game it is planned (and run) sampled
    thinker = {
        "name": "thinker",
        "model": "openai/gpt-4o-mini",
        "extra": {"mock_response": "A"},
        "sampling": {"reasoning": True, "reasoning_tokens": 1000},
    }
    write_roster(project, [*ROSTER, thinker])
    skate = yaml.safe_load((project / "params/skate.yaml").read_text())
    skate["answer_only"] = ["gpt-mini", "thinker", "oracle-bot"]
    skate["answering"]["mode"] = "exact"  # as the demo's params
    (project / "params/skate.yaml").write_text(yaml.safe_dump(skate, sort_keys=False))
    planned = _run(project, "-m", "pipeline", "plan", "skate_all")
    assert planned.returncode == 0, planned.stderr
    rows = _rows(project)
    sets, samples, letter = (skate["answering"][k] for k in ("exact_option_sets", "max_samples", "max_tokens"))
    # one question (one player) in each of three games: the main game and the params' two strategy
    # games, one of them the main game's own (its requests again, answered by the cache: not expected)
    games, expected_games = 3, 2
    # the chat model read exactly, one token per option set, expected so; bounded with the sampling that
    # follows a reply without log-probabilities (max_samples letters more)
    exact = rows[("skate", "gpt-mini")]
    assert exact["calls"] == games * (sets + samples) and "sampled" not in exact["note"]
    assert exact["tokens_out"] == games * (sets + samples * letter)
    assert exact["expected_calls"] == expected_games * sets
    # the reasoning model sampled, at most max_samples letters, each with its reasoning allowance
    sampled = rows[("skate", "thinker")]
    assert sampled["calls"] == games * samples and "thinker answers sampled: a reasoning model" in sampled["note"]
    assert sampled["tokens_out"] == games * samples * (letter + 1000)
    assert sampled["tokens_reasoning"] == games * samples * 1000
    assert sampled["expected_calls"] == round(expected_games * _prior_samples(project))
    shown = _run(project, "-m", "pipeline", "skate", "schedule")
    assert "answerer thinker mode sampled (a reasoning model: reasoning APIs refuse logprobs)" in shown.stdout
    assert "answerer gpt-mini mode exact" in shown.stdout
