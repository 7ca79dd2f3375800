"""SKATE with models that give no log-probabilities, at the demo's params (exact mode), against the
loopback server (pipeline/testing/loopback.py) acting as a reasoning API: it refuses logprobs and a
temperature other than 1 and spends hidden reasoning tokens. A provider's refusal never fails the
run: a model known to reason is sampled from the start (the schedule's choice), one whose refusal
comes only at run time is sampled per question, and every other answerer stays exact."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.artifacts.schemas import CallsSchema, read_table
from pipeline.skate.config import SkateParams, load_skate
from pipeline.skate.parsing import LETTERS
from pipeline.skate.play import play_game
from pipeline.skate.schedule import build_schedule
from pipeline.skate.schemas import PCorrectSchema, SamplesSchema
from pipeline.skate.templates import run_trusted
from pipeline.testing.loopback import LoopbackServer
from tests.conftest import models_params

REPO = Path(__file__).resolve().parents[2]
KEY_ENV = "SKATE_LOOPBACK_KEY"
BOTS = [
    {"name": "setter-bot", "bot": "setter"},
    {"name": "oracle-bot", "bot": "oracle"},
    {"name": "noisy-bot", "bot": "noisy", "bot_options": {"accuracy": 0.6}},
]


def solve(messages: Sequence[dict[str, Any]]) -> str:
    """A model that answers SKATE's questions right: it runs the (trusted, template) program of the
    last question and names the option showing its output."""
    question = str(messages[-1]["content"])
    program = re.search(r"```python\n(.*?)\n```", question, re.S)
    output = run_trusted(program.group(1)) if program else ""
    for letter in LETTERS:
        option = re.search(rf"^{letter}\) (.*)$", question, re.M)
        if option and option.group(1) == output:
            return letter
    return "A"


def demo_params(**overrides: Any) -> SkateParams:
    """params/skate.yaml (exact mode, its option sets and budgets), with a one-round roster."""
    data = load_skate(REPO / "params/skate.yaml").model_dump(mode="json")
    data.update(
        players=["setter-bot"],
        answer_only=["oracle-bot", "noisy-bot"],
        rounds=1,
        attempts=1,
        ranking={**data["ranking"], "passes": 2, "bootstrap_resamples": 0},
        sandbox={**data["sandbox"], "cpu_s": 1, "wall_s": 3},
    )
    data.update(overrides)
    return SkateParams.model_validate(data)


def loopback_entry(name: str, url: str, **sampling: Any) -> dict[str, Any]:
    return {
        "name": name,
        "model": f"openai/{name}",
        "extra": {"api_base": url},
        "api_key_env": KEY_ENV,
        "sampling": {"temperature": 0.7, **sampling},
    }


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-loopback")


def test_a_reasoning_answerer_is_sampled_in_an_exact_game_and_the_run_finishes(tmp_path: Path) -> None:
    with LoopbackServer(reasoning={"r1": 500}, reply=solve) as server:
        models = models_params(
            [*BOTS, loopback_entry("r1", server.url, reasoning=True)],
            gateway={"cache_dir": str(tmp_path / "cache"), "backoff_base_s": 0.0},
        )
        params = demo_params(answer_only=["oracle-bot", "noisy-bot", "r1"])
        assert params.answering.mode == "exact"
        job = build_schedule(params, models).answers[(1, "r1")]
        assert job.mode == "sampled" and "reasoning model" in (job.why_sampled or "")
        metrics = play_game(params, models, tmp_path / "skate")
        requests = list(server.requests)

    pcorrect = read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
    assert dict(pcorrect.select("answerer", "mode").iter_rows()) == {
        "setter-bot": "exact",
        "oracle-bot": "exact",
        "noisy-bot": "exact",
        "r1": "sampled",
    }
    r1 = pcorrect.filter(pl.col("answerer") == "r1").row(0, named=True)
    # its hidden reasoning fits its allowance, so every sampled letter is there (and right)
    assert r1["p_correct"] == 1.0 and r1["unparsed_share"] == 0.0 and r1["samples"] >= params.answering.min_samples
    samples = read_table(tmp_path / "skate/samples.parquet", SamplesSchema)
    assert set(samples.filter(pl.col("answerer") == "r1")["mode"]) == {"sampled"}
    # the schedule decided before the first call: logprobs were never asked of it; its budget is
    # the letter's 8 tokens plus the reasoning allowance, in max_completion_tokens
    assert requests and not any(r.get("logprobs") or r.get("top_logprobs") for r in requests)
    assert {r.get("max_completion_tokens") for r in requests} == {params.answering.max_tokens + 8192}
    assert not any("max_tokens" in r for r in requests)
    # the refused temperature was dropped and the request sent again: in the calls table, not fatal
    calls = read_table(tmp_path / "skate/calls.parquet", CallsSchema).filter(pl.col("roster_name") == "r1")
    assert calls.filter(pl.col("error_kind") == "bad_request").height == 1
    answered = calls.filter(pl.col("error_kind").is_null())
    assert answered.height == r1["samples"] and set(answered["dropped_params"]) == {"temperature"}
    assert set(answered["tokens_reasoning"]) == {500}
    # the metrics say who answered which way
    assert metrics["r1"]["exact_mode"] == 0 and metrics["r1"]["exact_share"] == 0.0
    assert all(metrics[m]["exact_mode"] == 1 and metrics[m]["exact_share"] == 1.0 for m in ("oracle-bot", "noisy-bot"))


def test_a_logprob_refusal_at_run_time_samples_the_question_instead(tmp_path: Path) -> None:
    # litellm cannot tell this model reasons: the schedule asks it exactly; its API refuses logprobs
    with LoopbackServer(reasoning={"r2": 0}, strict_reasoning_params=False, reply=solve) as server:
        models = models_params(
            [*BOTS, loopback_entry("r2", server.url)],
            gateway={"cache_dir": str(tmp_path / "cache"), "backoff_base_s": 0.0},
        )
        params = demo_params(answer_only=["oracle-bot", "r2"])
        assert build_schedule(params, models).answers[(1, "r2")].mode == "exact"
        play_game(params, models, tmp_path / "skate", report=False)
        sent = len(server.requests)
        # a rerun replays from the response cache: the same fallback, the same p(correct), nothing sent
        play_game(params, models, tmp_path / "rerun", report=False)
        assert len(server.requests) == sent
        first = dict(server.requests[0])

    assert first.get("logprobs") is True and first.get("max_tokens") == 1  # asked exactly first
    pcorrect = read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
    assert dict(pcorrect.select("answerer", "mode").iter_rows()) == {
        "setter-bot": "exact",
        "oracle-bot": "exact",
        "r2": "sampled",
    }
    r2 = pcorrect.filter(pl.col("answerer") == "r2").row(0, named=True)
    assert r2["p_correct"] == 1.0 and r2["outside_mass"] is None
    samples = read_table(tmp_path / "skate/samples.parquet", SamplesSchema).filter(pl.col("answerer") == "r2")
    assert set(samples["mode"]) == {"sampled"} and samples.height == r2["samples"]
    calls = read_table(tmp_path / "skate/calls.parquet", CallsSchema).filter(pl.col("roster_name") == "r2")
    # the refusal and the exact reply that came back without logprobs are in the calls table
    assert calls.filter(pl.col("error_kind") == "bad_request").height == 1
    assert "logprobs,top_logprobs" in set(calls["dropped_params"].drop_nulls())
    assert read_table(tmp_path / "rerun/pcorrect.parquet", PCorrectSchema).equals(pcorrect)
