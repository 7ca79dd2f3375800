"""The metrics record: what a benchmark's `metrics.json` holds, and what the leaderboard reads.

Per model: its rating on the benchmark (`Rating`: TrueSkill mu and sigma, the bootstrap's mu and
rank intervals and the resamples behind them; none for a model in the benchmark's tables that no
rated game includes), its `games`, and the benchmark's own metrics (the headline ones its
declaration names, which the leaderboard shows, and any others).

`games` has one definition everywhere: the rated games of the rating table, i.e. the rating events
the model took part in (`events` of `core.rating.multipass.rating_summary`). It is the evidence
behind a rating interval (`interval_settled`), so a page that shows a model's games shows the
count its interval rests on. A benchmark's other counts have names of their own (Who is Spy's
`seats`); no benchmark metric may be called `games`.

The file keeps the flat shape DVC compares (`dvc metrics diff`): `{model: {key: value}}`, the
rating under the `trueskill_*` keys of docs/ratings.md, `games` as `trueskill_games`, the
benchmark's metrics beside them; a model without a rating has those keys null.

One rounding rule, applied when a record is built (so the record and its file say the same): a
float keeps `DIGITS` decimals and a NaN (a rate over nothing) is null; infinity is refused. A
benchmark may report a metric coarser where a measurement says the last digits are noise (Xent's
judge scores: docs/xent.md).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pipeline.core.artifacts.io import write_json_atomic
from pipeline.core.artifacts.params import InputError

#: decimals every float of a metrics.json keeps
DIGITS = 4

#: a benchmark metric's value: a number, a yes/no, null (undefined for this model), or a list of
#: names (Xent's `map_set_differs`)
MetricValue = int | float | bool | list[str] | None

#: the file's key of each rating field, and of `games`
RATING_KEYS: dict[str, str] = {
    "mu": "trueskill_mu",
    "sigma": "trueskill_sigma",
    "mu_lo": "trueskill_mu_lo",
    "mu_hi": "trueskill_mu_hi",
    "rank": "trueskill_rank",
    "rank_lo": "trueskill_rank_lo",
    "rank_hi": "trueskill_rank_hi",
    "resamples": "trueskill_resamples",
}
GAMES_KEY = "trueskill_games"
#: names a benchmark metric may not take: the record's own keys, and `games` (one definition)
RESERVED = frozenset({*RATING_KEYS.values(), GAMES_KEY, "games"})


class MetricsError(InputError):
    """A metrics.json that is not a metrics record; the message names the file, the model and the key."""


def rounded(value: Any) -> Any:
    """The rounding rule: a float to `DIGITS` decimals, NaN to None; anything else as it is."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, DIGITS)
    return value


class Rating(BaseModel):
    """A model's rating on one benchmark: the columns of `core.rating.multipass.rating_summary`."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    mu: float
    sigma: float = Field(ge=0)
    mu_lo: float | None = None  # the bootstrap's central 95% of mu; None without a bootstrap
    mu_hi: float | None = None
    rank: int = Field(ge=1, strict=True)  # by mu among the benchmark's models, 1 = best
    rank_lo: int | None = Field(None, ge=1, strict=True)  # the bootstrap's rank interval; None: none
    rank_hi: int | None = Field(None, ge=1, strict=True)
    resamples: int = Field(ge=0, strict=True)  # bootstrap resamples behind the intervals (0: no bootstrap)

    @field_validator("mu", "sigma", "mu_lo", "mu_hi", mode="before")
    @classmethod
    def _rounded(cls, value: Any) -> Any:
        return rounded(value)

    @model_validator(mode="after")
    def _intervals(self) -> Self:
        for lo, hi, name in ((self.mu_lo, self.mu_hi, "mu"), (self.rank_lo, self.rank_hi, "rank")):
            keys = f"trueskill_{name}_lo and trueskill_{name}_hi"
            if (lo is None) != (hi is None):
                raise ValueError(f"{keys} are both numbers or both null (got {lo} and {hi})")
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"{keys} must be in order (got {lo} > {hi})")
        return self

    @classmethod
    def from_summary(cls, row: Mapping[str, Any]) -> Rating:
        """From a row of `rating_summary` (its column names)."""
        return cls.model_validate({field: row[field] for field in RATING_KEYS})


class ModelMetrics(BaseModel):
    """One model's row of a metrics.json."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    rating: Rating | None  # None: in the benchmark's tables, but in no rated game
    games: int = Field(ge=0, strict=True)  # its rated games: the rating table's events (module docstring)
    metrics: dict[str, MetricValue] = Field(default_factory=dict)  # the benchmark's own, by key

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        taken = sorted(RESERVED.intersection(value))
        if taken:
            raise ValueError(
                f"{', '.join(taken)}: reserved for the record's own fields (games are the rated games, written as "
                f"{GAMES_KEY}); a benchmark's metric needs a name of its own"
            )
        return {key: rounded(item) for key, item in value.items()}

    @model_validator(mode="after")
    def _rated_games(self) -> Self:
        if self.rating is None and self.games:
            raise ValueError(f"{GAMES_KEY} is {self.games} but trueskill_mu is null: rated games give a rating")
        return self

    @classmethod
    def rated(cls, summary_row: Mapping[str, Any], metrics: Mapping[str, MetricValue]) -> ModelMetrics:
        """A rated model's row from its `rating_summary` row (games: its `events`) and its metrics."""
        return cls(rating=Rating.from_summary(summary_row), games=summary_row["events"], metrics=dict(metrics))

    @classmethod
    def unrated(cls, metrics: Mapping[str, MetricValue]) -> ModelMetrics:
        return cls(rating=None, games=0, metrics=dict(metrics))

    def to_json(self) -> dict[str, Any]:
        rating = self.rating.model_dump() if self.rating is not None else dict.fromkeys(RATING_KEYS)
        row: dict[str, Any] = {RATING_KEYS[field]: value for field, value in rating.items()}
        return {**self.metrics, **row, GAMES_KEY: self.games}


class MetricsRecord(BaseModel):
    """A benchmark's metrics.json: a row per model, by name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    models: dict[str, ModelMetrics]

    def rated(self) -> dict[str, tuple[Rating, ModelMetrics]]:
        """The models with a rating, by name."""
        return {name: (row.rating, row) for name, row in self.models.items() if row.rating is not None}

    def with_metrics(self, extra: Mapping[str, Mapping[str, MetricValue]]) -> MetricsRecord:
        """This record with more metrics for some of its models (an adaptive run's opponent rates)."""
        unknown = sorted(set(extra) - set(self.models))
        if unknown:
            raise KeyError(f"metrics for models the record does not hold: {unknown}")
        return MetricsRecord(
            models={
                name: ModelMetrics(rating=row.rating, games=row.games, metrics={**row.metrics, **extra.get(name, {})})
                for name, row in self.models.items()
            }
        )

    def to_json(self) -> dict[str, dict[str, Any]]:
        return {name: row.to_json() for name, row in self.models.items()}

    def write(self, path: str | os.PathLike[str]) -> None:
        """Atomically, as pretty key-sorted JSON (`write_json_atomic`): the same record, the same bytes."""
        write_json_atomic(path, self.to_json())

    @classmethod
    def from_json(cls, data: Any, source: str | os.PathLike[str]) -> MetricsRecord:
        """A parsed metrics.json as a record; a `MetricsError` names `source` and every failing key."""
        if not isinstance(data, dict):
            raise MetricsError(f"{source}: not a metrics record: {{model: {{metric: value}}}} expected")
        models: dict[str, ModelMetrics] = {}
        problems: list[str] = []
        for name, row in data.items():
            try:
                models[name] = _parse_row(row)
            except ValidationError as exc:
                problems += [f"{name}{line}" for line in _file_errors(exc)]
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
        if problems:
            shown = [f"  - {line}" for line in problems[:20]]
            more = [f"  - ... and {len(problems) - 20} more"] if len(problems) > 20 else []
            raise MetricsError(
                f"{source}: not a metrics record (pipeline/core/artifacts/metrics_record.py; the benchmark's rate "
                "step writes it):\n" + "\n".join(shown + more)
            )
        return cls(models=models)


def read_metrics(path: str | os.PathLike[str]) -> MetricsRecord:
    """Read a metrics.json as a record; a missing, unreadable or malformed file is a `MetricsError`
    that names the file (and, for a malformed one, each failing model and key)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MetricsError(f"{file}: missing (the benchmark's rate step writes it)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MetricsError(f"{file}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise MetricsError(f"{file}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return MetricsRecord.from_json(data, file)


def _parse_row(row: Any) -> ModelMetrics:
    if not isinstance(row, dict):
        raise ValueError(f"not an object of metrics (got {row!r})")
    missing = [key for key in (*RATING_KEYS.values(), GAMES_KEY) if key not in row]
    if missing:
        raise ValueError(f"{', '.join(missing)}: missing (every model's row carries them, null when undefined)")
    rating = {field: row[key] for field, key in RATING_KEYS.items()}
    unrated = all(value is None for value in rating.values())
    own = {key: value for key, value in row.items() if key not in RATING_KEYS.values() and key != GAMES_KEY}
    return ModelMetrics.model_validate({"rating": None if unrated else rating, "games": row[GAMES_KEY], "metrics": own})


def _file_errors(exc: ValidationError) -> list[str]:
    """One line per failing key, named as the file names it: ".trueskill_sigma: ..." (": ..." for the row)."""
    lines = []
    seen = set()
    for err in exc.errors():
        loc = err["loc"]
        message = err["msg"].removeprefix("Value error, ")
        if loc[:1] == ("rating",) and len(loc) > 1:
            where = "." + RATING_KEYS.get(str(loc[1]), str(loc[1]))
        elif loc[:1] == ("games",):
            where = "." + GAMES_KEY
        elif loc[:1] == ("metrics",) and len(loc) > 1:
            where = "." + str(loc[1])
            message = "a metric is a number, true/false, null or a list of names"
        else:  # a rule over several keys: the message names them
            lines.append(f": {message}")
            continue
        if where in seen:  # a metric fails each member of its union: say it once
            continue
        seen.add(where)
        value = repr(err.get("input"))
        value = value if len(value) <= 80 else value[:77] + "..."
        lines.append(f"{where}: {message} (got {value})")
    return lines
