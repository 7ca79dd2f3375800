"""The game record: what `play` writes to `games/<game_id>.json` and `rate` reads back.

One frozen model per file (`WhoIsSpyGame`), written and read through
`pipeline.core.artifacts.write_record` / `read_record`: the bytes are those the engine's dict gave
(`tests/core/artifacts/test_records.py` reads every committed game and writes it back byte for byte). Fields that
older records lack (`rules.vote_parse`, `reasoning_analysis`, a vote's `ballot`) are optional and
written only when present.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from pipeline.core.artifacts import GameRecord

Number = int | float  # kept as written: an int stays an int, a float a float


class Words(GameRecord):
    civilian: str
    spy: str


class PlayerRecord(GameRecord):
    """One seat at the end of the game."""

    seat: str
    model: str
    role: Literal["civilian", "spy"]
    word: str
    score: Number
    base_score: Number
    vote_transfer: Number
    eliminated_round: int | None
    eliminated_by: str | None  # "vote" or "foul"
    fouls: list[str]


class SpeechEvent(GameRecord):
    type: Literal["speech"]
    round: int
    seat: str
    text: str  # what the model said
    shown: str  # what the others heard (the word redacted, or NO_DESCRIPTION)
    truncated: bool
    latency_s: Number
    fouls: list[str]
    empty_at_token_limit: bool | None = None  # present (true) only when the token limit cut it


class FoulEvent(GameRecord):
    type: Literal["foul"]
    round: int
    seat: str
    kind: str


class AnalysisEvent(GameRecord):
    """The reasoning seat's analysis, said aloud before the others vote."""

    type: Literal["analysis"]
    round: int
    seat: str
    text: str


class VoteEvent(GameRecord):
    type: Literal["vote"]
    round: int
    voter: str
    target: str | None  # None: an abstention
    ballot: str | None = None  # config.BALLOTS (named, abstain, invalid); absent in older records
    reply: str
    latency_s: Number
    analysis: str | None = None  # the reasoning seat's reply
    analysis_heard: bool | None = None
    empty_at_token_limit: bool | None = None


class VoteResultEvent(GameRecord):
    type: Literal["vote_result"]
    round: int
    counts: dict[str, int]
    eliminated: str | None
    tied: list[str]


class EliminationEvent(GameRecord):
    type: Literal["elimination"]
    round: int
    seat: str
    by: str


class EndEvent(GameRecord):
    type: Literal["end"]
    round: int
    winner: str
    reason: str


Event = Annotated[
    SpeechEvent | FoulEvent | AnalysisEvent | VoteEvent | VoteResultEvent | EliminationEvent | EndEvent,
    Field(discriminator="type"),
]


class RulesRecord(GameRecord):
    seats: int
    rounds: int
    min_players: int
    time_limit_s: Number
    max_chars: int
    vote_parse: str | None = None  # absent in older records


class RepliesRecord(GameRecord):
    speech_max_tokens: int | None
    vote_max_tokens: int | None
    reasoning_max_tokens: int | None


class WhoIsSpyGame(GameRecord):
    """`games/<game_id>.json`: one game of Who is Spy, from its seats to its end."""

    game_id: str
    variant: str
    engine_version: int
    prompts: str  # the prompts' fingerprint
    words: Words
    players: list[PlayerRecord]
    starter: str
    events: list[Event]
    winner: Literal["civilians", "spy"]
    end_reason: str
    rounds_played: int
    rules: RulesRecord
    replies: RepliesRecord
    focal: str | None
    focal_role: str | None
    reasoning_seat: str | None
    reasoning_analysis: str | None = None  # absent in older records
    replicate: int


def as_game(record: WhoIsSpyGame | Mapping[str, Any]) -> WhoIsSpyGame:
    """A typed record, from a record or from the JSON object of one."""
    return record if isinstance(record, WhoIsSpyGame) else WhoIsSpyGame.model_validate(record)
