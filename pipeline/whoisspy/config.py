"""`params/whoisspy.yaml`: who plays, how many games, which variants, the rules and the rating."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from pipeline.core.artifacts import ParamsError, indexed, load_params, roster_problems
from pipeline.core.artifacts.params import StrictParams as Strict
from pipeline.core.models import GameBudgets, ModelsParams
from pipeline.core.rating import with_defaults
from pipeline.core.rating.settings import AdaptiveSettings

Variant = Literal["baseline", "attack", "defense", "reasoning"]
VARIANTS: tuple[str, ...] = ("baseline", "attack", "defense", "reasoning")
#: how a vote reply is read: the paper's exact name, or our first mention of a candidate anywhere
VoteParse = Literal["paper", "lenient"]
VOTE_PARSES: tuple[str, ...] = ("paper", "lenient")
#: how one vote reply was read: a candidate, an explicit abstention, or anything else (an abstention)
BALLOTS: tuple[str, ...] = ("named", "abstain", "invalid")
#: whether the reasoning variant's analysis is heard by the other voters (the paper) or not
ReasoningAnalysis = Literal["public", "private"]
REASONING_ANALYSES: tuple[str, ...] = ("public", "private")


class RulesParams(Strict):
    seats: int = Field(6, ge=4, le=12, description="players per game (the paper plays 6)")
    rounds: int = Field(3, ge=1, le=10, description="rounds of speaking and voting before the game ends")
    min_players: int = Field(3, ge=2, description="the game ends when fewer players than this survive")
    time_limit_s: float = Field(
        10.0, gt=0, description="seconds of model time for a description; slower counts as no answer"
    )
    max_chars: int = Field(400, ge=1, description="descriptions are cut to this many characters")
    vote_parse: VoteParse = Field(
        "paper",
        description="paper: a vote counts only when the reply (a reasoned vote: what follows its last "
        "'VOTE:') is exactly one of the candidates' names, anything else is an abstention (appendix A); "
        "lenient: the first candidate mentioned anywhere in the reply counts (our earlier parse)",
    )

    @model_validator(mode="after")
    def _fits(self) -> RulesParams:
        if self.min_players > self.seats:
            raise ValueError(f"min_players ({self.min_players}) must not exceed seats ({self.seats})")
        return self


class ReplyParams(GameBudgets):
    """The game's visible reply budget (max_tokens) per kind of move. The paper sets none: it limits
    a description by `rules.max_chars` and `rules.time_limit_s`, so every field defaults to null and
    each model's roster entry decides what it sends (pipeline.core.models.reply_budgets: its own
    `move_max_tokens`, keyed `whoisspy.speech`, `whoisspy.vote`, `whoisspy.reasoned_vote`, else its
    `max_tokens`, else 4096 visible tokens, plus a reasoning model's allowance). An integer caps
    that kind of move for every model (an entry's own `move_max_tokens` still replaces it)."""

    speech_max_tokens: int | None = Field(
        None, ge=1, description="a positive integer, or null (no cap, the paper): visible tokens of a description"
    )
    vote_max_tokens: int | None = Field(
        None, ge=1, description="a positive integer, or null (no cap, the paper): visible tokens of a vote"
    )
    reasoning_max_tokens: int | None = Field(
        None,
        ge=1,
        description="a positive integer, or null (no cap, the paper): visible tokens of the reasoning "
        "variant's analysis plus vote",
    )


if TYPE_CHECKING:  # to mypy the base is what with_defaults builds it from: TrueSkillSettings
    from pipeline.core.rating.settings import TrueSkillSettings

    _RatingBase = TrueSkillSettings
else:
    _RatingBase = with_defaults("WhoIsSpyTrueSkill", passes=8, bootstrap_resamples=100)


class RatingSettings(_RatingBase):
    """trueskill's own defaults; a game always has a winner, so no draws."""

    matchup: Literal["teams", "pairwise"] = Field(
        "teams",
        description="teams: one update per game, the spy against the civilians' team (the spec); "
        "pairwise: the spy against each civilian model separately (about five updates a game for the spy)",
    )


class AdaptiveParams(AdaptiveSettings):
    """`schedule.adaptive`: rounds of tables chosen from the results so far among `players`
    (docs/adaptive.md). Off by default: the fixed schedule is the paper's. When on, the fixed games
    (`fill`, `games_per_role`, the variants other than `rank_variant`) are not played: the rounds
    are the schedule, each table one game of `rank_variant`."""


class ScheduleParams(Strict):
    adaptive: AdaptiveParams = Field(
        default_factory=AdaptiveParams,
        description="the adaptive schedule: enabled (false: the fixed schedule), tables_per_round, z, max_games, "
        "max_rounds, max_cost_usd, seed; its pool is `players`",
    )


class WhoIsSpyParams(Strict):
    players: list[str] = Field(
        min_length=1,
        description="roster names (params/models.yaml) under test: each plays spy and civilian "
        "equally often, games_per_role times each, in every variant",
    )
    fill: list[str] = Field(min_length=1, description="roster names that fill the other seats (cycled, seats shuffled)")
    games_per_role: int = Field(1, ge=1, le=10000, description="games per player, role and variant")
    variants: list[Variant] = Field(
        default_factory=lambda: list[Variant](["baseline"]),
        min_length=1,
        description="some of baseline, attack, defense, reasoning",
    )
    rank_variant: Variant = Field(
        "baseline", description="the variant whose games make the points leaderboard and TrueSkill"
    )
    reasoning_analysis: ReasoningAnalysis = Field(
        "public",
        description="the reasoning variant's analysis: public (the paper) is said aloud before the "
        "other players vote, and they and every later prompt hear it; private: only the reasoning player's "
        "own vote uses it",
    )
    seed: int = Field(0, ge=0, description="schedule seed: changes word pairs and seats of every game")
    rules: RulesParams = Field(default_factory=RulesParams, description="seats, rounds, time limit, cut")
    replies: ReplyParams = Field(
        default_factory=ReplyParams,
        description="the game's visible reply budgets: speech_max_tokens, "
        "vote_max_tokens, reasoning_max_tokens; each null (the paper: no cap) or a positive integer for every model",
    )
    rating: RatingSettings = Field(
        default_factory=RatingSettings, description="TrueSkill settings, passes, bootstrap resamples"
    )
    schedule: ScheduleParams = Field(
        default_factory=ScheduleParams, description="the adaptive schedule (`schedule.adaptive`), off by default"
    )

    @model_validator(mode="after")
    def _ranked_variant_is_played(self) -> WhoIsSpyParams:
        if self.rank_variant not in self.variants:
            raise ValueError(
                f"rank_variant {self.rank_variant!r} is not among variants {self.variants}; "
                "add it to variants or rank by one of them"
            )
        return self

    @field_validator("players", "variants")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        repeated = sorted({v for v in value if value.count(v) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed twice; list each once")
        return value

    def check_roster(
        self,
        models: ModelsParams,
        source: str = "params/whoisspy.yaml",
        models_source: str = "params/models.yaml",
        *,
        outside_ok: bool = False,
    ) -> None:
        """Every name must be a roster entry: stop with a message naming the file, the field, the name,
        the closest roster name and the fix (every unknown name at once). A seat played from outside
        the pipeline (`bot: human` or `agent`) is refused: a scheduled game would wait for it;
        `outside_ok` allows it (a game drawn for such a seat, pipeline.core.run.contract.seat_game)."""
        known = [e.name for e in models.roster]
        named = [*indexed("players", self.players), *indexed("fill", self.fill)]
        problems = roster_problems(named, known, source, models_source, None if outside_ok else models.outside())
        seats = self.rules.seats
        if self.schedule.adaptive.enabled and len(self.players) < seats:
            problems.append(
                f"{source}: schedule.adaptive.enabled is true but players has {len(self.players)} player(s), "
                f"fewer than rules.seats={seats}: the adaptive rounds seat tables of distinct players from "
                f"players; list at least {seats} players there, or set schedule.adaptive.enabled: false"
            )
        if problems:
            raise ParamsError("\n".join(problems))


def load_whoisspy(path: str | Path = "params/whoisspy.yaml") -> WhoIsSpyParams:
    return load_params(WhoIsSpyParams, path)
