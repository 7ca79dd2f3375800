"""A game's id depends on what changes that benchmark's games, and only that (RosterEntry.game_identity).

For each of the four benchmarks a small roster is scheduled, then every roster field is changed
one at a time (each sampling field, each benchmark's per-move budget, each kind of `extra` key,
the transport settings, the rest of models.yaml, an entry no game seats): the ids of the games
that seat the changed entry change exactly when the field decides that benchmark's games, and
otherwise no id changes. The fields are read from the pydantic models, so a field added later
fails here until it is classified and given a change."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.models.reasoning_seen import SNAPSHOT_ENV, load_sightings, seen
from pipeline.core.models.roster import ModelsParams, RosterEntry, Sampling
from pipeline.elimination.config import EliminationParams
from pipeline.elimination.schedule import build_schedule as elimination_schedule
from pipeline.skate.config import SkateParams
from pipeline.skate.schedule import build_schedule as skate_schedule
from pipeline.whoisspy.config import WhoIsSpyParams
from pipeline.whoisspy.schedule import build_schedule as whoisspy_schedule
from pipeline.xent.config import XentParams
from pipeline.xent.schedule import build_schedule as xent_schedule
from tests.conftest import models_params

BENCHMARKS = ("elimination", "whoisspy", "skate", "xent")
EVERY = frozenset(BENCHMARKS)
NONE: frozenset[str] = frozenset()
MODEL, BOT = "model-a", "bot-a"  # the two seated entries whose fields change
FILL = [{"name": "fill-0", "bot": "heuristic"}, *({"name": f"fill-{i}", "bot": "random"} for i in range(1, 6))]
BASE_ROSTER: list[dict[str, Any]] = [
    {
        "name": MODEL,
        "model": "openai/model-a",
        # budgets of every benchmark, as the demo's embedded model has: each benchmark reads its own
        "sampling": {"move_max_tokens": {f"{b}.statement": 16 for b in BENCHMARKS}},
    },
    {"name": BOT, "bot": "graded", "bot_options": {"skill": 0.5}},
    *FILL,
]

#: job id -> the roster names it seats, per benchmark, for a roster and the names of the two entries
Scheduled = dict[str, frozenset[str]]


def elimination_jobs(models: ModelsParams, model: str, bot: str) -> Scheduled:
    lineup = [model, bot, *(f["name"] for f in FILL)]
    params = EliminationParams.model_validate({"schedule": {"lineups": [lineup], "rotations": 2}})
    return {g.game_id: frozenset(g.seats) for g in elimination_schedule(params, models)}


def whoisspy_jobs(models: ModelsParams, model: str, bot: str) -> Scheduled:
    params = WhoIsSpyParams.model_validate(
        {"players": [model, bot], "fill": [f["name"] for f in FILL[:4]], "variants": ["baseline"]}
    )
    return {g.game_id: frozenset(g.seats) for g in whoisspy_schedule(params, models)}


def skate_jobs(models: ModelsParams, model: str, bot: str) -> Scheduled:
    params = SkateParams.model_validate({"players": [model, bot], "answer_only": ["fill-1"], "rounds": 2})
    schedule = skate_schedule(params, models)
    found = {j.job_id: frozenset({j.setter}) for j in schedule.generate.values()}
    found |= {j.job_id: frozenset({j.answerer}) for j in schedule.answers.values()}
    return found | {j.job_id: frozenset(params.players) for j in schedule.rounds.values()}


def xent_jobs(models: ModelsParams, model: str, bot: str) -> Scheduled:
    # the model-free judge: a schedule names the judge in its ids and never loads it
    params = XentParams.model_validate(
        {
            "players": [model, bot],
            "opponent": "fill-0",
            "games": ["condense", "interception"],
            "maps_per_game": 1,
            "rounds": 1,
            "judge": "word",
        }
    )
    return {
        j.job_id: frozenset({j.player, *([j.opponent] if j.opponent else [])})
        for j in xent_schedule(params, models).jobs
    }


SCHEDULES: dict[str, Callable[[ModelsParams, str, str], Scheduled]] = {
    "elimination": elimination_jobs,
    "whoisspy": whoisspy_jobs,
    "skate": skate_jobs,
    "xent": xent_jobs,
}


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes`, mappings merged key by key (a budget added beside the others)."""
    found = dict(base)
    for key, value in changes.items():
        found[key] = merged(found.get(key, {}), value) if isinstance(value, dict) else value
    return found


@dataclass(frozen=True)
class Change:
    """One roster field changed on one entry, and the benchmarks whose games it decides."""

    field: str  # a RosterEntry field, or `sampling.<Sampling field>`
    entry: str  # MODEL or BOT
    changes: dict[str, Any]
    decides: frozenset[str]
    why: str = ""

    @property
    def label(self) -> str:
        return f"{self.entry}:{self.field}:{self.why or json.dumps(self.changes, sort_keys=True)}"

    def roster(self) -> list[dict[str, Any]]:
        return [merged(e, self.changes) if e["name"] == self.entry else e for e in BASE_ROSTER]


#: a value other than the base roster's, per Sampling field but move_max_tokens (per key, below)
SAMPLING_VALUES: dict[str, Any] = {
    "temperature": 0.2,
    "top_p": 0.9,
    "max_tokens": 64,
    "reasoning_effort": "low",
    "reasoning": True,
    "reasoning_tokens": 1024,
}
CHANGES: list[Change] = [
    Change("name", MODEL, {"name": "model-b"}, EVERY, "it seeds every move"),
    Change("model", MODEL, {"model": "openai/model-z"}, EVERY),
    Change("bot", BOT, {"bot": "random"}, EVERY),
    Change("bot_options", BOT, {"bot_options": {"skill": 0.7}}, EVERY),
    Change("api_key_env", MODEL, {"api_key_env": "OTHER_OPENAI_KEY"}, NONE),
    Change("api_key_env", BOT, {"api_key_env": "OTHER_OPENAI_KEY"}, NONE),
    Change("extra", MODEL, {"extra": {"top_k": 40}}, EVERY, "a provider argument reaches the request"),
    Change("extra", MODEL, {"extra": {"mock_response": "P1"}}, EVERY, "an answer reaches the request"),
    Change("extra", MODEL, {"extra": {"api_base": "http://10.0.0.2:9000/v1"}}, NONE, "an endpoint"),
    Change("extra", MODEL, {"extra": {"api_version": "2024-10-01", "max_retries": 3}}, NONE, "transport"),
    Change("extra", MODEL, {"extra": {"input_cost_per_token": 1e-6}}, NONE, "a price"),
    Change("extra", BOT, {"extra": {"top_k": 40}}, NONE, "a bot sends no request"),
    *(Change(f"sampling.{k}", MODEL, {"sampling": {k: v}}, EVERY) for k, v in SAMPLING_VALUES.items()),
    *(Change(f"sampling.{k}", BOT, {"sampling": {k: v}}, NONE, "a bot") for k, v in SAMPLING_VALUES.items()),
    *(
        Change("sampling.move_max_tokens", MODEL, {"sampling": {"move_max_tokens": {f"{b}.vote": 10}}}, frozenset({b}))
        for b in BENCHMARKS
    ),
    Change(
        "sampling.move_max_tokens", MODEL, {"sampling": {"move_max_tokens": {"vote": 10}}}, EVERY, "every benchmark's"
    ),
    Change("sampling.move_max_tokens", BOT, {"sampling": {"move_max_tokens": {"vote": 10}}}, NONE, "a bot"),
]
#: the rest of models.yaml, none of which is any entry's identity
PARAMS_CHANGES: dict[str, dict[str, Any]] = {
    "providers": {"openai": {"max_concurrency": 1, "rpm": 10, "tpm": 1000, "adaptive": False}},
    "gateway": {
        "retries": 1,
        "timeout_s": 5.0,
        "budget_usd": 1.0,
        "prices": {"openai/model-a": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}},
        "batch": {"enabled": True},
    },
    "check": {"prompt": "Say hi", "expect": "hi", "max_tokens": 3},
    "parallel": {"jobs": 1, "games_per_job": 2},
}


@pytest.fixture(scope="module")
def baseline() -> dict[str, Scheduled]:
    models = models_params(BASE_ROSTER)
    return {b: SCHEDULES[b](models, MODEL, BOT) for b in BENCHMARKS}


def test_every_roster_field_is_classified_and_changed_here() -> None:
    classified: list[tuple[type[RosterEntry] | type[Sampling], str]] = [(RosterEntry, ""), (Sampling, "sampling.")]
    for model, prefix in classified:
        fields = set(model.model_fields)
        assert not model.GAME_FIELDS & model.TRANSPORT_FIELDS, model.__name__
        assert fields - model.GAME_FIELDS - model.TRANSPORT_FIELDS == set(), (
            f"{model.__name__}: add the field to GAME_FIELDS (it decides games) or TRANSPORT_FIELDS (never)"
        )
        assert model.GAME_FIELDS | model.TRANSPORT_FIELDS == fields, f"{model.__name__}: a set names no field"
        for name in fields - {"sampling"}:  # the sampling is changed field by field
            changes = [c for c in CHANGES if c.field == f"{prefix}{name}"]
            assert changes, f"{prefix}{name}: add a Change for it to CHANGES"
            if name in model.GAME_FIELDS:
                assert any(c.decides for c in changes), f"{prefix}{name} decides games: a change must show it"
            else:
                assert not any(c.decides for c in changes), f"{prefix}{name} decides no game"
    assert set(ModelsParams.model_fields) - {"roster"} == set(PARAMS_CHANGES), "add a change of the new field"


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.label)
def test_an_id_changes_exactly_when_the_field_decides_the_benchmarks_games(
    change: Change, baseline: dict[str, Scheduled]
) -> None:
    models = models_params(change.roster())
    names = {MODEL: MODEL, BOT: BOT, **({MODEL: change.changes["name"]} if "name" in change.changes else {})}
    for bench in BENCHMARKS:
        before = baseline[bench]
        after = SCHEDULES[bench](models, names[MODEL], names[BOT])
        if bench in change.decides:
            seated = [job for job, seats in after.items() if names[change.entry] in seats]
            assert seated and not set(seated) & set(before), f"{bench}: the games of {change.entry} kept their ids"
        else:
            assert list(after) == list(before), f"{bench}: {change.label} changed ids"


@pytest.mark.parametrize("params_field", sorted(PARAMS_CHANGES))
def test_the_rest_of_the_models_file_changes_no_id(params_field: str, baseline: dict[str, Scheduled]) -> None:
    models = models_params(BASE_ROSTER, **{params_field: PARAMS_CHANGES[params_field]})
    for bench in BENCHMARKS:
        assert list(SCHEDULES[bench](models, MODEL, BOT)) == list(baseline[bench]), (bench, params_field)


def test_an_entry_no_game_seats_changes_no_id(baseline: dict[str, Scheduled]) -> None:
    unseated = {"name": "unseated", "model": "openai/unseated", "sampling": {"move_max_tokens": {"vote": 3}}}
    models = models_params([*BASE_ROSTER, unseated])
    for bench in BENCHMARKS:
        assert list(SCHEDULES[bench](models, MODEL, BOT)) == list(baseline[bench]), bench


def exact_answers(models: ModelsParams) -> dict[str, tuple[str, str]]:
    """SKATE's answer jobs under exact answering: id -> (answerer, the mode it answers in)."""
    params = SkateParams.model_validate({"players": [MODEL, BOT], "rounds": 1, "answering": {"mode": "exact"}})
    return {j.job_id: (j.answerer, j.mode) for j in skate_schedule(params, models).answers.values()}


def test_a_reasoning_sighting_renames_no_game(
    baseline: dict[str, Scheduled], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sighting adds a reasoning allowance to later requests but is no part of an id: the ids are
    the params' alone, so the games played before it are not played again. Only SKATE's exact
    answering notices: a reasoning API refuses log-probabilities, so the model answers in the
    sampled mode, other answer jobs (their id names the mode) than the exact ones it had."""
    models = models_params(BASE_ROSTER, gateway={"cache_dir": str(tmp_path / "cache")})
    exact_before = exact_answers(models)
    monkeypatch.setenv(SNAPSHOT_ENV, json.dumps([["openai/model-a", "", "a reply with 90 hidden reasoning tokens"]]))
    load_sightings(models)
    try:
        assert seen(models.entry(MODEL)) is not None
        for bench in BENCHMARKS:
            assert list(SCHEDULES[bench](models, MODEL, BOT)) == list(baseline[bench]), bench
        exact_after = exact_answers(models)
    finally:
        monkeypatch.delenv(SNAPSHOT_ENV)
        load_sightings(models)  # this process forgets it: the cache folder has none
    assert sorted(exact_before.values()) == [(BOT, "exact"), (MODEL, "exact")]
    assert sorted(exact_after.values()) == [(BOT, "exact"), (MODEL, "sampled")]
    assert [j for j, (who, _) in exact_after.items() if who == BOT] == [
        j for j, (who, _) in exact_before.items() if who == BOT
    ]
