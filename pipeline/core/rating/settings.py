"""The one TrueSkill settings model every benchmark's `rating:` params section uses.

Benchmarks differ in their defaults (the Elimination Game reproduces its original's prior, mu 4.0;
xent needs draws for equal map scores), not in what can be set. `with_defaults` makes a benchmark's
own model from this one, keeping every field's type, bounds and description; a benchmark adds only
the fields that are its own (e.g. Who is Spy's `matchup`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model
from pydantic.fields import FieldInfo

from pipeline.core.artifacts.params import StrictParams
from pipeline.core.rating.multipass import RatingParams


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
