"""Reasoning models: an empty reply cut by the token limit is its own recorded outcome, reported
per model, and roster entries set reasoning effort and per-move budgets that fix it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest

from pipeline.core.roster import Sampling
from pipeline.elimination.config import RatingSettings
from pipeline.elimination.importer import run_import
from tests.test_elimination_support import of_type, play, seat


class ThinkingProvider(litellm.CustomLLM):
    """A reasoning model at litellm's boundary: under `needs` tokens its hidden reasoning eats the
    whole budget and the reply is empty with finish_reason "length"; with enough it answers."""

    def __init__(self, needs: int) -> None:
        super().__init__()
        self.needs = needs
        self.budgets: list[int] = []
        self.efforts: list[Any] = []

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        params = kwargs.get("optional_params") or {}
        budget = int(params.get("max_tokens") or 0)
        self.budgets.append(budget)
        self.efforts.append(params.get("reasoning_effort"))
        task = messages[-1]["content"]
        if budget < self.needs:
            text, finish = "", "length"
        elif "Rank these seats" in task:
            text, finish = "P2 P3 P4 P5 P6 P7 P8 P1", "stop"
        elif "`P<n>: <reason>`" in task:
            choices = task.rsplit("one of ", 1)[-1] if "one of " in task else task
            label = next(w.strip(".,:`") for w in choices.split() if w.strip(".,:`").startswith("P")
                         and w.strip(".,:`")[1:].isdigit())
            text, finish = f"{label}: thought it through", "stop"
        else:
            text, finish = "A considered statement.", "stop"
        return litellm.ModelResponse(
            model=f"thinker/{model}",
            choices=[{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            usage={"prompt_tokens": 7, "completion_tokens": budget, "total_tokens": budget + 7},
        )

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        return self.completion(*args, **kwargs)


@pytest.fixture
def thinker() -> Iterator[ThinkingProvider]:
    provider = ThinkingProvider(needs=1000)
    saved = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [*saved, {"provider": "thinker", "custom_handler": provider}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    yield provider
    litellm.custom_provider_map = saved
    custom_llm_setup()


SEATS = ("reasoner",) + ("heuristic-bot",) * 7


def roster(sampling: dict[str, Any]) -> list[dict[str, Any]]:
    # litellm passes reasoning_effort on to the providers it knows (OpenAI, Anthropic, DeepSeek, ...);
    # a custom test provider has to allow it explicitly
    return [{"name": "reasoner", "model": "thinker/r1", "sampling": sampling,
             "extra": {"allowed_openai_params": ["reasoning_effort"]}},
            {"name": "heuristic-bot", "bot": "heuristic"}]


def test_an_empty_reply_at_the_token_limit_is_recorded_and_reported(tmp_path: Path, thinker) -> None:
    records = play(SEATS, roster({"max_tokens": 4000}), "think01", tmp_path)
    assert max(thinker.budgets) < 1000  # the game's budgets went straight to the provider
    statement = next(r for r in of_type(records, "conversation", 1) if seat(r["player_id"]) == "P1")
    assert statement["message"] == "" and statement["extra"]["empty_at_token_limit"] is True
    vote = next(v for v in of_type(records, "vote", 1) if seat(v["voter_id"]) == "P1")
    assert vote["target_id"] == "(invalid/skipped)" and vote["extra"]["resolution"] == "token_limit"
    assert {a["problem"] for a in vote["extra"]["invalid_attempts"]} == {
        "the reply was cut by the token limit before any visible text"}
    log = tmp_path / "logs" / "game_1_20250101_000000.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = run_import([log.parent], tmp_path / "out", RatingSettings(passes=2, bootstrap_resamples=0), plots=False)
    stats = {r["model"]: r for r in result.stats.iter_rows(named=True)}
    assert stats["reasoner"]["empty_at_token_limit"] >= 3 and stats["heuristic-bot"]["empty_at_token_limit"] == 0
    assert result.report["empty_at_token_limit"]["reasoner"] == stats["reasoner"]["empty_at_token_limit"]


def test_per_move_budgets_and_reasoning_effort_come_from_the_roster(tmp_path: Path, thinker) -> None:
    budgets = {k: 2000 for k in ("statement", "preference", "private", "vote", "revote", "jury", "tiebreak", "plea")}
    records = play(SEATS, roster({"max_tokens": 256, "reasoning_effort": "high", "move_max_tokens": budgets}),
                   "think02", tmp_path)
    assert set(thinker.budgets) == {2000} and "high" in thinker.efforts
    statement = next(r for r in of_type(records, "conversation", 1) if seat(r["player_id"]) == "P1")
    assert statement["message"] == "A considered statement." and "extra" not in statement
    vote = next(v for v in of_type(records, "vote", 1) if seat(v["voter_id"]) == "P1")
    assert vote["target_id"].startswith("Player")
    with pytest.raises(ValueError, match="move_max_tokens"):
        Sampling(move_max_tokens={"vote": 0})
