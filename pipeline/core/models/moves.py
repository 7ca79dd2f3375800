"""What a game asks of a player for one move, and what comes back: the two values every player
(a model, a bot, a seat played from outside) exchanges with a game."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.models.gateway import Message, TokenLogprob


@dataclass(frozen=True)
class MoveRequest:
    """What a game asks of a player for one move."""

    messages: Sequence[Message]
    key: str  # unique within the job, e.g. "round3/vote/P2"; seeds the reply
    kind: str = "text"  # what is asked: "statement", "vote", "answer", ...
    choices: tuple[str, ...] = ()  # the valid moves, when they can be listed
    max_words: int | None = None
    # the game's visible reply budget for this kind of move, as its reference allows (None: none);
    # the player's roster entry decides what is sent (pipeline.core.models.reply_budgets)
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    top_logprobs: int | None = None
    sample_index: int = 0
    state: Mapping[str, Any] = field(default_factory=dict)  # game view for bots only


@dataclass(frozen=True)
class Reply:
    player: str
    text: str
    cache_hit: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    logprobs: tuple[TokenLogprob, ...] | None = None
    # seconds the answer took when it was produced (a cached answer keeps its recorded time, so
    # time limits judge a rerun exactly as they judged the first run)
    latency_s: float = 0.0
    finish_reason: str = "stop"  # "length": the token limit cut the reply (a bot never is)

    @property
    def empty_at_token_limit(self) -> bool:
        """Cut by the token limit before any visible text: what a reasoning model returns when its
        hidden reasoning spent the whole budget. Not the model's move: games record it as such."""
        return self.finish_reason == "length" and not self.text.strip()
