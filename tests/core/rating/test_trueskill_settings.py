"""One TrueSkill settings model: every benchmark's `rating:` section has the same fields, bounds and
errors, with its own defaults."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.core.rating.settings import TrueSkillSettings, with_defaults
from pipeline.elimination.config import RatingSettings as EliminationRating
from pipeline.skate.config import RankingParams as SkateRating
from pipeline.whoisspy.config import RatingSettings as WhoIsSpyRating
from pipeline.xent.config import RatingSettings as XentRating

BENCHMARKS_BY_NAME = {
    "elimination": EliminationRating,
    "skate": SkateRating,
    "whoisspy": WhoIsSpyRating,
    "xent": XentRating,
}


@pytest.mark.parametrize("bench", sorted(BENCHMARKS_BY_NAME))
def test_every_benchmark_rates_with_the_core_fields(bench: str) -> None:
    model = BENCHMARKS_BY_NAME[bench]
    assert issubclass(model, TrueSkillSettings)
    assert set(TrueSkillSettings.model_fields) <= set(model.model_fields)
    with pytest.raises(ValidationError, match="sigma"):
        model(sigma=0)
    with pytest.raises(ValidationError, match="passes"):
        model(passes=0)


def test_benchmark_defaults_differ_where_the_originals_do() -> None:
    assert EliminationRating().rating_params().mu == 4.0 and EliminationRating().tau == 0.0
    assert WhoIsSpyRating().rating_params().mu == 25.0
    assert XentRating().draw_probability == 0.1 and SkateRating().draw_probability == 0.2
    with pytest.raises(ValidationError):
        XentRating(draw_probability=0.0)  # equal map scores need draws


def test_with_defaults_keeps_bounds_and_refuses_unknown_fields() -> None:
    model = with_defaults("Example", mu=10.0)
    assert model().mu == 10.0 and model().sigma == TrueSkillSettings().sigma
    with pytest.raises(ValidationError):
        model(beta=-1.0)
    with pytest.raises(TypeError, match="no field 'm'"):
        with_defaults("Typo", m=1.0)
