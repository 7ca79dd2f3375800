"""Models: every model call. The gateway (`gateway`: litellm, cache, retries, the calls table),
the embedded local models (`local`, `local_batch`), provider limits shared across processes
(`limits`), the spend ledger (`budget`), reply budgets that belong to the model
(`reply_budgets`), provider batch APIs (`batch`), prices (`pricing`), the calls journal
(`journal`), injected faults (`faults`), the request probe of the run plan (`probe`), players and
bots (`players`), concurrent moves (`concurrency`) and the roster (`roster`).

The names below are the public API, imported on first use (SPEC 1 lazy loading): importing
the package costs nothing until a name is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core import lazy_exports

if TYPE_CHECKING:
    from pipeline.core.models.batch import run_job
    from pipeline.core.models.concurrency import gather_moves
    from pipeline.core.models.gateway import BudgetExceeded, Gateway, GatewayError, TokenLogprob, supports_top_logprobs
    from pipeline.core.models.journal import CallRecord
    from pipeline.core.models.players import (
        BotPolicy,
        BotReply,
        MoveRequest,
        Player,
        Reply,
        is_generic_bot,
        make_player,
        make_players,
        register_bot,
    )
    from pipeline.core.models.pricing import price_per_token
    from pipeline.core.models.probe import ProbeGateway, prompt_tokens
    from pipeline.core.models.reply_budgets import (
        GameBudgets,
        describe,
        empty_at_limit_counts,
        is_reasoning_model,
        most_reply_tokens,
        planned_reply_tokens,
        tokens_for_words,
    )
    from pipeline.core.models.roster import ModelsParams, RosterEntry, load_models

_EXPORTS = {
    "run_job": "batch",
    "gather_moves": "concurrency",
    "BudgetExceeded": "gateway",
    "Gateway": "gateway",
    "GatewayError": "gateway",
    "TokenLogprob": "gateway",
    "supports_top_logprobs": "gateway",
    "CallRecord": "journal",
    "BotPolicy": "players",
    "BotReply": "players",
    "MoveRequest": "players",
    "Player": "players",
    "Reply": "players",
    "is_generic_bot": "players",
    "make_player": "players",
    "make_players": "players",
    "register_bot": "players",
    "price_per_token": "pricing",
    "ProbeGateway": "probe",
    "prompt_tokens": "probe",
    "GameBudgets": "reply_budgets",
    "describe": "reply_budgets",
    "empty_at_limit_counts": "reply_budgets",
    "is_reasoning_model": "reply_budgets",
    "most_reply_tokens": "reply_budgets",
    "planned_reply_tokens": "reply_budgets",
    "tokens_for_words": "reply_budgets",
    "ModelsParams": "roster",
    "RosterEntry": "roster",
    "load_models": "roster",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "BotPolicy",
    "BotReply",
    "BudgetExceeded",
    "CallRecord",
    "GameBudgets",
    "Gateway",
    "GatewayError",
    "ModelsParams",
    "MoveRequest",
    "Player",
    "ProbeGateway",
    "Reply",
    "RosterEntry",
    "TokenLogprob",
    "describe",
    "empty_at_limit_counts",
    "gather_moves",
    "is_generic_bot",
    "is_reasoning_model",
    "load_models",
    "make_player",
    "make_players",
    "most_reply_tokens",
    "planned_reply_tokens",
    "price_per_token",
    "prompt_tokens",
    "register_bot",
    "run_job",
    "supports_top_logprobs",
    "tokens_for_words",
]
