"""SKATE's p(correct) estimators. Exact mode scores bots and API models (through a loopback
OpenAI-compatible server, reached by litellm as `openai/...` with api_base) from log-probabilities
and reports the mass outside A-D; an answerer that cannot give them is sampled instead (decided
by the schedule from its roster entry, or per question when none come back)."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from aiohttp import web

from pipeline.core.artifacts.schemas import read_table
from pipeline.skate.config import SkateParams
from pipeline.skate.mcq import Question, option_set
from pipeline.skate.play import play_game
from pipeline.skate.schedule import build_schedule
from pipeline.skate.schemas import PCorrectSchema, SamplesSchema
from tests.conftest import models_params

BOTS = [
    {"name": "setter-bot", "bot": "setter"},
    {"name": "oracle-bot", "bot": "oracle"},
    {"name": "good-bot", "bot": "noisy", "bot_options": {"accuracy": 0.6}},
]
#: what the fake API puts on the first answer token: 10% of the mass is not a letter
API_DISTRIBUTION = {"A": 0.5, "B": 0.2, "C": 0.1, "D": 0.1, "The": 0.1}


def params(**overrides: Any) -> SkateParams:
    data: dict[str, Any] = {
        "players": ["setter-bot"],
        "answer_only": ["oracle-bot", "good-bot"],
        "rounds": 1,
        "attempts": 1,
        "strategy": "no_info",
        "answering": {"mode": "exact", "exact_option_sets": 4},
        "ranking": {"passes": 2, "bootstrap_resamples": 0},
        "sandbox": {"cpu_s": 1, "wall_s": 3},
    }
    for key, value in overrides.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and key in data else value
    return SkateParams.model_validate(data)


class FakeOpenAI:
    """An OpenAI-compatible chat endpoint on loopback, with or without logprobs."""

    def __init__(self, with_logprobs: bool) -> None:
        self.with_logprobs = with_logprobs
        self.requests: list[dict[str, Any]] = []

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A"}}
        if self.with_logprobs and body.get("logprobs"):
            top = [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in API_DISTRIBUTION.items()]
            choice["logprobs"] = {
                "content": [{"token": "A", "logprob": math.log(0.5), "bytes": None, "top_logprobs": top}]
            }
        return web.json_response(
            {
                "id": "cmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [choice],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
            }
        )


def serve(app_handler: FakeOpenAI) -> Iterator[str]:
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", app_handler.chat)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.run_until_complete(runner.cleanup())
        loop.close()


@pytest.fixture
def api_with_logprobs(monkeypatch) -> Iterator[tuple[str, FakeOpenAI]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    handler = FakeOpenAI(with_logprobs=True)
    for base in serve(handler):
        yield base, handler


@pytest.fixture
def api_without_logprobs(monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    yield from serve(FakeOpenAI(with_logprobs=False))


def api_entry(base: str) -> dict[str, Any]:
    return {
        "name": "api-model",
        "model": "openai/fake-gpt",
        "extra": {"api_base": base},
        "sampling": {"temperature": 1.0, "max_tokens": 16},
    }


def expected_api_p(question_id: str, sets: int, count_wrong: bool) -> float:
    letters = {k: v for k, v in API_DISTRIBUTION.items() if len(k) == 1}
    total = sum(letters.values())
    stub = Question(question_id, 1, "setter-bot", "", "", "x", tuple(str(i) for i in range(9)))
    values = []
    for i in range(sets):
        _, correct = option_set(stub, i, 0)
        values.append(letters[correct] / total * (total if count_wrong else 1.0))
    return sum(values) / len(values)


def test_exact_mode_scores_bots_and_an_api_model_with_one_estimator(tmp_path: Path, api_with_logprobs) -> None:
    base, server = api_with_logprobs
    models = models_params([*BOTS, api_entry(base)], gateway={"cache_dir": str(tmp_path / "cache")})
    play_game(params(answer_only=["oracle-bot", "good-bot", "api-model"]), models, tmp_path / "skate", report=False)
    pcorrect = read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
    assert set(pcorrect["mode"]) == {"exact"} and pcorrect.height == 4
    by = {r["answerer"]: r for r in pcorrect.iter_rows(named=True)}
    # the bots' exact p(correct) is their accuracy, with nothing outside the letters
    assert by["oracle-bot"]["p_correct"] == 1.0 and by["good-bot"]["p_correct"] == pytest.approx(0.6)
    assert by["setter-bot"]["p_correct"] == pytest.approx(1.0) and by["good-bot"]["outside_mass"] == pytest.approx(0.0)
    # the API model: its letters' share per option set, and the 10% on "The" reported, not hidden
    api = by["api-model"]
    assert api["p_correct"] == pytest.approx(expected_api_p(api["question_id"], 4, count_wrong=False))
    assert api["outside_mass"] == pytest.approx(0.1) and api["samples"] == 4
    assert len(server.requests) == 4  # one call per option set
    assert all(r.get("logprobs") is True and r.get("top_logprobs") == 20 for r in server.requests)
    samples = read_table(tmp_path / "skate/samples.parquet", SamplesSchema)
    assert set(samples["mode"]) == {"exact"} and samples.height == 16


def test_count_wrong_charges_the_mass_outside_the_letters(tmp_path: Path, api_with_logprobs) -> None:
    base, _ = api_with_logprobs
    models = models_params([*BOTS, api_entry(base)], gateway={"cache_dir": str(tmp_path / "cache")})
    chosen = params(answer_only=["api-model"], answering={"outside_letters": "count_wrong"})
    play_game(chosen, models, tmp_path / "skate", report=False)
    row = (
        read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
        .filter(pl.col("answerer") == "api-model")
        .row(0, named=True)
    )
    assert row["p_correct"] == pytest.approx(expected_api_p(row["question_id"], 4, count_wrong=True))
    assert row["p_correct"] == pytest.approx(0.9 * expected_api_p(row["question_id"], 4, count_wrong=False))


def test_an_api_model_without_logprobs_is_sampled_beside_the_exact_ones(tmp_path: Path, api_without_logprobs) -> None:
    # litellm says openai gives top_logprobs, so the schedule asks exactly; the replies carry none:
    # each question of that answerer is sampled instead, the others stay exact, nothing stops
    models = models_params([*BOTS, api_entry(api_without_logprobs)], gateway={"cache_dir": str(tmp_path / "cache")})
    chosen = params(answer_only=["oracle-bot", "api-model"], answering={"max_samples": 12})
    assert build_schedule(chosen, models).answers[(1, "api-model")].mode == "exact"
    play_game(chosen, models, tmp_path / "skate", report=False)
    pcorrect = read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
    modes = dict(pcorrect.select("answerer", "mode").iter_rows())
    assert modes == {"setter-bot": "exact", "oracle-bot": "exact", "api-model": "sampled"}
    api = pcorrect.filter(pl.col("answerer") == "api-model").row(0, named=True)
    assert api["outside_mass"] is None and 10 <= api["samples"] <= 12
    samples = read_table(tmp_path / "skate/samples.parquet", SamplesSchema).filter(pl.col("answerer") == "api-model")
    assert set(samples["mode"]) == {"sampled"} and samples["letter_mass"].null_count() == samples.height


def test_the_schedule_samples_answerers_that_cannot_give_logprobs(tmp_path: Path) -> None:
    # litellm lists anthropic without top_logprobs; a generic bot only picks letters; a model that
    # says it reasons is behind an API that refuses logprobs: all three sampled before any call
    claude = {"name": "claude", "model": "anthropic/claude-3-5-sonnet-20240620"}
    thinker = {"name": "thinker", "model": "openai/some-model", "sampling": {"reasoning": True}}
    models = models_params([*BOTS, claude, thinker, {"name": "random-bot", "bot": "random"}])
    chosen = params(answer_only=["oracle-bot", "claude", "thinker", "random-bot"])
    jobs = {name: job for (_, name), job in build_schedule(chosen, models).answers.items()}
    assert {name: job.mode for name, job in jobs.items()} == {
        "setter-bot": "exact",
        "oracle-bot": "exact",
        "claude": "sampled",
        "thinker": "sampled",
        "random-bot": "sampled",
    }
    assert "provider 'anthropic'" in (jobs["claude"].why_sampled or "")
    assert "reasoning model" in (jobs["thinker"].why_sampled or "")
    assert "generic 'random' bot" in (jobs["random-bot"].why_sampled or "")
    # the random bot's game runs: its answers are drawn, the skate bots' read exactly
    models = models_params([*BOTS, {"name": "random-bot", "bot": "random"}], gateway={"cache_dir": str(tmp_path / "c")})
    play_game(
        params(answer_only=["oracle-bot", "random-bot"], answering={"max_samples": 20}),
        models,
        tmp_path / "skate",
        report=False,
    )
    pcorrect = read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
    assert dict(pcorrect.select("answerer", "mode").iter_rows()) == {
        "setter-bot": "exact",
        "oracle-bot": "exact",
        "random-bot": "sampled",
    }
    # a sampled game never asks for log-probabilities, whoever answers
    sampled = build_schedule(params(answering={"mode": "sampled"}), models)
    assert {job.mode for job in sampled.answers.values()} == {"sampled"}
    assert all(job.why_sampled is None for job in sampled.answers.values())


def test_the_same_game_sampled_gives_sampled_rows_only(tmp_path: Path) -> None:
    models = models_params([*BOTS, {"name": "random-bot", "bot": "random"}], gateway={"cache_dir": str(tmp_path / "c")})
    chosen = params(answer_only=["oracle-bot", "random-bot"], answering={"mode": "sampled", "max_samples": 20})
    play_game(chosen, models, tmp_path / "skate", report=False)
    pcorrect = read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
    assert set(pcorrect["mode"]) == {"sampled"} and pcorrect["outside_mass"].null_count() == pcorrect.height


@pytest.mark.parametrize(
    ("answering", "message"),
    [
        ({"mode": "auto"}, "one estimator per model"),
        ({"mode": "adaptive"}, "log-probabilities where a model gives them"),
        ({"exact_players": ["x"]}, "exact_players is gone"),
    ],
)
def test_mixed_estimator_params_are_refused_with_the_fix(answering: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SkateParams.model_validate({"players": ["a"], "answering": answering})


def test_default_estimator_is_the_papers_sampling() -> None:
    assert SkateParams.model_validate({"players": ["a"]}).answering.mode == "sampled"
    assert (
        json.loads(SkateParams.model_validate({"players": ["a"]}).model_dump_json())["answering"]["outside_letters"]
        == "renormalise"
    )
