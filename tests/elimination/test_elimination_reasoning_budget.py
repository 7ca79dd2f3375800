"""Reasoning models in the Elimination Game: budgets belong to the model (pipeline.core.models.reply_budgets).

The game sets no reply cap (the original states word limits only), so a move's visible budget is
the roster entry's, and a reasoning model gets its reasoning allowance on top. A model declared
with nothing but `reasoning_effort` is never starved; a user's own reasoning cap below what the
provider needs still gives an empty reply at the token limit, which is its own recorded outcome,
reported per model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest

from pipeline.core.models.reply_budgets import DEFAULT_REASONING_TOKENS, DEFAULT_VISIBLE_TOKENS
from pipeline.core.models.roster import Sampling
from pipeline.elimination.config import EliminationParams, RatingSettings, ReplyTokens
from pipeline.elimination.importer import run_import
from tests.elimination.test_elimination_support import of_type, play, seat

#: hidden reasoning tokens the fake provider spends on every answer before any visible text
NEEDS = 5000


class ThinkingProvider(litellm.CustomLLM):
    """A reasoning model at litellm's boundary: it first spends `needs` hidden reasoning tokens
    inside the request's max_tokens; when they do not fit, the reply is empty with finish_reason
    "length" (as today's reasoning APIs answer); otherwise it answers."""

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
        if budget <= self.needs:
            text, finish, spent = "", "length", budget
        elif "Rank these seats" in task:
            text, finish, spent = "P2 P3 P4 P5 P6 P7 P8 P1", "stop", self.needs + 8
        elif "`P<n>: <reason>`" in task:
            choices = task.rsplit("one of ", 1)[-1] if "one of " in task else task
            label = next(
                w.strip(".,:`")
                for w in choices.split()
                if w.strip(".,:`").startswith("P") and w.strip(".,:`")[1:].isdigit()
            )
            text, finish, spent = f"{label}: thought it through", "stop", self.needs + 6
        else:
            text, finish, spent = "A considered statement.", "stop", self.needs + 4
        return litellm.ModelResponse(
            model=f"thinker/{model}",
            choices=[{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            usage={"prompt_tokens": 7, "completion_tokens": spent, "total_tokens": spent + 7},
        )

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        return self.completion(*args, **kwargs)


@pytest.fixture
def thinker() -> Iterator[ThinkingProvider]:
    provider = ThinkingProvider(needs=NEEDS)
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
    return [
        {
            "name": "reasoner",
            "model": "thinker/r1",
            "sampling": sampling,
            "extra": {"allowed_openai_params": ["reasoning_effort"]},
        },
        {"name": "heuristic-bot", "bot": "heuristic"},
    ]


def imported(records: list[dict[str, Any]], tmp_path: Path) -> tuple[dict[str, dict[str, Any]], Any]:
    """The records through the benchmark's own import: metrics.json per model, and the result."""
    log = tmp_path / "logs" / "game_1_20250101_000000.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    result = run_import([log.parent], out, RatingSettings(passes=2, bootstrap_resamples=0), plots=False)
    return json.loads((out / "metrics.json").read_text()), result


def test_the_game_sets_no_reply_cap_by_default() -> None:
    params = EliminationParams()
    assert params.reply_tokens == ReplyTokens() and not params.reply_tokens.is_set()
    assert all(v is None for v in params.reply_tokens.model_dump().values())
    assert ReplyTokens(vote=80).is_set()  # an explicit integer caps that move for every model
    with pytest.raises(ValueError):
        ReplyTokens(vote=0)


def test_a_reasoning_model_declared_by_its_effort_alone_is_never_starved(tmp_path: Path, thinker) -> None:
    records = play(SEATS, roster({"reasoning_effort": "low"}), "think01", tmp_path)
    # every move: the visible default (the game sets no cap) plus the allowance for effort low
    assert set(thinker.budgets) == {DEFAULT_VISIBLE_TOKENS + DEFAULT_REASONING_TOKENS["low"]}
    assert min(thinker.budgets) > NEEDS and set(thinker.efforts) == {"low"}
    statement = next(r for r in of_type(records, "conversation", 1) if seat(r["player_id"]) == "P1")
    assert statement["message"] == "A considered statement." and "extra" not in statement
    vote = next(v for v in of_type(records, "vote", 1) if seat(v["voter_id"]) == "P1")
    assert vote["target_id"].startswith("Player") and "invalid_attempts" not in vote.get("extra", {})
    metrics, result = imported(records, tmp_path)
    assert metrics["reasoner"]["empty_at_token_limit"] == 0
    assert result.report["empty_at_token_limit"] == {}


def test_a_reasoning_cap_below_the_providers_need_gives_empty_replies_recorded_and_counted(
    tmp_path: Path, thinker
) -> None:
    records = play(SEATS, roster({"reasoning_effort": "low", "reasoning_tokens": 100}), "think02", tmp_path)
    assert set(thinker.budgets) == {DEFAULT_VISIBLE_TOKENS + 100} and max(thinker.budgets) < NEEDS
    statement = next(r for r in of_type(records, "conversation", 1) if seat(r["player_id"]) == "P1")
    assert statement["message"] == "" and statement["extra"]["empty_at_token_limit"] is True
    vote = next(v for v in of_type(records, "vote", 1) if seat(v["voter_id"]) == "P1")
    assert vote["target_id"] == "(invalid/skipped)" and vote["extra"]["resolution"] == "token_limit"
    assert {a["problem"] for a in vote["extra"]["invalid_attempts"]} == {
        "the reply was cut by the token limit before any visible text"
    }
    metrics, result = imported(records, tmp_path)
    stats = {r["model"]: r for r in result.stats.iter_rows(named=True)}
    assert stats["reasoner"]["empty_at_token_limit"] >= 3 and stats["heuristic-bot"]["empty_at_token_limit"] == 0
    # the benchmark's metrics.json and import report carry the per-model count
    assert metrics["reasoner"]["empty_at_token_limit"] == stats["reasoner"]["empty_at_token_limit"]
    assert metrics["heuristic-bot"]["empty_at_token_limit"] == 0
    assert result.report["empty_at_token_limit"]["reasoner"] == stats["reasoner"]["empty_at_token_limit"]


def test_per_move_budgets_are_visible_tokens_with_the_reasoning_allowance_on_top(tmp_path: Path, thinker) -> None:
    own = {"elimination.statement": 300, "elimination.vote": 60, "private": 200}
    sampling = {"max_tokens": 256, "reasoning_effort": "high", "move_max_tokens": own}
    caps = ReplyTokens(statement=160, preference=40, private=140, vote=80)  # the game caps every model
    records = play(SEATS, roster(sampling), "think03", tmp_path, reply_tokens=caps)
    reasoning = DEFAULT_REASONING_TOKENS["high"]
    # the entry's own budget replaces the game's (statement, vote, private); else the game's, capped
    # by the entry's max_tokens (preference 40; tie-breaks and pleas 160, re-votes and jury 80)
    visible = {b - reasoning for b in thinker.budgets}
    assert {300, 60, 200, 40} <= visible <= {300, 60, 200, 40, 160, 80}
    assert "high" in thinker.efforts
    statement = next(r for r in of_type(records, "conversation", 1) if seat(r["player_id"]) == "P1")
    assert statement["message"] == "A considered statement."
    with pytest.raises(ValueError, match="move_max_tokens"):
        Sampling(move_max_tokens={"vote": 0})
