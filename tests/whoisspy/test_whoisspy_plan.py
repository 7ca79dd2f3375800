"""Who is Spy in the run plan: calls bounded by the rules, tokens from the game's own prompts, so an
API model is priced before its first game; then calibrated from the games it played."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline.core.models.pricing import price_per_token
from pipeline.core.models.reply_budgets import DEFAULT_REASONING_TOKENS
from pipeline.core.models.roster import load_models
from pipeline.core.run.estimates import PlanContext
from pipeline.core.run.plan import PlannedJob, TokenHistory, plan_table
from pipeline.core.run.registry import benchmark
from pipeline.whoisspy.config import ReplyParams, RulesParams
from pipeline.whoisspy.estimators import (
    REASONED_VOTE_WORDS,
    VOTE_TOKENS,
    planned_moves,
    reasoning_seat,
    round_shares,
)

ROSTER = [
    {"name": "gpt-4o", "model": "openai/gpt-4o"},  # priced by litellm's bundled map
    {"name": "gpt-4o-thinking", "model": "openai/gpt-4o", "sampling": {"reasoning_effort": "low"}},
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
]


def _context(root: Path, **params: Any) -> PlanContext:
    (root / "params").mkdir(parents=True, exist_ok=True)
    (root / "params/models.yaml").write_text(yaml.safe_dump({"roster": ROSTER}))
    (root / "params/whoisspy.yaml").write_text(
        yaml.safe_dump({"players": ["gpt-4o", "gpt-4o-thinking"], "fill": ["heuristic-bot", "random-bot"], **params})
    )
    return PlanContext(root, load_models(root / "params/models.yaml"))


def _plan(context: PlanContext) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    from pipeline.whoisspy.workflow import SKELETON

    # the estimators the core makes from the contract, as the plan finds them in the registry
    estimate = benchmark("whoisspy").load_estimators()["whoisspy_play"]
    _, scheduled = SKELETON.planned(context)
    games = [game.spec for game in scheduled.values()]
    estimates = []
    for game in games:
        job = PlannedJob("whoisspy_play", "new job", {"game_id": game.game_id})
        estimates += [("whoisspy", job, e) for e in estimate(job, context)]
    table = plan_table(estimates, context.models, TokenHistory.load(context.path("results")))
    return games, {r["model"]: r for r in table.iter_rows(named=True)}


def rounds_expected(games: list[Any], name: str) -> float:
    """The rounds `name`'s seats are expected to play (a seat or the spy voted out at random)."""
    return sum(
        sum(round_shares(RulesParams(), index == game.spy_seat))
        for game in games
        for index, seat in enumerate(game.seats)
        if seat == name
    )


def test_an_api_model_is_priced_before_its_first_game(tmp_path: Path) -> None:
    games, rows = _plan(_context(tmp_path))
    seats = sum(g.seats.count("gpt-4o") for g in games)
    assert rows["gpt-4o"]["calls"] == seats * 2 * 3  # at most 3 rounds x (description + vote)
    assert rows["gpt-4o"]["cost_usd"] > 0 and rows["gpt-4o"]["tokens_from"] == "prompt+cap"
    assert rows["gpt-4o"]["tokens_in"] > 0 and "descriptions at max_chars" in rows["gpt-4o"]["note"]
    # expected: descriptions about max_chars / 4 tokens, votes a few, far below the 4096 default, in
    # the rounds a seat is expected to play (2.1 of 3 for a civilian, 2.5 for the spy); the bound
    # counts every round and every reply at that cap
    rounds = rounds_expected(games, "gpt-4o")
    assert 2 * seats < rounds < 3 * seats
    assert rows["gpt-4o"]["expected_tokens_out"] == pytest.approx(rounds * (400 // 4 + VOTE_TOKENS), abs=1)
    assert rows["gpt-4o"]["tokens_out"] == seats * 2 * 3 * 4096
    assert rows["gpt-4o"]["expected_calls"] == round(2 * rounds)
    # a reasoning model's allowance is counted on every move
    assert rows["gpt-4o-thinking"]["expected_tokens_out"] == pytest.approx(
        rounds_expected(games, "gpt-4o-thinking") * (400 // 4 + VOTE_TOKENS + 2 * DEFAULT_REASONING_TOKENS["low"]),
        abs=1,
    )
    assert rows["random-bot"]["calls"] == 0 and rows["random-bot"]["cost_usd"] == 0


def test_prompts_come_from_the_game_and_the_reasoning_seat_writes_its_analysis(tmp_path: Path) -> None:
    moves = planned_moves(RulesParams(), ReplyParams())
    assert [len(moves[k]) for k in ("speech", "vote", "reasoned_vote")] == [3, 3, 3]
    speeches = [m.prompt_tokens for m in moves["speech"]]
    assert speeches == sorted(speeches) and speeches[-1] - speeches[0] > 6 * 400 // 4  # a round of descriptions
    assert all(r.prompt_tokens > v.prompt_tokens for r, v in zip(moves["reasoned_vote"], moves["vote"]))
    assert moves["reasoned_vote"][0].expected_visible > REASONED_VOTE_WORDS
    # a vote after a public analysis reads it: about REASONED_VOTE_WORDS more tokens of prompt
    assert all(
        h.prompt_tokens - v.prompt_tokens >= REASONED_VOTE_WORDS // 2 and h.kind == "vote"
        for h, v in zip(moves["heard_vote"], moves["vote"])
    )
    shorter = planned_moves(RulesParams(max_chars=100), ReplyParams(speech_max_tokens=10))
    assert shorter["speech"][0].prompt_tokens < moves["speech"][0].prompt_tokens
    assert shorter["speech"][0].game_tokens == 10 and moves["speech"][0].game_tokens is None

    context = _context(tmp_path, variants=["reasoning"], rank_variant="reasoning")
    games, rows = _plan(context)
    civilian = [g for g in games if g.focal_role == "civilian" and g.focal == "gpt-4o"]
    spy = [g for g in games if g.focal_role == "spy" and g.focal == "gpt-4o"]
    assert reasoning_seat(civilian[0]) == civilian[0].seats.index("gpt-4o") and reasoning_seat(spy[0]) is None
    # as a civilian its votes carry the analysis; as the spy it votes plainly
    analysis = rounds_expected(civilian, "gpt-4o") * (400 // 4 + moves["reasoned_vote"][0].expected_visible)
    plain = rounds_expected(spy, "gpt-4o") * (400 // 4 + VOTE_TOKENS)
    assert rows["gpt-4o"]["expected_tokens_out"] == pytest.approx(analysis + plain, abs=1)


def test_once_games_ran_calls_and_tokens_come_from_them(tmp_path: Path) -> None:
    context = _context(tmp_path)
    games, _ = _plan(context)
    jobs = [f"whoisspy/{g.game_id}" for g in games if "gpt-4o" in g.seats]
    calls = pl.DataFrame(
        {
            "job": [j for j in jobs for _ in range(4)],
            "roster_name": ["gpt-4o"] * 4 * len(jobs),
            "request_id": [f"r{i}" for i in range(4 * len(jobs))],
            "attempt": [1] * 4 * len(jobs),
            "tokens_in": [700] * 4 * len(jobs),
            "tokens_out": [30] * 4 * len(jobs),
            "cache_hit": [False] * 4 * len(jobs),
            "error_kind": pl.Series([None] * 4 * len(jobs), dtype=pl.Utf8),
        }
    )
    path = context.path("results/whoisspy/games/x.calls.parquet")
    path.parent.mkdir(parents=True)
    calls.write_parquet(path)
    _, rows = _plan(PlanContext(tmp_path, context.models))
    # 4 calls a game measured are expected, fewer than the bound of 6
    assert rows["gpt-4o"]["expected_calls"] == 4 * len(jobs) and rows["gpt-4o"]["calls"] == 6 * len(jobs)
    assert rows["gpt-4o"]["expected_tokens_in"] == 700 * 4 * len(jobs) and rows["gpt-4o"]["tokens_from"] == "measured"
    pin, pout = price_per_token(context.models.entry("gpt-4o"), context.models)
    assert rows["gpt-4o"]["expected_cost_usd"] == pytest.approx(4 * len(jobs) * (700 * pin + 30 * pout), abs=1e-6)
    assert rows["gpt-4o"]["cost_usd"] > rows["gpt-4o"]["expected_cost_usd"]
