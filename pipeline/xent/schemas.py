"""pandera schemas of the xent tables (validated at write and at read; see specs and CONTRACT)."""

from __future__ import annotations

from pipeline.core.artifacts import Field, RatingSummarySchema, StrictTable


class MovesSchema(StrictTable):
    """One row per elicited register of the player under test, per round."""

    game: str
    map_id: str
    model: str
    round: int = Field(ge=1)
    elicit_index: int = Field(ge=0)
    player_role: str
    register: str
    move: str
    reply: str
    attempts: int = Field(ge=1)
    tagged: bool  # the reply had a <move> tag (else the whole reply was the move)
    tokens_in: int = Field(ge=0)  # the player's token usage for this move, re-asks included
    tokens_out: int = Field(ge=0)


class RewardsSchema(StrictTable):
    """One row per reward to a role the player under test plays."""

    game: str
    map_id: str
    model: str
    round: int = Field(ge=1)
    reward_index: int = Field(ge=0)
    player_role: str
    total_bits: float


class TokenXentsSchema(StrictTable):
    """The per-token breakdown of each reward (rescored by the play judge); sums to total_bits."""

    game: str
    map_id: str
    model: str
    round: int = Field(ge=1)
    reward_index: int = Field(ge=0)
    token_index: int = Field(ge=0)
    token: str
    bits: float


class RescoreSchema(StrictTable):
    """Every reward re-scored by every configured judge, beside the total seen during play."""

    game: str
    map_id: str
    model: str
    round: int = Field(ge=1)
    reward_index: int = Field(ge=0)
    player_role: str
    judge: str
    total_bits: float
    play_total_bits: float


class RoundsSchema(StrictTable):
    """Round totals and the running best (the playability curve); null total = the round errored."""

    game: str
    map_id: str
    model: str
    round: int = Field(ge=1)
    total_bits: float = Field(nullable=True)
    running_best: float = Field(nullable=True)
    error: str = Field(nullable=True)


class ScoresSchema(StrictTable):
    """Map score (best round), normalized by |best score| of any non-voided player (the reference's)."""

    game: str
    map_id: str
    model: str
    map_score: float = Field(nullable=True)
    normalized_score: float = Field(nullable=True)
    voided: bool  # one of the player's rounds on this map errored: no score there (the reference's)
    rounds: int = Field(ge=0)


class MapsSchema(StrictTable):
    """Per map: the best score and whether any player improved after round 1 (flagged if not)."""

    game: str
    map_id: str
    best_score: float = Field(nullable=True)
    best_model: str = Field(nullable=True)
    improved_after_round_1: bool
    flagged: bool


class XentRatingsSchema(RatingSummarySchema):
    """Multi-pass TrueSkill over per-map rankings, with bootstrap intervals (rating_summary)."""

    player: str = Field(unique=True)


class RoundStatusSchema(StrictTable):
    """Every played round of the player under test: its error (null when it ran to the end)."""

    game: str
    map_id: str
    model: str
    round: int = Field(ge=1)
    error: str = Field(nullable=True)
    ensure_failures: int = Field(ge=0)
