"""params/api-example: an API-only params set, so an API roster never waits on the embedded model.

Its roster is frontier API models (chat and reasoning, OpenAI, Anthropic, Gemini) priced offline by
litellm's bundled map, beside the scripted bots; no benchmark file seats the embedded model, so
no game lands in a shard of the embedded model (pipeline.core.run.shards). The set loads, its
schedules build, and the run plan prices it without a key or a network (docs/adding-a-model.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.core.models.pricing import price_per_token
from pipeline.core.models.roster import ModelsParams, load_models
from pipeline.core.run.shards import jobs_for_games, shard_kind
from pipeline.core.run.workflow import check_params_dir, required_params
from tests.conftest import REPO, plan_offline

API = REPO / "params" / "api-example"
SOURCE = "params/api-example"


@pytest.fixture(scope="module")
def models() -> ModelsParams:
    return load_models(API / "models.yaml")


def api_models(models: ModelsParams) -> set[str]:
    return {e.name for e in models.roster if not e.is_bot}


def seated(models: ModelsParams) -> dict[str, list[tuple[str, ...]]]:
    """Every benchmark's scheduled tables: the roster names each game or job seats."""
    from pipeline.elimination.config import load_elimination_params
    from pipeline.elimination.schedule import build_schedule as elimination_schedule
    from pipeline.skate.config import load_skate
    from pipeline.skate.schedule import build_schedule as skate_schedule
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import build_schedule as whoisspy_schedule
    from pipeline.xent.config import load_xent

    elimination = load_elimination_params(API / "elimination.yaml")
    whoisspy = load_whoisspy(API / "whoisspy.yaml")
    skate = load_skate(API / "skate.yaml")
    skate.check_roster(models, f"{SOURCE}/skate.yaml")
    schedule = skate_schedule(skate, models, source=f"{SOURCE}/skate.yaml")
    xent = load_xent(API / "xent.yaml")
    return {
        "elimination": [g.seats for g in elimination_schedule(elimination, models, f"{SOURCE}/elimination.yaml")],
        "whoisspy": [g.seats for g in whoisspy_schedule(whoisspy, models, source=f"{SOURCE}/whoisspy.yaml")],
        "skate": [(j.setter,) for j in schedule.generate.values()] + [(j.answerer,) for j in schedule.answers.values()],
        "xent": [(player, xent.opponent) for player in xent.players],
    }


def test_it_is_a_complete_params_set() -> None:
    from pipeline.core.run.registry import benchmarks

    check_params_dir(SOURCE, required_params(benchmarks()), REPO)  # what run and plan check
    assert (API / "leaderboard.yaml").read_bytes() == (REPO / "params" / "leaderboard.yaml").read_bytes()


def test_the_roster_is_frontier_api_models_chat_and_reasoning_priced_offline_with_the_bots(
    models: ModelsParams,
) -> None:
    from pipeline.core.models import is_reasoning_model

    llms = [e for e in models.roster if not e.is_bot]
    assert {e.provider for e in llms} == {"openai", "anthropic", "gemini"}
    for entry in llms:
        price = price_per_token(entry, models)  # litellm's bundled map: no key, no network
        assert price is not None and price[0] > 0 and price[1] > 0, f"{entry.model} is not priced"
        assert entry.sampling.max_tokens is None and not entry.sampling.move_max_tokens, entry.name
    reasoning = {e.name for e in llms if is_reasoning_model(e)}
    assert {e.name for e in llms if e.sampling.reasoning_effort and e.provider == "openai"} <= reasoning
    assert reasoning and set(api_models(models)) - reasoning  # both kinds
    bots = {e.name for e in models.roster if e.is_bot}
    assert {"random-bot", "heuristic-bot", "oracle-bot", "noisy-bot", "setter-bot", "graded-50"} <= bots
    for provider in ("openai", "anthropic", "gemini"):
        assert provider in models.providers, provider


def test_no_benchmark_seats_the_embedded_model_and_every_api_model_plays_each(models: ModelsParams) -> None:
    tables = seated(models)
    for benchmark, games in tables.items():
        names = {name for game in games for name in game}
        assert names <= {e.name for e in models.roster}, benchmark
        assert all(models.entry(name).provider != "local" for name in names), benchmark
        assert api_models(models) <= names, f"{benchmark} leaves out {sorted(api_models(models) - names)}"
        assert all(shard_kind(game, models) in ("api", "bots") for game in games), benchmark
    # so the game jobs of Elimination and Who is Spy hold no shard of the embedded model
    for benchmark in ("elimination", "whoisspy"):
        games = {str(i): seats for i, seats in enumerate(tables[benchmark])}
        jobs = jobs_for_games(games, API / "models.yaml")
        assert jobs.shards and not jobs.local and not jobs.solo, benchmark


def test_no_file_names_the_embedded_model() -> None:
    for path in sorted(API.glob("*.yaml")):
        data: Any = yaml.safe_load(path.read_text())
        assert "local/" not in json.dumps(data), path  # not even in a value the schema ignores


@pytest.mark.slow  # Snakemake's real dry run of every benchmark
def test_the_plan_prices_it_offline_and_seats_no_embedded_model(tmp_path: Path, models: ModelsParams) -> None:
    project, planned = plan_offline(tmp_path, API, "results/api-plan")
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert (project / "results/api-plan/plan.json").is_file() and not (project / "params").exists()
    plan = json.loads(planned.stdout)
    rows = [r for r in plan["rows"] if r["model"] != "-"]
    assert {r["benchmark"] for r in rows} >= {"elimination", "whoisspy", "xent", "skate"}
    assert {r["model"] for r in rows} <= {e.name for e in models.roster}  # this roster's, not the demo's
    for r in rows:  # no job seats the embedded model
        assert models.entry(r["model"]).provider != "local", r
    for benchmark in ("elimination", "whoisspy", "xent", "skate"):
        paid = {r["model"] for r in rows if r["benchmark"] == benchmark and r["calls"] > 0}
        assert paid == api_models(models), benchmark
        for r in rows:
            if r["benchmark"] == benchmark and r["model"] in paid:  # priced offline
                assert r["cost_usd"] is not None and r["cost_usd"] > 0, r
