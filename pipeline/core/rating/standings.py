"""What an adaptive schedule knows and chooses: a model's standing, the schedule's rules, a round's
tables. Their own module so that the schedule's choosers (`adaptive.next_round`,
`one_against_rest.one_against_rest_round`) share them without importing each other."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pipeline.core.rating.events import RatingParams

__all__ = ["AdaptiveSchedule", "Round", "Standing", "new_standing"]


@dataclass(frozen=True)
class Standing:
    """What the schedule knows of one model: its current rating, games played, and how many
    rounds in a row it has sat out (0: it played in the last round)."""

    mu: float
    sigma: float
    games: int = 0
    idle_rounds: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mu) and math.isfinite(self.sigma)) or self.sigma <= 0:
            raise ValueError(f"a Standing needs a finite mu and a positive sigma, got {self.mu!r}, {self.sigma!r}")
        if self.games < 0 or self.idle_rounds < 0:
            raise ValueError(f"games and idle_rounds must be >= 0, got {self.games}, {self.idle_rounds}")


def new_standing(params: RatingParams) -> Standing:
    """A model with no games: the prior. Its sigma is the largest any model can have (TrueSkill
    only shrinks sigma when tau is 0, and barely grows it otherwise), which is what gives a new
    model its placement games first (`next_round` anchors tables on the largest sigma)."""
    return Standing(mu=params.mu, sigma=params.sigma)


@dataclass(frozen=True)
class AdaptiveSchedule:
    """The shape of a round and the rules of the adaptive schedule.

    `seats`: players per game (2 = pairwise, SKATE; 6 = Who is Spy's table; 8 = Elimination).
    `tables_per_round`: games played per round (at most players // seats are seated).
    `z`: two models are separable when ``mu_a - z*sigma_a > mu_b + z*sigma_b``.
    `max_idle_rounds`: a model that has sat out this many rounds is seated first next round.
    `adjacency_bonus`: extra weight (as a multiple) for neighbours by mu that are not separable.
    `budget_games`: stop after this many games (None: only the separation rule stops).
    """

    seats: int = 2
    tables_per_round: int = 1
    z: float = 1.0
    max_idle_rounds: int = 3
    adjacency_bonus: float = 1.0
    budget_games: int | None = None

    def __post_init__(self) -> None:
        if self.seats < 2:
            raise ValueError(f"seats must be >= 2, got {self.seats}")
        if self.tables_per_round < 1:
            raise ValueError(f"tables_per_round must be >= 1, got {self.tables_per_round}")
        if not (math.isfinite(self.z) and self.z >= 0):
            raise ValueError(f"z must be a finite number >= 0, got {self.z!r}")
        if self.max_idle_rounds < 0:
            raise ValueError(f"max_idle_rounds must be >= 0, got {self.max_idle_rounds}")
        if not (math.isfinite(self.adjacency_bonus) and self.adjacency_bonus >= 0):
            raise ValueError(f"adjacency_bonus must be a finite number >= 0, got {self.adjacency_bonus!r}")
        if self.budget_games is not None and self.budget_games < 0:
            raise ValueError(f"budget_games must be >= 0 or None, got {self.budget_games}")


@dataclass(frozen=True)
class Round:
    """One round's tables, each a tuple of model names (seat order as chosen)."""

    index: int
    tables: tuple[tuple[str, ...], ...]

    @property
    def players(self) -> frozenset[str]:
        return frozenset(name for table in self.tables for name in table)
