"""Budgets belong to the model: what each roster entry sends for a game's move, against a loopback
provider that acts like today's reasoning APIs (hidden reasoning inside the cap, empty at the
limit below it, logprobs and a temperature other than 1 refused)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.artifacts.schemas import CallsSchema, read_table
from pipeline.core.models.gateway import Gateway, completion_request
from pipeline.core.models.reply_budgets import DEFAULT_VISIBLE_TOKENS, describe, is_reasoning_model
from pipeline.core.models.roster import ModelsParams
from pipeline.core.run.plan import CallEstimate, PlannedJob, make_plan, what_to_cut
from pipeline.testing.loopback import LoopbackServer

KEY_ENV = "LOOPBACK_TEST_KEY"
ASK = [{"role": "user", "content": "Who do you vote for?"}]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    monkeypatch.setenv(KEY_ENV, "not-a-real-key")
    with LoopbackServer(
        reasoning={"thinker": 3000, "o3": 500}, reply=lambda m: "P3: they hide something", max_seconds=60
    ) as running:
        yield running


def roster(server: LoopbackServer, *entries: dict[str, Any], **settings: Any) -> ModelsParams:
    base = {"extra": {"api_base": server.url}, "api_key_env": KEY_ENV}
    return ModelsParams.model_validate({"roster": [{**base, **e} for e in entries], **settings})


def ask(models: ModelsParams, name: str, tmp_path: Path, **kwargs: Any) -> Any:
    gateway = Gateway(models, cache_dir=tmp_path / "cache", job="test")
    kwargs = {"seed": 1, "max_tokens": 10, "kind": "vote", "benchmark": "elimination", **kwargs}
    completion = gateway.complete_sync(models.entry(name), ASK, **kwargs)
    gateway.write_calls(tmp_path / "calls.parquet")
    return completion


def sent(server: LoopbackServer) -> list[dict[str, Any]]:
    return [{k: v for k, v in body.items() if k != "messages"} for body in server.requests]


def test_reasoning_model_gets_the_visible_budget_plus_its_allowance(server: LoopbackServer, tmp_path: Path) -> None:
    models = roster(server, {"name": "r", "model": "openai/thinker", "sampling": {"reasoning_effort": "medium"}})
    completion = ask(models, "r", tmp_path)
    assert completion.text == "P3: they hide something"
    assert not completion.empty_at_token_limit
    last = sent(server)[-1]
    assert last["max_completion_tokens"] == 10 + 8192  # the game's 10 visible + medium's allowance
    assert "max_tokens" not in last
    assert completion.tokens_reasoning == 3000


def test_refused_temperature_is_dropped_recorded_and_not_fatal(server: LoopbackServer, tmp_path: Path) -> None:
    models = roster(server, {"name": "r", "model": "openai/thinker", "sampling": {"reasoning_effort": "low"}})
    completion = ask(models, "r", tmp_path)
    assert completion.dropped_params == ("temperature",)
    first, second = sent(server)
    assert first["temperature"] == 0.7 and "temperature" not in second
    calls = read_table(tmp_path / "calls.parquet", CallsSchema)
    assert calls["error_kind"].to_list() == ["bad_request", None]
    answered = calls.filter(pl.col("error_kind").is_null()).row(0, named=True)
    assert answered["dropped_params"] == "temperature"
    assert answered["tokens_reasoning"] == 3000
    assert answered["finish_reason"] == "stop"


def test_reasoning_tokens_reach_the_spend_ledger(server: LoopbackServer, tmp_path: Path) -> None:
    models = roster(server, {"name": "r", "model": "openai/thinker", "sampling": {"reasoning": True}})
    ask(models, "r", tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "cache" / "spend-ledger.jsonl").read_text().splitlines()]
    assert [line["tokens_reasoning"] for line in lines] == [3000]
    assert lines[0]["tokens_out"] >= 3000  # reasoning is billed as output


def test_a_cap_below_the_reasoning_gives_an_empty_reply_recorded_at_the_limit(
    server: LoopbackServer, tmp_path: Path
) -> None:
    models = roster(server, {"name": "r", "model": "openai/thinker", "sampling": {"reasoning_tokens": 100}})
    completion = ask(models, "r", tmp_path)
    assert completion.text == "" and completion.empty_at_token_limit
    assert sent(server)[-1]["max_completion_tokens"] == 110
    calls = read_table(tmp_path / "calls.parquet", CallsSchema).filter(pl.col("attempt") >= 1)
    answered = calls.filter(pl.col("finish_reason").is_not_null()).row(0, named=True)
    assert (answered["finish_reason"], answered["error_kind"]) == ("length", "empty")


def test_litellm_model_map_recognises_a_reasoning_model_and_the_flag_overrides_it(
    server: LoopbackServer, tmp_path: Path
) -> None:
    models = roster(
        server,
        {"name": "o3", "model": "openai/o3"},
        {"name": "o3-plain", "model": "openai/o3", "sampling": {"reasoning": False, "temperature": 1.0}},
        {"name": "chat", "model": "openai/gpt-4o"},
    )
    assert is_reasoning_model(models.entry("o3"))
    assert not is_reasoning_model(models.entry("o3-plain"))
    assert not is_reasoning_model(models.entry("chat"))
    assert "reasoning model" in describe(models.entry("o3"))
    completion = ask(models, "o3", tmp_path)
    assert completion.text and sent(server)[-1]["max_completion_tokens"] == 10 + 8192


def test_chat_model_gets_the_game_budget_and_a_user_cap_still_holds(server: LoopbackServer, tmp_path: Path) -> None:
    models = roster(
        server,
        {"name": "chat", "model": "openai/chat"},
        {"name": "capped", "model": "openai/chat", "sampling": {"max_tokens": 3}},
        {
            "name": "per-move",
            "model": "openai/chat",
            "sampling": {"max_tokens": 3, "move_max_tokens": {"elimination.vote": 40, "statement": 7}},
        },
    )
    ask(models, "chat", tmp_path, max_tokens=None)  # the game sets no cap
    ask(models, "chat", tmp_path)
    capped = ask(models, "capped", tmp_path)
    ask(models, "per-move", tmp_path)
    ask(models, "per-move", tmp_path, kind="statement", seed=2)
    assert [b["max_tokens"] for b in sent(server)] == [DEFAULT_VISIBLE_TOKENS, 10, 3, 40, 7]
    assert capped.text == "P3: they hide" and capped.finish_reason == "length"


def test_refused_logprobs_come_back_without_logprobs(server: LoopbackServer, tmp_path: Path) -> None:
    models = roster(
        server, {"name": "r", "model": "openai/thinker", "sampling": {"reasoning": True, "temperature": 1.0}}
    )
    completion = ask(models, "r", tmp_path, max_tokens=1, top_logprobs=5, kind="answer", benchmark="skate")
    assert completion.logprobs is None
    assert set(completion.dropped_params) == {"logprobs", "top_logprobs"}


def test_anthropic_thinking_budget_is_its_own_parameter() -> None:
    models = ModelsParams.model_validate(
        {
            "roster": [
                {
                    "name": "claude",
                    "model": "anthropic/claude-opus-4-1-20250805",
                    "sampling": {"reasoning_effort": "high"},
                },
                {"name": "claude-plain", "model": "anthropic/claude-opus-4-1-20250805"},
            ]
        }
    )
    _, params = completion_request(models.entry("claude"), ASK, max_tokens=200, kind="statement")
    assert params["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert params["max_tokens"] == 200 + 16384 and "reasoning_effort" not in params
    _, plain = completion_request(models.entry("claude-plain"), ASK, max_tokens=200, kind="statement")
    assert "thinking" not in plain and plain["max_tokens"] == 200  # Claude thinks only when asked


def test_a_budgeted_run_whose_cost_is_unknown_refuses_to_start(tmp_path: Path) -> None:
    settings: dict[str, Any] = {
        "roster": [{"name": "mystery", "model": "openai/not-in-any-price-map"}],
        "gateway": {"budget_usd": 5.0, "cache_dir": str(tmp_path / "cache")},
    }
    models = ModelsParams.model_validate(settings)
    job = PlannedJob("game_play", "Missing output files", {"game_id": "g1"})
    estimate = CallEstimate("mystery", "game", 10, 0, 1000, 500)
    plan = make_plan(["all"], [("game", job, estimate)], models, root=tmp_path)
    assert plan.cost_usd is None
    assert plan.exceeds_budget()
    message = what_to_cut(plan)
    assert "cannot price game/mystery" in message and "gateway.prices" in message
    settings["gateway"]["prices"] = {
        "openai/not-in-any-price-map": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}
    }
    priced = ModelsParams.model_validate(settings)
    assert not make_plan(["all"], [("game", job, estimate)], priced, root=tmp_path).exceeds_budget()


def test_the_model_maps_answer_is_kept_so_a_later_process_needs_no_litellm(tmp_path: Path) -> None:
    """Snakefile parses and SKATE jobs ask whether each API model reasons: the first asks litellm's
    model map, later processes read the answer kept for this litellm version."""
    probe = (
        "import sys\n"
        "from pipeline.core.models.reply_budgets import _map_says_reasoning\n"
        "print(_map_says_reasoning('openai/o3'), _map_says_reasoning('openai/gpt-4o'), 'litellm' in sys.modules)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["True", "False", "True"]  # asked litellm
    assert second.stdout.split() == ["True", "False", "False"]  # the same answers, litellm never imported
    (memo,) = (tmp_path / "tournament-pipeline" / "litellm-map").glob("reasoning-*.json")
    assert json.loads(memo.read_text()) == {"openai/o3": True, "openai/gpt-4o": False}
