"""Reply budgets belong to the model, not to the game.

A game states what its rules allow for a move: a visible reply budget in tokens, or none at all
(the references state word limits and cap nothing). The roster entry decides what is sent:

- the visible budget: the entry's own budget for this kind of move (`sampling.move_max_tokens`,
  keyed `<benchmark>.<kind>` or `<kind>`), else the game's budget (or DEFAULT_VISIBLE_TOKENS when
  the game sets none) capped by the entry's `sampling.max_tokens`;
- for a reasoning model, a reasoning allowance on top (`sampling.reasoning_tokens`, else a default
  by `reasoning_effort`), because hidden reasoning tokens count against the same cap;
- sent in the provider's own parameter: `max_completion_tokens` for OpenAI-style APIs, Anthropic's
  `thinking` budget below `max_tokens`, plain `max_tokens` elsewhere (litellm maps it).

A model is a reasoning model when its entry says so (`sampling.reasoning: true`), when it sets
`reasoning_effort`, when its replies showed it (pipeline.core.models.reasoning_seen), or when
litellm's model map says it supports reasoning. Anthropic's models
think only when asked, so for them the map alone is not enough.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.core.artifacts.params import StrictParams
from pipeline.core.models.model_map import map_answer
from pipeline.core.models.reasoning_seen import seen
from pipeline.core.models.roster import RosterEntry

#: a move's visible budget when neither the game nor the entry sets one: the reference Xent's cap on
#: Anthropic (it sets none on OpenAI), far above any word limit the games state
DEFAULT_VISIBLE_TOKENS = 4096

#: the reasoning allowance by `reasoning_effort` when the entry sets no `reasoning_tokens`
#: (None: the effort is the provider's default, which is medium on OpenAI)
DEFAULT_REASONING_TOKENS: dict[str | None, int] = {
    "minimal": 2048,
    "low": 4096,
    "medium": 8192,
    None: 8192,
    "high": 16384,
}

#: providers whose reasoning budget is `max_completion_tokens` (hidden reasoning counted inside it)
COMPLETION_TOKENS_PROVIDERS = frozenset({"openai", "azure", "text-completion-openai"})
#: providers whose models think only when thinking is enabled, with its own budget parameter
THINKING_BUDGET_PROVIDERS = frozenset({"anthropic"})
#: Anthropic refuses a thinking budget below this
MIN_THINKING_BUDGET = 1024


class GameBudgets(StrictParams):
    """A game's own visible budgets per kind of move (fields: a positive integer, or null where its
    reference sets none). The roster entry still decides what is sent (`reply_budget`)."""

    def is_set(self) -> bool:
        """Whether the game caps any kind of move (null everywhere: the reference's rules)."""
        return any(v is not None for v in self.model_dump().values())


@dataclass(frozen=True)
class ReplyBudget:
    """What one request may spend: `visible` tokens of reply plus `reasoning` hidden tokens."""

    visible: int
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.visible + self.reasoning


@functools.lru_cache(maxsize=512)
def _map_says_reasoning(model: str) -> bool:
    """litellm's model map: does this model reason? Unknown models (self-hosted, custom) do not.
    Kept on disk per litellm version (`map_answer`): every Snakefile parse and SKATE job asks it
    of each API model in the roster."""

    def ask(litellm: Any) -> bool:
        try:
            return bool(litellm.supports_reasoning(model=model))
        except Exception:  # noqa: BLE001 - an unknown model or provider is simply not known to reason
            return False

    return bool(map_answer("reasoning", model, ask))


def is_reasoning_model(entry: RosterEntry) -> bool:
    """A reasoning model: the entry's flag, else its `reasoning_effort`, else litellm's model map
    (for providers whose models reason without being asked)."""
    if entry.is_bot or entry.model is None:
        return False
    flag = entry.sampling.reasoning
    if flag is not None:
        return flag
    if entry.sampling.reasoning_effort is not None or entry.sampling.reasoning_tokens is not None:
        return True
    if seen(entry) is not None:  # its replies said so (pipeline.core.models.reasoning_seen)
        return True
    if entry.provider in THINKING_BUDGET_PROVIDERS or entry.provider == "local":
        return False
    return _map_says_reasoning(entry.model)


def reasoning_allowance(entry: RosterEntry) -> int:
    """Hidden tokens a reasoning model may spend before its visible reply (0 for other models)."""
    if not is_reasoning_model(entry):
        return 0
    if entry.sampling.reasoning_tokens is not None:
        return entry.sampling.reasoning_tokens
    return DEFAULT_REASONING_TOKENS[entry.sampling.reasoning_effort]


def visible_budget(entry: RosterEntry, kind: str, game_tokens: int | None, benchmark: str | None = None) -> int:
    """The visible reply budget of one move: the entry's budget for `<benchmark>.<kind>` or `<kind>`
    when it sets one, else the game's budget (DEFAULT_VISIBLE_TOKENS when the game sets none)
    capped by the entry's `max_tokens`."""
    own = entry.sampling.move_max_tokens
    for key in ((f"{benchmark}.{kind}",) if benchmark else ()) + (kind,):
        if key in own:
            return own[key]
    game = DEFAULT_VISIBLE_TOKENS if game_tokens is None else game_tokens
    cap = entry.sampling.max_tokens
    return game if cap is None else min(game, cap)


def reply_budget(entry: RosterEntry, kind: str, game_tokens: int | None, benchmark: str | None = None) -> ReplyBudget:
    """The whole budget of one move for `entry`: visible tokens plus its reasoning allowance."""
    return ReplyBudget(visible_budget(entry, kind, game_tokens, benchmark), reasoning_allowance(entry))


def budget_params(entry: RosterEntry, budget: ReplyBudget) -> dict[str, Any]:
    """The request parameters that carry `budget`, in the provider's own terms.

    A model that does not reason gets `max_tokens` alone, as before (its cache keys are unchanged).
    """
    if budget.reasoning == 0:
        return {"max_tokens": budget.visible}
    if entry.provider in COMPLETION_TOKENS_PROVIDERS:
        return {"max_completion_tokens": budget.total}
    if entry.provider in THINKING_BUDGET_PROVIDERS:
        thinking = max(MIN_THINKING_BUDGET, budget.reasoning)
        return {"max_tokens": budget.visible + thinking, "thinking": {"type": "enabled", "budget_tokens": thinking}}
    return {"max_tokens": budget.total}


def describe(entry: RosterEntry) -> str:
    """One line for tables and plans: how this entry's budgets are set."""
    if entry.is_bot:
        return "bot"
    cap = "game's budget" if entry.sampling.max_tokens is None else f"at most {entry.sampling.max_tokens} visible"
    if not is_reasoning_model(entry):
        return f"chat model, {cap}"
    effort = entry.sampling.reasoning_effort or "provider default"
    found = seen(entry)
    how = f"seen in its replies: {found}; effort {effort}" if found else f"effort {effort}"
    return f"reasoning model ({how}), {cap} + {reasoning_allowance(entry)} reasoning tokens"


#: tokens per English word, for turning a game's word limits into expected reply tokens
TOKENS_PER_WORD = 1.35


def tokens_for_words(words: int) -> int:
    """Expected tokens of a reply of `words` words (a plan's estimate, not a cap)."""
    return int(round(words * TOKENS_PER_WORD)) + 1


def planned_reply_tokens(
    entry: RosterEntry,
    kind: str,
    game_tokens: int | None,
    benchmark: str | None = None,
    expected_visible: int | None = None,
) -> int:
    """Reply tokens a plan counts for one move: the visible reply the game's rules lead one to
    expect (e.g. from its word limit), never above the move's visible budget, plus the whole
    reasoning allowance (an upper bound: hidden reasoning is billed as output)."""
    budget = reply_budget(entry, kind, game_tokens, benchmark)
    visible = budget.visible if expected_visible is None else min(budget.visible, expected_visible)
    return visible + budget.reasoning


def reply_cap(params: Mapping[str, Any]) -> int:
    """The token cap a request carries, whichever parameter carries it."""
    return int(params.get("max_completion_tokens") or params.get("max_tokens") or 0)


def most_reply_tokens(entry: RosterEntry, kind: str, game_tokens: int | None, benchmark: str | None = None) -> int:
    """The most tokens one reply of this move can bill: the cap its request carries (visible budget
    plus the reasoning allowance, or an Anthropic thinking budget at its provider's minimum)."""
    return reply_cap(budget_params(entry, reply_budget(entry, kind, game_tokens, benchmark)))


def empty_at_limit_counts(calls: Any) -> dict[str, int]:
    """Replies cut by the token limit before any visible text, per roster name, from a calls
    table (polars, CallsSchema): what each benchmark's metrics report as `empty_at_token_limit`."""
    import polars as pl

    if "finish_reason" not in calls.columns or calls.is_empty():
        return {}
    starved = calls.filter((pl.col("finish_reason") == "length") & (pl.col("error_kind") == "empty"))
    # one answer counted once: a calls table also holds a killed run's attempts, and the rerun's
    # cache hit of the same answer is another row of the same request
    starved = starved.unique(subset=["job", "roster_name", "request_id"], keep="first")
    return {row["roster_name"]: int(row["len"]) for row in starved.group_by("roster_name").len().iter_rows(named=True)}
