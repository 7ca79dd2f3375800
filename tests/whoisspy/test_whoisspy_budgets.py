"""Who is Spy's reply budgets belong to the model (pipeline.core.models.reply_budgets): the paper sets no token
cap, so a reasoning model declared by its effort alone gets enough, and a reply the token limit
empties (a user's reasoning cap below the provider's need) is recorded and counted per model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest

from pipeline.core.models.gateway import Gateway
from pipeline.core.models.reply_budgets import DEFAULT_REASONING_TOKENS, DEFAULT_VISIBLE_TOKENS
from pipeline.whoisspy.config import RatingSettings, ReplyParams, WhoIsSpyParams, load_whoisspy
from pipeline.whoisspy.engine import run_game
from pipeline.whoisspy.metrics import build_tables, leaderboard, metrics_json, rating_events, ratings, variants_table
from pipeline.whoisspy.schedule import make_spec
from pipeline.whoisspy.schemas import SeatsSchema
from tests.conftest import REPO, models_params

NEEDS = 5000  # hidden reasoning tokens the fake provider spends before a starved move's text


class ThinkingProvider(litellm.CustomLLM):
    """Reasoning models at litellm's boundary. `hard[model]` names the moves ("speech", "vote")
    on which the model reasons `NEEDS` tokens first: with a smaller max_tokens the reply is empty
    with finish_reason "length"; other moves are answered at once."""

    def __init__(self, hard: dict[str, set[str]]) -> None:
        super().__init__()
        self.hard = hard
        self.budgets: list[tuple[str, str, int]] = []

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        budget = int((kwargs.get("optional_params") or {}).get("max_tokens") or 0)
        user = messages[-1]["content"]
        kind = "speech" if "your turn" in user else "vote"
        name = model.split("/")[-1]
        self.budgets.append((name, kind, budget))
        if kind in self.hard.get(name, set()) and budget <= NEEDS:
            text, finish = "", "length"
        elif kind == "speech":
            round_no = user.split("Round ", 1)[1].split(",", 1)[0]
            text, finish = f"a clue from {name} in round {round_no}", "stop"
        else:
            text, finish = "abstain", "stop"
        return litellm.ModelResponse(
            model=model,
            choices=[{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            usage={"prompt_tokens": 9, "completion_tokens": min(budget, NEEDS), "total_tokens": 9 + min(budget, NEEDS)},
        )

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        return self.completion(*args, **kwargs)


@pytest.fixture
def thinker() -> Iterator[ThinkingProvider]:
    provider = ThinkingProvider({"mute": {"speech", "vote"}, "voter": {"vote"}})
    saved = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [*saved, {"provider": "wthinker", "custom_handler": provider}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    yield provider
    litellm.custom_provider_map = saved
    custom_llm_setup()


SEATS = ["mute", "voter", "heuristic-bot", "heuristic-bot", "random-bot", "random-bot"]


def roster(sampling: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": n, "model": f"wthinker/{n}", "sampling": sampling} for n in ("mute", "voter")] + [
        {"name": "heuristic-bot", "bot": "heuristic"},
        {"name": "random-bot", "bot": "random"},
    ]


def play(tmp_path: Path, sampling: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    models = models_params(roster(sampling))
    spec = make_spec(
        models, variant="baseline", seats=SEATS, spy_seat=2, civilian_word="tea", spy_word="coffee", starter=0
    )
    return [
        run_game(spec, models, Gateway(models, job=f"whoisspy/{spec.game_id}", cache_dir=tmp_path / "cache"))
    ], models


def test_the_game_sets_no_token_cap_and_the_demo_params_set_none() -> None:
    assert not WhoIsSpyParams(players=["a"], fill=["b"]).replies.is_set()
    assert not load_whoisspy(REPO / "params/whoisspy.yaml").replies.is_set()  # the demo's caps are gemma's own
    assert ReplyParams(vote_max_tokens=8).is_set()


def test_a_reasoning_model_declared_by_its_effort_alone_is_never_starved(tmp_path: Path, thinker) -> None:
    (record,), _ = play(tmp_path, {"reasoning_effort": "low"})
    assert {b for _, _, b in thinker.budgets} == {DEFAULT_VISIBLE_TOKENS + DEFAULT_REASONING_TOKENS["low"]}
    assert not any(e.get("empty_at_token_limit") for e in record["events"])
    assert not any("no_answer" in p["fouls"] for p in record["players"] if p["model"] in ("mute", "voter"))


def test_replies_empty_at_the_token_limit_are_recorded_and_counted_per_model(tmp_path: Path, thinker) -> None:
    records, _ = play(tmp_path, {"reasoning_effort": "low", "reasoning_tokens": 100})
    (record,) = records
    assert {b for _, _, b in thinker.budgets} == {DEFAULT_VISIBLE_TOKENS + 100}
    speeches = [e for e in record["events"] if e["type"] == "speech" and e["seat"] == "P1"]
    # an empty description is still no answer (a foul), and its event says the token limit made it
    assert speeches[0]["fouls"] == ["no_answer"] and speeches[0]["empty_at_token_limit"] is True
    votes = [e for e in record["events"] if e["type"] == "vote" and e["voter"] == "P2"]
    assert votes and all(v["target"] is None and v["empty_at_token_limit"] for v in votes)
    assert not any(
        e.get("empty_at_token_limit") for e in record["events"] if e.get("seat", e.get("voter")) not in ("P1", "P2")
    )

    tables = build_tables(records)
    seats = SeatsSchema.validate(tables["seats"])
    counts = dict(zip(seats["model"].to_list(), seats["empty_at_token_limit"].to_list()))
    assert counts["mute"] == 1 and counts["voter"] == len(votes)
    events = rating_events(tables["games"], seats, "baseline")
    table, intervals = ratings(events, RatingSettings(passes=2, bootstrap_resamples=0), seed=0)
    board = leaderboard(seats, "baseline", table, intervals)
    metrics = metrics_json(board, variants_table(seats), "baseline", seats).to_json()
    assert metrics["mute"]["empty_at_token_limit"] == 1
    assert metrics["voter"]["empty_at_token_limit"] == len(votes)
    assert metrics["heuristic-bot"]["empty_at_token_limit"] == metrics["random-bot"]["empty_at_token_limit"] == 0
