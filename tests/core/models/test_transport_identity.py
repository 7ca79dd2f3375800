"""Moving a model to another endpoint replays none of its games: the connection details in a roster
entry's `extra` (api_base and the like) are in no game id, while what the model answers is."""

from __future__ import annotations

from pathlib import Path

import yaml

from pipeline.core.models.roster import RosterEntry, load_models
from pipeline.skate.config import load_skate
from pipeline.skate.schedule import build_schedule
from tests.conftest import REPO


def entry(**extra: object) -> RosterEntry:
    return RosterEntry(name="api-model", model="openai/some-model", extra=dict(extra))


def test_an_endpoint_is_in_no_game_id_and_the_model_behaviour_is(tmp_path: Path) -> None:
    here, there = (
        entry(api_base="http://127.0.0.1:8001/v1"),
        entry(api_base="http://10.0.0.2:9000/v1", api_version="2024-10-01"),
    )
    for benchmark in ("elimination", "whoisspy", "skate", "xent"):
        assert here.game_identity(benchmark) == there.game_identity(benchmark)
        # it changes the answers
        assert entry(mock_response="A").game_identity(benchmark) != entry().game_identity(benchmark)

    skate_ids = []
    for api_base in ("http://127.0.0.1:8001/v1", "http://10.0.0.2:9000/v1"):
        data = yaml.safe_load((REPO / "params/models.yaml").read_text())
        data["roster"].append({"name": "api-model", "model": "openai/some-model", "extra": {"api_base": api_base}})
        path = tmp_path / "models.yaml"
        path.write_text(yaml.safe_dump(data))
        models = load_models(path)
        params = load_skate(REPO / "params/skate.yaml").model_copy(update={"answer_only": ["api-model"]})
        schedule = build_schedule(params, models)
        skate_ids.append(sorted(j.job_id for j in [*schedule.generate.values(), *schedule.answers.values()]))
        assert "extra" not in models.entry("api-model").game_identity("xent")
    assert skate_ids[0] == skate_ids[1]
