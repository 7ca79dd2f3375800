"""A person's seat (`bot: human`) is played only through `seat`: a scheduled run's params check
refuses it by name, with the command to use; `seat` refuses any other entry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.cli import main
from pipeline.core.artifacts import ParamsError
from pipeline.core.models import load_models
from pipeline.core.run.contract import game_contract
from tests.seat.helpers import add_person


def with_alice(benchmark: str, params: Any) -> Any:
    """The benchmark's params with `alice` as its first scheduled player."""
    if benchmark == "elimination":
        schedule = params.schedule.model_copy(update={"players": ["alice", *params.schedule.players]})
        return params.model_copy(update={"schedule": schedule})
    return params.model_copy(update={"players": ["alice", *params.players]})


@pytest.mark.parametrize("benchmark", ["elimination", "skate", "whoisspy", "xent"])
def test_the_params_check_refuses_a_person_as_a_scheduled_player(project: Path, benchmark: str) -> None:
    models = load_models(add_person(project))
    source = str(project / "params" / f"{benchmark}.yaml")
    params = with_alice(benchmark, game_contract(benchmark).load_params(source))
    with pytest.raises(ParamsError) as refused:
        params.check_roster(models, source, "params/models.yaml")
    message = str(refused.value)
    assert "'alice'" in message and "bot: human" in message
    assert f"python -m pipeline seat {benchmark} --as alice" in message
    params.check_roster(models, source, "params/models.yaml", outside_ok=True)  # a game drawn for the seat


@pytest.mark.slow
def test_a_scheduled_run_stops_before_playing(project: Path) -> None:
    add_person(project)
    rules = project / "params" / "whoisspy.yaml"
    params = yaml.safe_load(rules.read_text())
    params["players"] = ["alice", *params["players"]]
    rules.write_text(yaml.safe_dump(params))
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", "whoisspy_all", "--params", "params", "-n"],
        cwd=project,
        env={k: v for k, v in os.environ.items() if k != "PIPELINE_PARAMS"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0
    assert "players[0]: 'alice' is played from outside the pipeline" in done.stderr
    assert "python -m pipeline seat whoisspy --as alice" in done.stderr
    assert not (project / "results" / "whoisspy" / "games").exists()


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("graded-90", "'graded-90' in params/models.yaml is not a person's seat (bot: graded)"),
        ("smollm2-135m", "is not a person's seat (model: local/smollm2-135m)"),
        ("bob", "no roster entry 'bob' in params/models.yaml; add `- {name: bob, bot: human}`"),
    ],
)
def test_seat_plays_only_a_person_entry(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, says: str
) -> None:
    add_person(project)
    monkeypatch.chdir(project)
    assert main(["seat", "whoisspy", "--as", name, "--terminal"]) == 2
    assert says in capsys.readouterr().err
