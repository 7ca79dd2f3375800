"""Xent in the run plan: before any game ran, an API player's calls and tokens come from the game's
structure (its program walked by Xent's own runtime and prompt code), so it is priced; after, from
the measured calls tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.core.artifacts.schemas import CallsSchema, calls_frame, write_table
from pipeline.core.models.reply_budgets import DEFAULT_REASONING_TOKENS, tokens_for_words
from pipeline.core.run.estimates import PlanContext
from pipeline.core.run.plan import PlannedJob, TokenHistory, plan_table
from pipeline.xent.config import XentParams, load_xent
from pipeline.xent.estimators import MOVE_TAG_TOKENS, THOUGHT_WORDS, estimate_play, expected_visible, game_work
from pipeline.xent.schedule import build_schedule
from tests.conftest import REPO, models_params, write_roster

SAMPLE = REPO / "tests/data/xent/benchmark-sample.json"
HIGH = DEFAULT_REASONING_TOKENS["high"]
# the demo roster's other players of params/xent.yaml
DEMO_EXTRA = [
    {"name": "smollm2-135m", "model": "local/smollm2-135m"},
    *({"name": f"graded-{s}", "bot": "graded", "bot_options": {"skill": s / 100}} for s in (90, 50, 10)),
]
ROSTER = [
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
    {"name": "gpt-4o", "model": "openai/gpt-4o"},  # priced by litellm's bundled map
    {"name": "gpt-4o-high", "model": "openai/gpt-4o", "sampling": {"reasoning_effort": "high"}},
]


def demo_params(root: Path, **changes: Any) -> Path:
    """The committed demo's params/xent.yaml under `root`, with `changes`."""
    params = yaml.safe_load((REPO / "params/xent.yaml").read_text())
    params.update(changes)
    path = root / "params/xent.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def estimates(root: Path, players: list[str]) -> tuple[PlanContext, list[tuple[str, PlannedJob, Any]]]:
    models = models_params(ROSTER)
    path = demo_params(root, players=players)
    context = PlanContext(root, models)
    found = []
    for play in build_schedule(load_xent(path), models).jobs:
        job = PlannedJob("xent_play", "Missing output: ...", {"game": play.game, "job_id": play.job_id})
        found += [("xent", job, e) for e in estimate_play(job, context)]
    return context, found


def rows(context: PlanContext, found: list[tuple[str, PlannedJob, Any]]) -> dict[str, dict[str, Any]]:
    table = plan_table(found, context.models, TokenHistory.load(context.root / "results"))
    return {r["model"]: r for r in table.iter_rows(named=True)}


def test_demo_games_are_counted_from_their_programs() -> None:
    params = load_xent(REPO / "params/xent.yaml")
    schedule = build_schedule(params, models_params(ROSTER + DEMO_EXTRA))
    condense = game_work(schedule.games["condense"], schedule.maps["condense"], params.rounds, params)
    (move,) = condense.moves["black"]  # one elicit(x, 10) a round
    assert move.calls == params.maps_per_game * params.rounds and condense.reasks["black"] == 0
    assert move.expected_visible == 10 + MOVE_TAG_TOKENS + tokens_for_words(THOUGHT_WORDS)
    assert move.game_tokens is None  # the demo sets no game cap: the model's entry decides
    interception = game_work(schedule.games["interception"], schedule.maps["interception"], params.rounds, params)
    assert [m.calls for m in interception.moves["black"]] == [params.rounds]
    assert [m.calls for m in interception.moves["white"]] == [params.rounds]  # the opponent's ask
    assert interception.reasks["black"] == 10 * params.rounds  # its ensure may re-ask 10 times a round
    assert expected_visible(10, "short") == 10 + MOVE_TAG_TOKENS


def test_the_per_map_conversation_grows_the_prompts_of_later_rounds() -> None:
    demo = load_xent(REPO / "params/xent.yaml")
    game = build_schedule(demo, models_params(ROSTER + DEMO_EXTRA))
    maps = game.maps["condense"]

    def replies(**update: object) -> XentParams:
        return demo.model_copy(update={"replies": demo.replies.model_copy(update=update)})

    params = replies(conversation="per_map", detail_rounds=1)
    one = game_work(game.games["condense"], maps, 1, params).moves["black"][0]
    five = game_work(game.games["condense"], maps, 5, params).moves["black"][0]
    assert five.calls == 5 and five.prompt_tokens > 2 * one.prompt_tokens  # mean of a growing conversation
    fresh = game_work(game.games["condense"], maps, 5, replies(conversation="per_ask", detail_rounds=1)).moves["black"][
        0
    ]
    assert one.prompt_tokens < fresh.prompt_tokens < five.prompt_tokens
    # the published protocol (the default): a fresh prompt with every round in detail grows faster
    full = game_work(game.games["condense"], maps, 5, demo).moves["black"][0]
    assert (demo.replies.conversation, demo.replies.detail_rounds) == ("per_ask", None)
    assert fresh.prompt_tokens < full.prompt_tokens


def test_an_imported_map_set_counts_each_maps_program(tmp_path: Path) -> None:
    from pipeline.xent.mapset import import_benchmark
    from pipeline.xent.xgl import load_program, player_arg

    import_benchmark(SAMPLE, tmp_path / "set")
    params = load_xent(demo_params(tmp_path, games=[], map_set=str(tmp_path / "set"), rounds=3, players=["gpt-4o"]))
    schedule = build_schedule(params, models_params(ROSTER))
    for name, game in schedule.games.items():
        work = game_work(game, schedule.maps[name], params.rounds, params)
        expected: dict[str, int] = {}
        for spec in schedule.maps[name]:
            for ins in load_program(spec.imported).instructions:  # type: ignore[arg-type]
                if ins.op == "elicit":
                    role, args = player_arg(ins)
                    expected[role] = expected.get(role, 0) + (len(args) - 1) * params.rounds
        assert expected and {r: sum(m.calls for m in work.moves[r]) for r in expected} == expected, name


def test_an_api_player_is_priced_before_any_game_and_a_reasoning_model_adds_its_allowance(tmp_path: Path) -> None:
    context, found = estimates(tmp_path, ["gpt-4o", "gpt-4o-high", "random-bot"])
    got = rows(context, found)
    chat, high = got["gpt-4o"], got["gpt-4o-high"]
    # condense (1 ask a round) and interception (black's ask; the heuristic bot plays white)
    # expected: 2 rounds x 1 ask in each game; the bound adds interception's ensure re-asks
    assert chat["expected_calls"] == 2 * 1 * 2 and chat["calls"] == 2 * 1 * 2 + 20
    assert high["calls"] == chat["calls"] and chat["jobs"] == 2
    assert chat["tokens_in"] > 0 and chat["tokens_out"] > 0 and chat["cost_usd"] > 0
    assert chat["tokens_from"] == "prompt+cap" and "unknown" not in chat["note"]
    assert "condense: 1 map(s) x 2 round(s) x 1 ask(s) of black a round" in chat["note"]
    assert "ensure may re-ask up to 20 more" in chat["note"]  # interception's ensure, 10 a round
    assert high["tokens_in"] == chat["tokens_in"]
    assert high["tokens_out"] - chat["tokens_out"] == HIGH * chat["calls"]
    assert (high["tokens_reasoning"], chat["tokens_reasoning"]) == (HIGH * chat["calls"], 0)
    assert high["cost_usd"] > chat["cost_usd"]
    assert got["random-bot"]["calls"] == 0 and got["heuristic-bot"]["calls"] == 0


def test_once_a_game_ran_the_measured_calls_and_tokens_count(tmp_path: Path) -> None:
    context, _ = estimates(tmp_path, ["gpt-4o"])
    play = build_schedule(load_xent(tmp_path / "params/xent.yaml"), context.models).jobs[0]
    job = f"xent/{play.game}/{play.job_id}"
    measured = calls_frame(
        [
            {
                "job": job,
                "roster_name": "gpt-4o",
                "model": "openai/gpt-4o",
                "request_id": f"r{k}",
                "attempt": 1,
                "tokens_in": 1000,
                "tokens_out": 50,
                "cost_usd": 0.0,
                "latency_s": 0.1,
                "cache_hit": False,
                "error_kind": None,
                "finish_reason": "stop",
            }
            for k in range(7)
        ]
    )
    write_table(tmp_path / "results/xent/play" / play.game / f"{play.job_id}.calls.parquet", measured, CallsSchema)
    context, found = estimates(tmp_path, ["gpt-4o"])
    mine = [e for _, j, e in found if j.wildcards["job_id"] == play.job_id and e.model == "gpt-4o"]
    assert mine[0].expected[0] == 7 and mine[0].calls == 7 and not mine[0].note  # this game's jobs: measured
    row = rows(context, found)["gpt-4o"]
    assert row["tokens_from"] == "measured+prompt+cap"  # the other game has not run yet


@pytest.mark.slow
def test_python_m_pipeline_plan_prices_xent_before_any_game(project: Path) -> None:
    write_roster(project, ROSTER)
    demo_params(project, players=["gpt-4o", "gpt-4o-high"])
    env = {**os.environ, "PYTHONPATH": str(project)}
    env.pop("OPENAI_API_KEY", None)  # planning needs no key
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "plan", "xent_all", "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plan = json.loads(done.stdout)
    got = {r["model"]: r for r in plan["rows"] if r["benchmark"] == "xent"}
    chat, high = got["gpt-4o"], got["gpt-4o-high"]
    # 4 asks expected; the bound adds every re-ask the game's ensure lines allow
    assert chat["expected_calls"] == 4 and chat["calls"] > 4 and "ensure may re-ask up to" in chat["note"]
    assert chat["tokens_in"] > 0 and chat["tokens_out"] > 0 and chat["cost_usd"] > chat["expected_cost_usd"] > 0
    assert high["tokens_out"] - chat["tokens_out"] == HIGH * chat["calls"]
    assert "calls unknown" not in chat["note"] and plan["cost_usd"] is not None and plan["cost_usd"] > 0
