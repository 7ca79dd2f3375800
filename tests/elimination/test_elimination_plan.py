"""The Elimination Game in the run plan: an API model is priced before its first game (calls and
tokens from the game's structure, replies as its roster entry spends them), then calibrated from
the calls of the games it played."""

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
from pipeline.core.run.plan import PROMPT_BOUND_FACTOR, PlannedJob, TokenHistory, plan_table
from pipeline.core.run.registry import benchmark
from pipeline.elimination.config import EliminationParams, WordLimits
from pipeline.elimination.estimators import planned_moves
from pipeline.elimination.schedule import schedule_from_files

ROSTER = [
    {"name": "gpt-4o", "model": "openai/gpt-4o"},  # priced by litellm's bundled map
    {"name": "gpt-4o-thinking", "model": "openai/gpt-4o", "sampling": {"reasoning": True}},
    {"name": "heuristic-bot", "bot": "heuristic"},
]
LINEUP = [
    "gpt-4o",
    "heuristic-bot",
    "gpt-4o-thinking",
    "heuristic-bot",
    "heuristic-bot",
    "heuristic-bot",
    "heuristic-bot",
    "heuristic-bot",
]


def _project(root: Path, **params: Any) -> PlanContext:
    (root / "params").mkdir(parents=True)
    (root / "params/models.yaml").write_text(yaml.safe_dump({"roster": ROSTER}))
    (root / "params/elimination.yaml").write_text(
        yaml.safe_dump({"schedule": {"lineups": [LINEUP], "rotations": 1, "max_seats_per_player": 6}, **params})
    )
    return PlanContext(root, load_models(root / "params/models.yaml"))


def _plan(context: PlanContext) -> tuple[dict[str, Any], dict[str, Any], str]:
    (game,) = schedule_from_files(context.path("params/elimination.yaml"), context.path("params/models.yaml"))
    job = PlannedJob("elimination_play", "new job", {"game_id": game.game_id})
    estimate = benchmark("elimination").load_estimators()["elimination_play"]  # made from the contract
    estimates = {e.model: e for e in estimate(job, context)}
    table = plan_table(
        [("elimination", job, e) for e in estimates.values()],
        context.models,
        TokenHistory.load(context.path("results")),
    )
    return estimates, {r["model"]: r for r in table.iter_rows(named=True)}, game.game_id


def test_an_api_model_is_priced_before_its_first_game(tmp_path: Path) -> None:
    estimates, rows, _ = _plan(_project(tmp_path))
    moves, _ = planned_moves(EliminationParams())
    shared = sum(m.calls for m in moves)  # the game's moves, each once, shared over its seats: expected
    # one seat's most: every round (each move once, votes and re-votes re-asked, a tie's both sides), then
    # the jury's vote re-asked or a plea: (1 + 1 + 3 + 2 + 1 + 2) a round for 6 rounds, and 1 + 2
    assert sum(m.calls if m.most is None else m.most for m in moves) == 6 * 10 + 3
    chat, thinking = estimates["gpt-4o"], estimates["gpt-4o-thinking"]
    assert chat.tokens_known and chat.calls == 63 and chat.expected[0] == pytest.approx(shared, abs=1)
    assert chat.prompt_tokens > 0 and chat.reply_tokens > 0 and "before its first game" in chat.note
    assert rows["gpt-4o"]["cost_usd"] > rows["gpt-4o"]["expected_cost_usd"] > 0
    assert rows["gpt-4o"]["tokens_from"] == "prompt+cap"
    pin, pout = price_per_token(
        load_models(tmp_path / "params/models.yaml").entry("gpt-4o"), load_models(tmp_path / "params/models.yaml")
    )
    bound = chat.prompt_tokens * PROMPT_BOUND_FACTOR * pin + chat.reply_tokens * pout
    assert rows["gpt-4o"]["cost_usd"] == pytest.approx(bound, abs=1e-6)
    # a reasoning model's whole allowance is counted on every move (hidden reasoning is billed)
    assert thinking.calls == chat.calls and thinking.prompt_tokens == chat.prompt_tokens
    assert thinking.reply_tokens - chat.reply_tokens == pytest.approx(
        thinking.calls * DEFAULT_REASONING_TOKENS[None], abs=2
    )
    assert rows["gpt-4o-thinking"]["tokens_reasoning"] == thinking.calls * DEFAULT_REASONING_TOKENS[None]
    assert rows["gpt-4o-thinking"]["cost_usd"] > rows["gpt-4o"]["cost_usd"]
    assert rows["heuristic-bot"]["calls"] == 0 and rows["heuristic-bot"]["cost_usd"] == 0


def test_the_plan_follows_the_rules_numbers(tmp_path: Path) -> None:
    moves, notes = planned_moves(EliminationParams())
    kinds = {m.kind for m in moves}
    assert kinds == {"statement", "preference", "private", "vote", "tiebreak", "revote", "plea", "jury"}
    assert {m.kind for m in notes} == {"memory"}
    by_kind = {k: sum(m.calls for m in moves if m.kind == k) for k in kinds}
    # 8 seats: rounds with 8..3 seats in (33 seat-rounds) shared over 8 seats; 30 paired seat-rounds;
    # expected: each move once, no vote re-asked and no tie (the bound counts those: `most`)
    assert by_kind["statement"] == pytest.approx(33 / 8) and by_kind["preference"] == pytest.approx(33 / 8)
    assert by_kind["private"] == pytest.approx(3 * 30 / 8) and by_kind["vote"] == pytest.approx(33 / 8)
    assert by_kind["plea"] == pytest.approx(2 / 8) and by_kind["jury"] == pytest.approx(6 / 8)
    assert by_kind["tiebreak"] == by_kind["revote"] == 0
    # prompts grow with the history; a short window keeps them short
    statements = [m.prompt_tokens for m in moves if m.kind == "statement"]
    assert statements == sorted(statements) and statements[-1] > 2 * statements[0]
    windowed, _ = planned_moves(EliminationParams(history_rounds=1))
    assert sum(m.calls * m.prompt_tokens for m in windowed) < sum(m.calls * m.prompt_tokens for m in moves)
    # replies expected at the word limits; public_only plays no pairing and no private talk
    longer, _ = planned_moves(EliminationParams(words=WordLimits(public=200)))
    assert max(m.expected_visible or 0 for m in longer if m.kind == "statement") > 200
    public_only, _ = planned_moves(EliminationParams(variant="public_only"))
    assert {m.kind for m in public_only} == kinds - {"preference", "private"}


def test_once_games_ran_calls_and_tokens_come_from_them(tmp_path: Path) -> None:
    context = _project(tmp_path)
    _, _, game_id = _plan(context)
    calls = pl.DataFrame(
        {
            "job": [f"elimination/{game_id}"] * 20,
            "roster_name": ["gpt-4o"] * 20,
            "request_id": [f"r{i}" for i in range(20)],
            "attempt": [1] * 20,
            "tokens_in": [1000] * 20,
            "tokens_out": [50] * 20,
            "cache_hit": [False] * 20,
            "error_kind": pl.Series([None] * 20, dtype=pl.Utf8),
        }
    )
    path = context.path(f"results/elimination/games/{game_id}.calls.parquet")
    path.parent.mkdir(parents=True)
    calls.write_parquet(path)
    estimates, rows, _ = _plan(PlanContext(tmp_path, context.models))
    assert estimates["gpt-4o"].expected[0] == 20 and estimates["gpt-4o"].calls == 63  # measured; the bound
    assert rows["gpt-4o"]["expected_tokens_in"] == 20 * 1000 and rows["gpt-4o"]["expected_tokens_out"] == 20 * 50
    assert rows["gpt-4o"]["tokens_from"] == "measured"
    assert rows["gpt-4o-thinking"]["tokens_from"] == "prompt+cap"  # it has not played yet
