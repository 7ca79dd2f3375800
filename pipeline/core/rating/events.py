"""What the rating core rates: TrueSkill's settings and the three shapes of a rated game.

A benchmark turns its games into these events (a free-for-all ranking, a pairwise result, a team
match); `multipass` and `fast` rate them. Kept apart so both engines import it without importing
each other.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import trueskill

__all__ = ["FreeForAll", "Pairwise", "RatingEvent", "RatingParams", "TeamMatch"]


@dataclass(frozen=True)
class RatingParams:
    """TrueSkill environment settings; the defaults are trueskill's own defaults."""

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    tau: float = 25.0 / 300.0
    draw_probability: float = 0.10

    def __post_init__(self) -> None:
        # Fail at construction rather than deep inside a rating pass.
        for name in ("mu", "sigma", "beta", "tau", "draw_probability"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"RatingParams.{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"RatingParams.{name} must be finite, got {value!r}")
            # Store plain floats so equality, hashing and repr do not depend on the input type.
            object.__setattr__(self, name, float(value))
        if self.sigma <= 0:
            raise ValueError(f"RatingParams.sigma must be > 0, got {self.sigma!r}")
        if self.beta <= 0:
            raise ValueError(f"RatingParams.beta must be > 0, got {self.beta!r}")
        if self.tau < 0:
            raise ValueError(f"RatingParams.tau must be >= 0, got {self.tau!r}")
        if not 0.0 <= self.draw_probability < 1.0:
            raise ValueError(f"RatingParams.draw_probability must be in [0, 1), got {self.draw_probability!r}")

    def env(self) -> trueskill.TrueSkill:
        """A fresh trueskill environment with these settings (default backend)."""
        return trueskill.TrueSkill(
            mu=self.mu,
            sigma=self.sigma,
            beta=self.beta,
            tau=self.tau,
            draw_probability=self.draw_probability,
        )

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> RatingParams:
        """Build from a config mapping; unknown keys are errors so typos are not ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        for key in d:
            if key not in known:
                raise ValueError(f"unknown rating parameter {key!r}; expected some of {sorted(known)}")
        return cls(**{key: d[key] for key in d})


def _as_rank(player: str, value: Any) -> int:
    """Ranks must be true integers so that 'equal rank' means exactly a tie."""
    if isinstance(value, bool):
        raise ValueError(f"rank for {player!r} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"rank for {player!r} must be an integer, got {value!r}") from None


@dataclass(frozen=True)
class FreeForAll:
    """One game among several players: player -> rank, lower is better, equal ranks tie."""

    ranks: Mapping[str, int]

    def __post_init__(self) -> None:
        if len(self.ranks) < 2:
            raise ValueError(f"a FreeForAll needs at least 2 players, got {len(self.ranks)}")
        cleaned: dict[str, int] = {}
        for player, rank in self.ranks.items():
            if not isinstance(player, str) or not player:
                raise ValueError(f"player names must be non-empty strings, got {player!r}")
            cleaned[player] = _as_rank(player, rank)
        # Own a private copy so later mutation of the caller's dict cannot change the event.
        object.__setattr__(self, "ranks", cleaned)

    @property
    def players(self) -> tuple[str, ...]:
        """Players in sorted name order (the order used for the trueskill call)."""
        return tuple(sorted(self.ranks))

    @property
    def has_tie(self) -> bool:
        return len(set(self.ranks.values())) < len(self.ranks)


@dataclass(frozen=True)
class Pairwise:
    """One 1v1 game between `a` and `b`; `outcome` names the winner or says "draw"."""

    a: str
    b: str
    outcome: Literal["a", "b", "draw"]

    def __post_init__(self) -> None:
        for name in (self.a, self.b):
            if not isinstance(name, str) or not name:
                raise ValueError(f"player names must be non-empty strings, got {name!r}")
        if self.a == self.b:
            raise ValueError(f"a Pairwise game needs two different players, got {self.a!r} twice")
        if self.outcome not in ("a", "b", "draw"):
            raise ValueError(f"Pairwise outcome must be 'a', 'b' or 'draw', got {self.outcome!r}")

    @property
    def players(self) -> tuple[str, ...]:
        return (self.a, self.b)

    @property
    def has_tie(self) -> bool:
        return self.outcome == "draw"


@dataclass(frozen=True)
class TeamMatch:
    """One game between two teams of distinct players (e.g. a spy against its civilians);
    `outcome` names the winning team or says "draw". Rated by trueskill's team update (the
    reference method only: the fast core vectorizes single-player teams)."""

    a: tuple[str, ...]
    b: tuple[str, ...]
    outcome: Literal["a", "b", "draw"]

    def __post_init__(self) -> None:
        a, b = tuple(sorted(self.a)), tuple(sorted(self.b))
        for name in (*a, *b):
            if not isinstance(name, str) or not name:
                raise ValueError(f"player names must be non-empty strings, got {name!r}")
        if not a or not b:
            raise ValueError("a TeamMatch needs at least one player on each team")
        if len(set(a)) < len(a) or len(set(b)) < len(b) or set(a) & set(b):
            raise ValueError(f"a TeamMatch needs distinct players, one team each: {a} vs {b}")
        if self.outcome not in ("a", "b", "draw"):
            raise ValueError(f"TeamMatch outcome must be 'a', 'b' or 'draw', got {self.outcome!r}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    @property
    def players(self) -> tuple[str, ...]:
        return (*self.a, *self.b)

    @property
    def has_tie(self) -> bool:
        return self.outcome == "draw"


RatingEvent: TypeAlias = FreeForAll | Pairwise | TeamMatch
