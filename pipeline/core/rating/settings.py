"""The one TrueSkill settings model every benchmark's `rating:` params section uses.

Benchmarks differ in their defaults (the Elimination Game reproduces its original's prior, mu 4.0;
xent needs draws for equal map scores), not in what can be set. `with_defaults` makes a benchmark's
own model from this one, keeping every field's type, bounds and description; a benchmark adds only
the fields that are its own (e.g. Who is Spy's `matchup`).

`AdaptiveSettings` is the `adaptive:` block of a benchmark's schedule: the adaptive schedule's
settings and budgets (docs/adaptive.md), off by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model
from pydantic.fields import FieldInfo

from pipeline.core.artifacts.params import StrictParams
from pipeline.core.rating.multipass import RatingParams

if TYPE_CHECKING:
    from pipeline.core.rating.adaptive import AdaptiveSchedule


class TrueSkillSettings(StrictParams):
    mu: float = Field(25.0, description="TrueSkill prior mean")
    sigma: float = Field(25.0 / 3.0, gt=0, description="TrueSkill prior standard deviation")
    beta: float = Field(25.0 / 6.0, gt=0, description="TrueSkill performance noise")
    tau: float = Field(25.0 / 300.0, ge=0, description="TrueSkill dynamics noise")
    draw_probability: float = Field(
        0.0, ge=0.0, lt=1.0, description="TrueSkill draw probability in [0, 1) (0: games never tie)"
    )
    passes: int = Field(8, ge=1, le=10000, description="rating passes over seeded random game orders, averaged")
    bootstrap_resamples: int = Field(
        50, ge=0, le=10000, description="bootstrap resamples over games for rating and rank intervals (0: none)"
    )

    def rating_params(self) -> RatingParams:
        return RatingParams(self.mu, self.sigma, self.beta, self.tau, self.draw_probability)


def with_defaults(name: str, base: type[TrueSkillSettings] = TrueSkillSettings, **defaults: Any) -> type[Any]:
    """`base` with other default values (each field keeps its type, bounds and description).

    Returns a model class to subclass or use as a field's type, e.g.
    `class RatingSettings(with_defaults("EliminationRatingBase", mu=4.0, tau=0.0)): ...`.
    """
    fields: dict[str, Any] = {}
    for key, value in defaults.items():
        if key not in base.model_fields:
            raise TypeError(f"{base.__name__} has no field {key!r}; fields: {sorted(base.model_fields)}")
        info = base.model_fields[key]
        fields[key] = (info.annotation, FieldInfo.merge_field_infos(info, default=value))
    return create_model(name, __base__=base, **fields)


class AdaptiveSettings(StrictParams):
    """A benchmark's `adaptive:` params block: the adaptive schedule (docs/adaptive.md), off by default.

    A benchmark subclasses it for its own defaults and descriptions and reads it from its params; the
    run's round ledger (pipeline.core.run.rounds) decides each round with it. Every tournament ends:
    `max_games` and `max_rounds` are always finite, so a field that never separates still stops."""

    enabled: bool = Field(
        False,
        description="true: play adaptive rounds chosen from the results so far (docs/adaptive.md); "
        "false (the default): the fixed schedule, faithful to the reference",
    )
    tables_per_round: int = Field(
        1,
        ge=1,
        le=10000,
        description="a positive integer: games per round (a model sits at one table a round, so at most "
        "players // seats of them are played)",
    )
    z: float = Field(
        1.0,
        ge=0.0,
        le=10.0,
        description="a number from 0 to 10: neighbours by mu are separated when their intervals mu +- z*sigma "
        "no longer overlap; the rounds stop when every neighbouring pair is",
    )
    max_games: int = Field(200, ge=1, description="a positive integer: stop once this many games were chosen")
    max_rounds: int = Field(100, ge=1, description="a positive integer: stop after this many rounds")
    max_cost_usd: float | None = Field(
        None,
        gt=0.0,
        description="a positive number, or null (no limit): stop once the finished games' model calls cost "
        "this many dollars (their calls tables' cost_usd)",
    )
    seed: int = Field(0, ge=0, description="a non-negative integer seeding every choice of the rounds")

    def schedule(self, seats: int) -> AdaptiveSchedule:
        """The core schedule these settings describe, for tables of `seats` (budgets are the ledger's;
        the module is imported here, so loading params never loads the rating engine)."""
        from pipeline.core.rating.adaptive import AdaptiveSchedule

        return AdaptiveSchedule(seats=seats, tables_per_round=self.tables_per_round, z=self.z)

    def identity(self) -> dict[str, Any]:
        """What decides the rounds (everything but `enabled`): its digest goes into every round file,
        and a change lets a stopped tournament go on (e.g. a raised `max_games`)."""
        return self.model_dump(exclude={"enabled"})
