"""pandera schemas of the Who is Spy tables (validated when written and when read)."""

from __future__ import annotations

import pandera.polars as pa

from pipeline.core.artifacts import StrictTable
from pipeline.whoisspy.config import BALLOTS, REASONING_ANALYSES, VARIANTS, VOTE_PARSES

ROLES = ["spy", "civilian"]


class GamesSchema(StrictTable):
    """One row per game."""

    game_id: str = pa.Field(unique=True)
    variant: str = pa.Field(isin=list(VARIANTS))
    focal: str = pa.Field(nullable=True)
    focal_role: str = pa.Field(nullable=True, isin=ROLES)
    replicate: int = pa.Field(ge=0)
    civilian_word: str
    spy_word: str
    spy_seat: str
    spy_model: str
    starter: str
    winner: str = pa.Field(isin=["spy", "civilians"])
    end_reason: str = pa.Field(isin=["spy_out", "too_few_players", "rounds"])
    rounds_played: int = pa.Field(ge=1)
    score_total: float
    vote_parse: str = pa.Field(isin=list(VOTE_PARSES))  # how the game read its votes (rules.vote_parse)
    # reasoning games: whether the analysis was heard by the other voters; null in other variants
    reasoning_analysis: str = pa.Field(nullable=True, isin=list(REASONING_ANALYSES))


class SeatsSchema(StrictTable):
    """One row per game and seat: the player's role, result and counts."""

    game_id: str
    variant: str = pa.Field(isin=list(VARIANTS))
    seat: str
    model: str
    role: str = pa.Field(isin=ROLES)
    word: str
    score: float
    base_score: float = pa.Field(ge=0)
    vote_transfer: float
    won: bool
    eliminated_round: int = pa.Field(nullable=True, ge=1)
    eliminated_by: str = pa.Field(nullable=True, isin=["vote", "foul"])
    rounds_survived: int = pa.Field(ge=0)
    speeches: int = pa.Field(ge=0)
    foul_speeches: int = pa.Field(ge=0)
    votes: int = pa.Field(ge=0)
    abstentions: int = pa.Field(ge=0)
    votes_for_spy: int = pa.Field(ge=0)
    empty_at_token_limit: int = pa.Field(ge=0)  # its replies the token limit cut before any visible text


class SpeechesSchema(StrictTable):
    """One row per description."""

    game_id: str
    variant: str = pa.Field(isin=list(VARIANTS))
    round: int = pa.Field(ge=1)
    seat: str
    model: str
    role: str = pa.Field(isin=ROLES)
    text: str
    shown: str
    truncated: bool
    latency_s: float = pa.Field(ge=0)
    fouled: bool
    foul_kinds: str  # comma-separated kinds, "" when none


class VotesSchema(StrictTable):
    """One row per vote (abstentions included)."""

    game_id: str
    variant: str = pa.Field(isin=list(VARIANTS))
    round: int = pa.Field(ge=1)
    voter: str
    model: str
    role: str = pa.Field(isin=ROLES)
    target: str = pa.Field(nullable=True)
    target_role: str = pa.Field(nullable=True, isin=ROLES)
    abstained: bool
    # how the reply was read: named (a candidate), abstain (said so), invalid (named no candidate
    # in the form the game's vote_parse accepts: counted as an abstention)
    ballot: str = pa.Field(isin=list(BALLOTS))
    correct: bool


class LeaderboardSchema(StrictTable):
    """Per model over the ranked variant's games: points, rates, TrueSkill."""

    rank: int = pa.Field(ge=1)
    model: str = pa.Field(unique=True)
    games: int = pa.Field(ge=1)
    games_spy: int = pa.Field(ge=0)
    games_civilian: int = pa.Field(ge=0)
    score_sum: float
    points: float
    avg_score: float
    avg_score_spy: float = pa.Field(nullable=True)
    avg_score_civilian: float = pa.Field(nullable=True)
    win_rate: float = pa.Field(ge=0, le=1)
    win_rate_spy: float = pa.Field(nullable=True, ge=0, le=1)
    win_rate_civilian: float = pa.Field(nullable=True, ge=0, le=1)
    civilian_votes: int = pa.Field(ge=0)
    vote_accuracy: float = pa.Field(nullable=True, ge=0, le=1)
    speeches: int = pa.Field(ge=0)
    foul_speeches: int = pa.Field(ge=0)
    foul_rate: float = pa.Field(nullable=True, ge=0, le=1)
    foul_rate_spy: float = pa.Field(nullable=True, ge=0, le=1)
    foul_rate_civilian: float = pa.Field(nullable=True, ge=0, le=1)
    avg_survival_rounds: float = pa.Field(ge=0)
    mu: float = pa.Field(nullable=True)
    sigma: float = pa.Field(nullable=True, ge=0)
    mu_lo: float = pa.Field(nullable=True)
    mu_hi: float = pa.Field(nullable=True)
    # rank by TrueSkill mu (1 = best) and its bootstrap interval; null for an unrated model
    trueskill_rank: int = pa.Field(nullable=True, ge=1)
    trueskill_rank_lo: int = pa.Field(nullable=True, ge=1)
    trueskill_rank_hi: int = pa.Field(nullable=True, ge=1)
    # the evidence behind the interval: rating events, bootstrap resamples, and whether they are
    # enough (pipeline.core.rating.multipass.interval_settled; else the rank interval is the whole field)
    trueskill_games: int = pa.Field(nullable=True, ge=0)
    trueskill_resamples: int = pa.Field(nullable=True, ge=0)
    trueskill_settled: bool = pa.Field(nullable=True)


class VariantsSchema(StrictTable):
    """Tidy comparison: per model (or "(all)"), variant and metric, the value beside the baseline's."""

    model: str
    variant: str = pa.Field(isin=list(VARIANTS))
    metric: str
    value: float = pa.Field(nullable=True)
    baseline: float = pa.Field(nullable=True)
    delta: float = pa.Field(nullable=True)
    games: int = pa.Field(ge=0)
