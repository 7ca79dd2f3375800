"""params/paper: every benchmark at its reference's scale, chosen by one flag (docs/paper-scale.md).

Each file loads with its benchmark's own params model and holds the reference's numbers; every
name a benchmark seats is in the paper roster, whose API models litellm's bundled map prices. The
switch itself: `--params DIR` / PIPELINE_PARAMS reach Snakemake as `--config params=DIR`, a missing
directory or file stops with the path and the fix, and the plan prices the paper roster offline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.core.artifacts.params import ParamsError
from pipeline.core.models.pricing import price_per_token
from pipeline.core.models.roster import ModelsParams, load_models
from pipeline.core.run.workflow import (
    PARAMS_ENV,
    check_params_dir,
    params_config,
    params_dir,
    required_params,
)
from pipeline.elimination.config import load_elimination_params
from pipeline.elimination.schedule import build_schedule as elimination_schedule
from pipeline.leaderboard.config import load_leaderboard_params
from pipeline.skate.config import STRATEGIES, load_skate
from pipeline.skate.schedule import build_schedule as skate_schedule
from pipeline.whoisspy.config import VARIANTS, load_whoisspy
from pipeline.whoisspy.schedule import build_schedule as whoisspy_schedule
from pipeline.xent.config import load_xent
from tests.conftest import REPO, plan_offline

PAPER = REPO / "params" / "paper"
FILES = ("models.yaml", "elimination.yaml", "whoisspy.yaml", "xent.yaml", "skate.yaml", "leaderboard.yaml")


@pytest.fixture(scope="module")
def models() -> ModelsParams:
    return load_models(PAPER / "models.yaml")


def raw(name: str) -> dict[str, Any]:
    return yaml.safe_load((PAPER / name).read_text())


def language_models(models: ModelsParams) -> list[str]:
    return [e.name for e in models.roster if not e.is_bot]


def test_the_paper_directory_is_a_complete_params_set() -> None:
    for name in FILES:
        assert (PAPER / name).is_file(), name
    from pipeline.core.run.registry import benchmarks

    check_params_dir("params/paper", required_params(benchmarks()), REPO)  # what run and plan check


def test_the_roster_is_frontier_api_models_priced_offline_with_the_bots(models: ModelsParams) -> None:
    llms = [e for e in models.roster if not e.is_bot]
    assert len(llms) >= 8  # the Elimination Game seats 8 distinct models
    assert {e.provider for e in llms} >= {"openai", "anthropic", "gemini", "deepseek"}
    for entry in llms:
        assert entry.provider != "local", entry.name
        price = price_per_token(entry, models)  # litellm's bundled map: no key, no network
        assert price is not None and price[0] > 0 and price[1] > 0, f"{entry.model} is not priced"
        assert entry.sampling.max_tokens is None and not entry.sampling.move_max_tokens, entry.name
    reasoning = {e.name for e in llms if e.sampling.reasoning_effort}
    assert "gpt-5" in reasoning and "gpt-4.1" not in reasoning
    bots = {e.name for e in models.roster if e.is_bot}
    assert {"random-bot", "heuristic-bot", "oracle-bot", "noisy-bot", "setter-bot"} <= bots
    for provider in ("openai", "anthropic", "gemini", "deepseek"):
        assert provider in models.providers, provider


def test_skate_plays_the_papers_game(models: ModelsParams) -> None:
    params = load_skate(PAPER / "skate.yaml")
    assert (params.rounds, params.attempts) == (50, 5)
    assert sorted(params.analyses.strategies) == sorted(STRATEGIES) and len(params.analyses.strategies) == 5
    assert params.answering.mode == "sampled"  # the paper's adaptive sampling
    assert params.strategy == "historical_performance" and params.ranking.headline == "sequential"
    assert params.ranking.primary == "relative" and params.generation.max_context_items is None
    assert len(params.players) == 6  # the paper's six-player game
    params.check_roster(models, "params/paper/skate.yaml")
    schedule = skate_schedule(params, models, source="params/paper/skate.yaml")
    assert len(schedule.rounds) == 50


def test_xent_plays_the_references_benchmark(models: ModelsParams) -> None:
    params = load_xent(PAPER / "xent.yaml")
    assert params.rounds == 20
    assert params.games == [] and params.map_set == "data/xent-benchmark-0.2"
    assert params.judge.endswith("Qwen3-14B-Base")  # the reference's judge for 0.2, as a model directory
    assert params.replies.max_tokens is None and params.replies.protocol == "reference"
    assert params.judge_scoring == "reference"
    known = {e.name for e in models.roster}
    assert set(params.players) <= known and params.opponent in known
    # the map set is built by the import command the file names
    assert (
        "python -m pipeline xent maps import FILE.json --out data/xent-benchmark-0.2"
        in (PAPER / "xent.yaml").read_text()
    )


def test_who_is_spy_plays_the_papers_experiments(models: ModelsParams) -> None:
    params = load_whoisspy(PAPER / "whoisspy.yaml")
    assert sorted(params.variants) == sorted(VARIANTS)  # baseline, attack, defense, reasoning
    assert params.rules.time_limit_s == 10 and params.rules.seats == 6 and params.rules.rounds == 3
    assert params.rules.max_chars == 400
    assert 2 * params.games_per_role >= 90  # the paper's main table: over 90 games per model
    assert "replies" not in raw("whoisspy.yaml") and not params.replies.is_set()  # no token caps
    games = whoisspy_schedule(params, models, source="params/paper/whoisspy.yaml")
    assert len(games) == len(params.variants) * len(params.players) * 2 * params.games_per_role


def test_elimination_seats_eight_distinct_models_as_the_original(models: ModelsParams) -> None:
    params = load_elimination_params(PAPER / "elimination.yaml")
    assert "reply_tokens" not in raw("elimination.yaml")  # budgets belong to the models
    sched = params.schedule
    assert params.seats == 8 and sched.max_seats_per_player == 1 and params.history_rounds == 0
    assert sched.lineups_per_player > 0 and len(sched.players) >= params.seats and sched.rotations == params.seats
    rating = params.rating
    assert (rating.mu, rating.sigma, rating.beta, rating.tau, rating.draw_probability, rating.passes) == (
        4.0,
        8.3333,
        4.1667,
        0.0,
        0.0,
        100,
    )
    games = elimination_schedule(params, models, source="params/paper/elimination.yaml")
    assert len(games) >= 900  # the original's "~1000 tournaments"
    assert all(len(set(g.seats)) == 8 for g in games)


def test_the_leaderboard_is_the_demos() -> None:
    assert load_leaderboard_params(PAPER / "leaderboard.yaml") is not None
    assert (PAPER / "leaderboard.yaml").read_bytes() == (REPO / "params" / "leaderboard.yaml").read_bytes()


def test_every_name_a_benchmark_seats_is_in_the_paper_roster(models: ModelsParams) -> None:
    known = {e.name for e in models.roster}
    skate, xent, spy, elim = (raw(f"{n}.yaml") for n in ("skate", "xent", "whoisspy", "elimination"))
    named = {
        "skate": [*skate["players"], *skate.get("answer_only", [])],
        "xent": [*xent["players"], xent.get("opponent", "heuristic-bot")],
        "whoisspy": [*spy["players"], *spy["fill"]],
        "elimination": [
            *elim["schedule"]["players"],
            *(n for lineup in elim["schedule"].get("lineups", []) for n in lineup),
            *elim.get("memory_players", []),
        ],
    }
    for benchmark, names in named.items():
        assert names, benchmark
        missing = sorted(set(names) - known)
        assert not missing, f"params/paper/{benchmark}.yaml names {missing}, not in params/paper/models.yaml"
    # every language model of the roster plays somewhere
    seated = {n for names in named.values() for n in names}
    assert set(language_models(models)) <= seated


# -- the switch -------------------------------------------------------------------------------
def test_the_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.core.run.launch import with_params_config

    monkeypatch.delenv(PARAMS_ENV, raising=False)
    assert params_dir() == "params" and params_dir("params/paper/") == "params/paper"
    assert params_config("params") == []  # the demo's command lines are unchanged
    assert with_params_config(["whoisspy_all", "-n"], "params/paper") == [
        "whoisspy_all",
        "-n",
        "--config",
        "params=params/paper",
    ]
    # a --config of the user's own takes several KEY=VALUE: ours joins it
    assert with_params_config(["all", "--config", "a=1"], "params/paper") == [
        "all",
        "--config",
        "params=params/paper",
        "a=1",
    ]
    monkeypatch.setenv(PARAMS_ENV, "params/paper")
    assert params_dir() == "params/paper" and params_dir("params") == "params"
    # Snakemake inherits the variable: the flag's choice is passed explicitly
    assert params_config("params") == ["--config", "params=params"]


def test_run_takes_the_flag_anywhere_on_its_line() -> None:
    from pipeline.core.run.cli import _params_flag

    assert _params_flag(["whoisspy_all", "--params", "params/paper", "-n"]) == ("params/paper", ["whoisspy_all", "-n"])
    assert _params_flag(["--params=params/paper", "all"]) == ("params/paper", ["all"])
    assert _params_flag(["all", "-n"]) == (None, ["all", "-n"])


def test_a_missing_directory_or_file_names_the_path_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.cli import main

    missing = tmp_path / "nowhere"
    assert main(["plan", "--params", str(missing), "whoisspy_all"]) == 2
    err = capsys.readouterr().err
    assert f"params directory {missing} does not exist" in err and "--params DIR" in err and "params/paper" in err

    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "models.yaml").write_text((PAPER / "models.yaml").read_text())
    with pytest.raises(ParamsError) as err_info:
        check_params_dir(str(partial), ["models.yaml", "whoisspy.yaml", "leaderboard.yaml"])
    text = str(err_info.value)
    assert f"{partial}/whoisspy.yaml" in text and f"{partial}/leaderboard.yaml" in text
    assert "copy params/whoisspy.yaml, params/leaderboard.yaml into" in text
    assert main(["run", "--params", str(partial), "whoisspy_all", "-n"]) == 2
    assert f"{partial}/whoisspy.yaml" in capsys.readouterr().err


@pytest.mark.slow  # Snakemake's real dry run over a few thousand scheduled games
def test_the_plan_prices_the_paper_roster_offline(tmp_path: Path) -> None:
    # a config, not a copy: the repository's params/paper, planned in an empty work directory
    project, planned = plan_offline(tmp_path, PAPER, "results/paper-plan", "whoisspy_all", "elimination_all")
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert (project / "results/paper-plan/plan.json").is_file() and not (project / "params").exists()
    plan = json.loads(planned.stdout)
    models = load_models(PAPER / "models.yaml")
    rows = [r for r in plan["rows"] if r["model"] != "-"]
    assert {r["benchmark"] for r in rows} == {"whoisspy", "elimination"}
    planned_models = {r["model"] for r in rows}
    assert planned_models <= {e.name for e in models.roster}  # the paper roster's, not the demo's
    seated = {
        "whoisspy": set(load_whoisspy(PAPER / "whoisspy.yaml").players),
        "elimination": set(load_elimination_params(PAPER / "elimination.yaml").schedule.players),
    }
    for benchmark, names in seated.items():
        got = {r["model"] for r in rows if r["benchmark"] == benchmark and r["calls"] > 0}
        assert got == names, benchmark
    for r in rows:  # every API model priced from litellm's bundled map, offline
        assert r["cost_usd"] is not None and r["cost_usd"] > 0, r
    assert plan["cost_usd"] is not None and plan["cost_usd"] > 0
