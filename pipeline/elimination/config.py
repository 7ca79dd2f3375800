"""`params/elimination.yaml`: the rules' numbers, who plays in which seats, and the rating."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from pipeline.core.artifacts import ParamsError, load_params, roster_hint
from pipeline.core.artifacts.params import StrictParams as Strict
from pipeline.core.artifacts.params import outside_seat_problem
from pipeline.core.models import GameBudgets, ModelsParams
from pipeline.core.rating import with_defaults
from pipeline.core.rating.settings import AdaptiveSettings

#: Bumped whenever the rules or the prompts change: it is part of every game id, so a changed
#: game is a new game and never overwrites an old result.
GAME_VERSION = "elimination-v2"  # v2: anonymous votes, unenforced limits, logs in the original format


class WordLimits(Strict):
    public: int = Field(80, ge=1, description="a positive integer: words of a public statement")
    private: list[int] = Field(
        default_factory=lambda: [70, 50, 30],
        description="three positive integers: words of a private message in subrounds 2, 3 and 4",
    )
    tiebreak: int = Field(80, ge=1, description="a positive integer: words of a tie-break statement")
    plea: int = Field(80, ge=1, description="a positive integer: words of a finalist's plea")
    memory: int = Field(60, ge=1, description="a positive integer: words of a memory note (variant memory)")
    cut: bool = Field(
        False,
        description="false (the original): limits are stated in the prompts, not enforced, "
        "and lengths recorded; true (ours): replies are cut at the limit",
    )

    @field_validator("private")
    @classmethod
    def _three_subrounds(cls, value: list[int]) -> list[int]:
        if len(value) != 3 or any(v < 1 for v in value):
            raise ValueError("private needs exactly three positive word limits, e.g. [70, 50, 30]")
        return value


class ReplyTokens(GameBudgets):
    """The game's visible reply budget (max_tokens) per kind of move. The original sets none: its
    prompts state word limits and cap nothing, so every field defaults to null, and each model's
    roster entry decides what it sends (pipeline.core.models.reply_budgets: its own `move_max_tokens`, else its
    `max_tokens`, else 4096 visible tokens, plus a reasoning model's allowance). An integer caps
    that kind of move for every model (an entry's own `move_max_tokens` still replaces it)."""

    statement: int | None = Field(
        None,
        ge=1,
        description="a positive integer, or null (no cap, the original): visible tokens of public "
        "statements, tie-break statements, pleas and memory notes",
    )
    preference: int | None = Field(
        None,
        ge=1,
        description="a positive integer, or null (no cap, the original): visible tokens of a partner ranking",
    )
    private: int | None = Field(
        None,
        ge=1,
        description="a positive integer, or null (no cap, the original): visible tokens of a private message",
    )
    vote: int | None = Field(
        None,
        ge=1,
        description="a positive integer, or null (no cap, the original): visible tokens of a vote with "
        "its reason (votes, re-votes and jury votes)",
    )


class AdaptiveParams(AdaptiveSettings):
    """`schedule.adaptive`: rounds of tables chosen from the results so far among `schedule.players`
    (docs/adaptive.md). Off by default: the fixed lineups are the original's. When on, the fixed
    lineups (`lineups`, `lineups_per_player`, `rotations`, `repeats`) are not played: the rounds
    are the schedule."""


class ScheduleParams(Strict):
    lineups: list[list[str]] = Field(
        default_factory=list,
        description="explicit lineups: each a list of roster names, one per seat (P1 first)",
    )
    players: list[str] = Field(
        default_factory=list,
        description="roster names for generated lineups, in the order they joined (append new ones at the end)",
    )
    lineups_per_player: int = Field(
        0, ge=0, description="generated lineups anchored on each player of `players` (0: none)"
    )
    rotations: int = Field(
        8, ge=1, description="seat rotations played per lineup; equal to `seats` for exact seat balance"
    )
    repeats: int = Field(1, ge=1, description="independent replays (new seeds) of every seating")
    max_seats_per_player: int = Field(
        1, ge=1, description="how many seats of one game a roster entry may fill (1: distinct players)"
    )
    adaptive: AdaptiveParams = Field(
        default_factory=AdaptiveParams,
        description="the adaptive schedule: enabled (false: the fixed lineups), tables_per_round, z, max_games, "
        "max_rounds, max_cost_usd, seed; its pool is `players`",
    )


if TYPE_CHECKING:  # to mypy the base is what with_defaults builds it from: TrueSkillSettings
    from pipeline.core.rating.settings import TrueSkillSettings

    _RatingBase = TrueSkillSettings
else:
    _RatingBase = with_defaults(
        "EliminationTrueSkill",
        mu=4.0,
        sigma=8.3333,
        beta=4.1667,
        tau=0.0,
        passes=100,
        bootstrap_resamples=50,
    )


class RatingSettings(_RatingBase):
    """The original's TrueSkill: its prior (mu 4.0; its README's first versions used 5.0), no dynamics,
    no draws (final ranks never tie), many passes from fresh priors."""

    aggregate: Literal["mean", "median"] = Field(
        "mean", description="what summarizes mu and sigma over the passes: mean or median"
    )
    ranks: Literal["recorded", "derived"] = Field(
        "recorded",
        description="recorded: final_results' ranks and partial points, as the original's "
        "leaderboard; derived: re-derived from the records (differences listed in import_report.json)",
    )
    bootstrap_passes: int = Field(5, ge=1, description="passes inside each bootstrap resample")
    seed: int = Field(0, ge=0, description="a non-negative integer seeding pass orders and resamples")


class EliminationParams(Strict):
    seats: int = Field(8, ge=3, le=26, description="seats per game (3 to 26; the benchmark uses 8)")
    words: WordLimits = Field(default_factory=WordLimits, description="word limits of every kind of message")
    reply_tokens: ReplyTokens = Field(
        default_factory=ReplyTokens,
        description="the game's visible reply budget per kind of move: statement, "
        "preference, private, vote; each null (the original: no cap, the word limits are stated in the prompts) "
        "or a positive integer capping that move for every model",
    )
    history_rounds: int = Field(
        0, ge=0, description="rounds of public and private history shown in prompts (0: the whole game)"
    )
    votes: Literal["anonymous", "public"] = Field(
        "anonymous",
        description="anonymous (the original): only the tallies are announced; public (ours): "
        "who voted for whom is announced too",
    )
    variant: Literal["standard", "public_only", "memory"] = Field(
        "standard",
        description="standard; public_only (the original's variant without pairing and private "
        "talk); memory (the original's variant where a seat writes a private note before each vote and "
        "sees its notes in later rounds)",
    )
    memory_players: list[str] = Field(
        default_factory=list,
        description="variant memory: roster names that keep notes (empty: every seat); "
        "the original gave memory to one model per game",
    )
    schedule: ScheduleParams = Field(default_factory=ScheduleParams, description="lineups, rotations, repeats")
    rating: RatingSettings = Field(default_factory=RatingSettings, description="TrueSkill settings and passes")

    @model_validator(mode="after")
    def _rotations_fit(self) -> EliminationParams:
        if self.schedule.rotations > self.seats:
            raise ValueError(f"schedule.rotations ({self.schedule.rotations}) cannot exceed seats ({self.seats})")
        return self

    def check_roster(
        self,
        models: ModelsParams,
        source: str = "params/elimination.yaml",
        models_source: str = "params/models.yaml",
        *,
        outside_ok: bool = False,
    ) -> None:
        """Every name must be a roster entry and every lineup fit the seats; stop with a message naming
        the file, the field, the value and the fix (every problem at once). A seat played from
        outside the pipeline (`bot: human` or `agent`) is refused: a scheduled game would wait for
        it; `outside_ok` allows it (a game drawn for such a seat,
        pipeline.core.run.contract.seat_game)."""
        known = [e.name for e in models.roster]
        outside = {} if outside_ok else models.outside()
        sched = self.schedule
        problems = []
        for i, lineup in enumerate(sched.lineups):
            where = f"{source}: schedule.lineups[{i}]"
            if len(lineup) != self.seats:
                problems.append(
                    f"{where}: has {len(lineup)} names but seats is {self.seats}; list one roster name per seat"
                )
            for name in dict.fromkeys(lineup):
                if name in outside:
                    problems.append(outside_seat_problem(where, name, outside[name], source, models_source))
                elif name not in known:
                    problems.append(
                        f"{where}: {name!r} is not in the roster of {models_source}; "
                        f"{roster_hint(name, known, models_source)}"
                    )
            for name, count in Counter(lineup).items():
                if count > sched.max_seats_per_player:
                    problems.append(
                        f"{where}: {name!r} fills {count} seats but schedule.max_seats_per_player is "
                        f"{sched.max_seats_per_player}; raise it to let one player fill several seats"
                    )
        for field, names in (("schedule.players", sched.players), ("memory_players", self.memory_players)):
            for i, name in enumerate(names):
                if name in outside:
                    problems.append(
                        outside_seat_problem(f"{source}: {field}[{i}]", name, outside[name], source, models_source)
                    )
                elif name not in known:
                    problems.append(
                        f"{source}: {field}[{i}]: {name!r} is not in the roster of {models_source}; "
                        f"{roster_hint(name, known, models_source)}"
                    )
        if len(set(sched.players)) != len(sched.players):
            problems.append(f"{source}: schedule.players lists a name twice; list each player once")
        if sched.adaptive.enabled and len(sched.players) < self.seats:
            problems.append(
                f"{source}: schedule.adaptive.enabled is true but schedule.players has {len(sched.players)} "
                f"player(s), fewer than seats={self.seats}: the adaptive rounds seat tables from schedule.players; "
                f"list at least {self.seats} players there, or set schedule.adaptive.enabled: false"
            )
        if sched.lineups_per_player and len(sched.players) < self.seats:
            problems.append(
                f"{source}: schedule.players has {len(sched.players)} players but generated lineups need "
                f"at least seats={self.seats}; list more players or write explicit schedule.lineups"
            )
        if problems:
            raise ParamsError("\n".join(problems))


def load_elimination_params(path: str | Path = "params/elimination.yaml") -> EliminationParams:
    return load_params(EliminationParams, path)
