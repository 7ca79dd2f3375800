"""pandera schemas of the Elimination Game's tables (validated when written and when read)."""

from __future__ import annotations

from pipeline.core.artifacts import Field, StrictTable

PHASES = ["vote", "revote", "jury"]
MESSAGE_KINDS = ["public", "tiebreak", "plea", "private"]
VARIANTS = ["standard", "public_only", "memory"]


class GamesSchema(StrictTable):
    """One row per game log read."""

    game_id: str = Field(unique=True)
    file: str
    seats: int = Field(ge=0)
    rounds: int = Field(ge=0)
    variant: str = Field(isin=VARIANTS)  # standard, public_only (no private talk), memory (memory notes)
    winner_seat: str = Field(nullable=True)
    winner_model: str = Field(nullable=True)
    rank_source: str = Field(nullable=True, isin=["derived", "final_results"])
    has_final_results: bool
    matches_final_results: bool = Field(nullable=True)


class SeatsSchema(StrictTable):
    """Who sat where: one row per (game, seat)."""

    game_id: str
    seat: str
    player_id: str
    model: str


class MessagesSchema(StrictTable):
    """Every message: public statements, tie-break statements, pleas, private messages."""

    game_id: str
    round: int = Field(ge=0)
    subround: int
    kind: str = Field(isin=MESSAGE_KINDS)
    seat: str = Field(nullable=True)
    model: str = Field(nullable=True)
    target_seat: str = Field(nullable=True)
    target_model: str = Field(nullable=True)
    text: str
    words: int = Field(ge=0)  # words of the reply before any cut
    words_recorded: int = Field(ge=0)
    cut: bool
    empty_at_token_limit: bool  # the token limit cut the reply before any visible text (reasoning models)


class VotesSchema(StrictTable):
    """Every vote, re-vote and jury vote with its private reason; invalid votes have no target."""

    game_id: str
    round: int = Field(ge=0)
    phase: str = Field(isin=PHASES)
    voter_seat: str = Field(nullable=True)
    voter_model: str = Field(nullable=True)
    target_seat: str = Field(nullable=True)
    target_model: str = Field(nullable=True)
    valid: bool
    target_marker: str = Field(nullable=True)  # the original's invalid-vote marker, e.g. "(invalid/skipped)"
    token_limit_replies: int = Field(ge=0)  # tries the token limit cut before any visible text
    reason: str = Field(nullable=True)


class EliminationsSchema(StrictTable):
    """Eliminations in order; `jury` marks the finalist the jury voted out."""

    game_id: str
    round: int = Field(ge=0)
    order: int = Field(ge=1)
    seat: str
    model: str = Field(nullable=True)
    jury: bool
    tie_break: bool = Field(nullable=True)
    cumu_check: bool = Field(nullable=True)  # absent from the original's later logs
    random_pick: bool = Field(nullable=True)


class PairsSchema(StrictTable):
    """Private partners of each round."""

    game_id: str
    round: int = Field(ge=0)
    seat_a: str
    seat_b: str
    model_a: str = Field(nullable=True)
    model_b: str = Field(nullable=True)


class FinalRanksSchema(StrictTable):
    """Final rank and partial points of every seat (rank null: the game did not finish). `rank`
    and `points` come from the source the import chose (recorded by default, as the original's
    leaderboard); `recorded_*` and `derived_rank` keep both sources for comparison."""

    game_id: str
    seat: str
    player_id: str
    model: str
    rank: int = Field(ge=1, nullable=True)
    points: float = Field(ge=0, le=1, nullable=True)
    recorded_rank: int = Field(nullable=True)
    recorded_points: float = Field(nullable=True)
    derived_rank: int = Field(nullable=True)
    seats: int = Field(ge=1)


class MemoryNotesSchema(StrictTable):
    """The memory variant's private notes: what a player kept for itself after each round."""

    game_id: str
    round: int = Field(ge=0)
    seat: str
    model: str = Field(nullable=True)
    note: str


class LeaderboardSchema(StrictTable):
    """Multi-pass TrueSkill per model, sorted by mu; intervals from a bootstrap over games
    (rank_lo..rank_hi: the 95% interval of the rank; the whole field 1..models when not `settled`:
    no bootstrap, or too few games or resamples, pipeline.core.rating.multipass.interval_settled)."""

    rank: int = Field(ge=1)
    rank_lo: int = Field(ge=1)
    rank_hi: int = Field(ge=1)
    model: str = Field(unique=True)
    mu: float
    mu_rel: float  # mu minus the field mean: compares with a table rated from another prior mu
    sigma: float = Field(ge=0)
    mu_lo: float = Field(nullable=True)
    mu_hi: float = Field(nullable=True)
    games: int = Field(ge=0)
    seats: int = Field(ge=0)
    points_sum: float = Field(ge=0)
    avg_points: float = Field(ge=0, le=1, nullable=True)
    rated_games: int = Field(ge=0)  # games behind the rating (another model at the table)
    resamples: int = Field(ge=0)  # bootstrap resamples behind the intervals (0: none)
    settled: bool  # enough rated games and resamples for the intervals to say something


class ModelStatsSchema(StrictTable):
    """The social metrics of each model (rates are null when their denominator is 0). The
    original's metrics first, each beside its counts (computed over the rated games), then ours
    (pipeline/elimination/metrics.py and docs/elimination.md say how each is defined)."""

    model: str = Field(unique=True)
    games: int = Field(ge=0)
    seats: int = Field(ge=0)  # appearances: seats with a final rank
    wins: int = Field(ge=0)
    first_place_rate: float = Field(ge=0, le=1, nullable=True)  # wins / seats
    first_out: int = Field(ge=0)
    earliest_out_rate: float = Field(ge=0, le=1, nullable=True)  # first_out / seats
    final2: int = Field(ge=0)
    final2_wins: int = Field(ge=0)
    final2_win_rate: float = Field(ge=0, le=1, nullable=True)
    buddy_chats: int = Field(ge=0)  # private chats, one per paired round, in the rated games whose results agree
    buddy_betrayals: int = Field(ge=0)  # votes (first and re-vote) against that round's partner
    # a vote and a re-vote against the same partner count twice, so up to 2
    buddy_betrayal_rate: float = Field(ge=0, le=2, nullable=True)
    buddy_betrayed: int = Field(ge=0)  # votes from that round's partner against the model
    buddy_betrayed_rate: float = Field(ge=0, le=2, nullable=True)
    # ours: the same over every rated game, those whose final results and ranks disagree included
    buddy_chats_all_rated: int = Field(ge=0)
    buddy_betrayals_all_rated: int = Field(ge=0)
    buddy_betrayal_rate_all_rated: float = Field(ge=0, le=2, nullable=True)
    buddy_betrayed_all_rated: int = Field(ge=0)
    buddy_betrayed_rate_all_rated: float = Field(ge=0, le=2, nullable=True)
    private_chats: int = Field(ge=0)  # ours: every log read
    betrayals: int = Field(ge=0)  # ours: chats with at least one vote against the partner
    betrayal_rate: float = Field(ge=0, le=1, nullable=True)
    betrayed: int = Field(ge=0)
    betrayed_rate: float = Field(ge=0, le=1, nullable=True)
    public_messages: int = Field(ge=0)  # messages every seat hears (public, tie-break, plea), rated games
    words_per_message: float = Field(ge=0, nullable=True)  # over public_messages, words as recorded
    messages: int = Field(ge=0)  # ours: every message of every log read, private ones included
    avg_words: float = Field(ge=0, nullable=True)  # ours: over messages, words before any cut
    cut_messages: int = Field(ge=0)
    votes_cast: int = Field(ge=0)
    invalid_votes: int = Field(ge=0)
    empty_at_token_limit: int = Field(ge=0)  # replies (messages and vote tries) cut before any text


class RankDistributionSchema(StrictTable):
    """Share of a model's seats that finished at each rank."""

    model: str
    rank: int = Field(ge=1)
    count: int = Field(ge=0)
    share: float = Field(ge=0, le=1)


TABLE_SCHEMAS: dict[str, type[StrictTable]] = {
    "games": GamesSchema,
    "seats": SeatsSchema,
    "messages": MessagesSchema,
    "votes": VotesSchema,
    "eliminations": EliminationsSchema,
    "pairs": PairsSchema,
    "final_ranks": FinalRanksSchema,
    "memory_notes": MemoryNotesSchema,
}
