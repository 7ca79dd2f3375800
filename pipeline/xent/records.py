"""The play record: what a play job writes to `play/<game>/<job_id>.json` and `rescore` reads back.

One frozen model per file (`XentPlay`), written and read through
`pipeline.core.artifacts.write_record` / `read_record`: the bytes are those of the dict `job_record`
builds (`tests/core/artifacts/test_records.py` reads every committed play record and writes it back byte for
byte). A move's `tagged`, `tokens_in` and `tokens_out` are optional: older records lack them.
"""

from __future__ import annotations

from pydantic import Field

from pipeline.core.artifacts import GameRecord

Number = int | float  # kept as written: an int stays an int, a float a float


class MoveRecord(GameRecord):
    """One elicited move."""

    elicit_index: int
    role: str
    # the XGL register the move went to; "register" itself would shadow BaseModel.register
    xgl_register: str = Field(alias="register")
    move: str
    reply: str
    attempts: int
    line: int
    tagged: bool | None = None  # absent in older records (read as true)
    tokens_in: int | None = None  # absent in older records (read as 0)
    tokens_out: int | None = None


class TermRecord(GameRecord):
    """One xent term of a reward: the scored string and its (prefix, coefficient) parts."""

    string: str
    parts: list[tuple[str, Number]]


class RewardRecord(GameRecord):
    """One reward() call: its total, per-token bits and the terms that rescoring recomputes."""

    reward_index: int
    role: str
    line: int
    expression: str
    total_bits: Number
    tokens: list[tuple[str, Number]]  # [token, bits]
    token_terms: list[int]
    terms: list[TermRecord]


class RoundRecord(GameRecord):
    round: int
    error: str | None
    total_bits: Number | None  # None when the round ended in an error
    ensure_failures: int
    moves: list[MoveRecord]
    rewards: list[RewardRecord]


class MapRecord(GameRecord):
    map_id: str
    rounds: list[RoundRecord]
    seed: int | str | None  # ours an integer; an imported map keeps the reference's map seed


class XentPlay(GameRecord):
    """`play/<game>/<job_id>.json`: every map and round one player (and its opponent) played."""

    job_id: str
    game: str
    game_version: str
    description: str
    code: str  # the game's XGL source
    player: str
    model: str
    opponent: str | None
    self_roles: list[str]
    opponent_roles: list[str]
    rounds: int
    prompt_version: int
    judge: dict[str, str] = Field(description="the judge's fingerprint (JudgeFingerprint.as_dict)")
    maps: list[MapRecord]
