"""pandera schemas of the Who is Spy tables (validated when written and when read)."""

from __future__ import annotations

from pipeline.core.artifacts import Field, StrictTable
from pipeline.whoisspy.config import BALLOTS, REASONING_ANALYSES, VARIANTS, VOTE_PARSES

ROLES = ["spy", "civilian"]


class GamesSchema(StrictTable):
    """One row per game."""

    game_id: str = Field(unique=True)
    variant: str = Field(isin=list(VARIANTS))
    focal: str = Field(nullable=True)
    focal_role: str = Field(nullable=True, isin=ROLES)
    replicate: int = Field(ge=0)
    civilian_word: str
    spy_word: str
    spy_seat: str
    spy_model: str
    starter: str
    winner: str = Field(isin=["spy", "civilians"])
    end_reason: str = Field(isin=["spy_out", "too_few_players", "rounds"])
    rounds_played: int = Field(ge=1)
    score_total: float
    vote_parse: str = Field(isin=list(VOTE_PARSES))  # how the game read its votes (rules.vote_parse)
    # reasoning games: whether the analysis was heard by the other voters; null in other variants
    reasoning_analysis: str = Field(nullable=True, isin=list(REASONING_ANALYSES))


class SeatsSchema(StrictTable):
    """One row per game and seat: the player's role, result and counts."""

    game_id: str
    variant: str = Field(isin=list(VARIANTS))
    seat: str
    model: str
    role: str = Field(isin=ROLES)
    word: str
    score: float
    base_score: float = Field(ge=0)
    vote_transfer: float
    won: bool
    eliminated_round: int = Field(nullable=True, ge=1)
    eliminated_by: str = Field(nullable=True, isin=["vote", "foul"])
    rounds_survived: int = Field(ge=0)
    speeches: int = Field(ge=0)
    foul_speeches: int = Field(ge=0)
    votes: int = Field(ge=0)
    abstentions: int = Field(ge=0)
    votes_for_spy: int = Field(ge=0)
    empty_at_token_limit: int = Field(ge=0)  # its replies the token limit cut before any visible text


class SpeechesSchema(StrictTable):
    """One row per description."""

    game_id: str
    variant: str = Field(isin=list(VARIANTS))
    round: int = Field(ge=1)
    seat: str
    model: str
    role: str = Field(isin=ROLES)
    text: str
    shown: str
    truncated: bool
    latency_s: float = Field(ge=0)
    fouled: bool
    foul_kinds: str  # comma-separated kinds, "" when none


class VotesSchema(StrictTable):
    """One row per vote (abstentions included)."""

    game_id: str
    variant: str = Field(isin=list(VARIANTS))
    round: int = Field(ge=1)
    voter: str
    model: str
    role: str = Field(isin=ROLES)
    target: str = Field(nullable=True)
    target_role: str = Field(nullable=True, isin=ROLES)
    abstained: bool
    # how the reply was read: named (a candidate), abstain (said so), invalid (named no candidate
    # in the form the game's vote_parse accepts: counted as an abstention)
    ballot: str = Field(isin=list(BALLOTS))
    correct: bool


class LeaderboardSchema(StrictTable):
    """Per model over the ranked variant's games: points, rates, TrueSkill."""

    rank: int = Field(ge=1)
    model: str = Field(unique=True)
    # the seats it filled (a model may fill two seats of a game): what points charge for; its games
    # are the rated games, trueskill_games
    seats: int = Field(ge=1)
    seats_spy: int = Field(ge=0)
    seats_civilian: int = Field(ge=0)
    score_sum: float
    points: float
    avg_score: float
    avg_score_spy: float = Field(nullable=True)
    avg_score_civilian: float = Field(nullable=True)
    win_rate: float = Field(ge=0, le=1)
    win_rate_spy: float = Field(nullable=True, ge=0, le=1)
    win_rate_civilian: float = Field(nullable=True, ge=0, le=1)
    civilian_votes: int = Field(ge=0)
    vote_accuracy: float = Field(nullable=True, ge=0, le=1)
    speeches: int = Field(ge=0)
    foul_speeches: int = Field(ge=0)
    foul_rate: float = Field(nullable=True, ge=0, le=1)
    foul_rate_spy: float = Field(nullable=True, ge=0, le=1)
    foul_rate_civilian: float = Field(nullable=True, ge=0, le=1)
    avg_survival_rounds: float = Field(ge=0)
    mu: float = Field(nullable=True)
    sigma: float = Field(nullable=True, ge=0)
    mu_lo: float = Field(nullable=True)
    mu_hi: float = Field(nullable=True)
    # rank by TrueSkill mu (1 = best) and its bootstrap interval; null for an unrated model
    trueskill_rank: int = Field(nullable=True, ge=1)
    trueskill_rank_lo: int = Field(nullable=True, ge=1)
    trueskill_rank_hi: int = Field(nullable=True, ge=1)
    # the evidence behind the interval: rating events, bootstrap resamples, and whether they are
    # enough (pipeline.core.rating.multipass.interval_settled; else the rank interval is the whole field)
    trueskill_games: int = Field(nullable=True, ge=0)
    trueskill_resamples: int = Field(nullable=True, ge=0)
    trueskill_settled: bool = Field(nullable=True)


class VariantsSchema(StrictTable):
    """Tidy comparison: per model (or "(all)"), variant and metric, the value beside the baseline's."""

    model: str
    variant: str = Field(isin=list(VARIANTS))
    metric: str
    value: float = Field(nullable=True)
    baseline: float = Field(nullable=True)
    delta: float = Field(nullable=True)
    seats: int = Field(ge=0)  # the seats behind the value (a per-role metric: that role's)
