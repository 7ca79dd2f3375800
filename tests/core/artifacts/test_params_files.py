"""Every params file in params/ is checked by its loader, and a wrong field stops with a message
that names the file, the field and what is expected. New params files (a new benchmark) are covered
automatically: `params/<stem>.yaml` is loaded by `load_<stem>` or `load_<stem>_params` in
`pipeline/<stem>/config.py` (the roster, `models.yaml`, by pipeline.core.models.roster.load_models).
Also: a corrupted or hand-edited table stops the reader with a message naming the file and column.
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.params import ParamsError
from pipeline.core.artifacts.schemas import CallsSchema, TableError, calls_frame, read_table, write_table
from pipeline.core.models.roster import load_models
from tests.conftest import REPO

PARAMS_FILES = sorted((REPO / "params").glob("*.yaml"))

# Per file, examples of a wrong field: (dotted path, bad value, text the message must contain).
# The generic checks below run for every file, listed here or not.
BAD_FIELDS: dict[str, list[tuple[str, Any, str]]] = {
    "models": [
        ("roster.0.sampling.temperature", 5, "expected: sampling temperature in [0, 2]"),
        ("gateway.budget_usd", -1, "expected: a number of USD"),
        ("gateway.faults.server", 2, "expected: a probability in [0, 1]"),
        ("providers.local.max_concurrency", 0, "expected: a positive integer"),
    ],
    "skate": [
        ("rounds", 0, "expected: rounds of the game"),
        ("players", "gemma-270m", "expected: roster names"),
        ("answering.mode", "auto", "one ranking uses one estimator"),
        ("analyses.strategies", ["everything"], "analyses.strategies"),
    ],
    "elimination": [
        ("seats", "eight", "expected: seats per game"),
        ("rating.passes", 0, "rating.passes"),
    ],
    "whoisspy": [
        ("games_per_role", 0, "expected: games per player, role and variant"),
        ("rules.rounds", 0, "expected: rounds of speaking and voting"),
    ],
}


def loader_for(path: Path) -> Callable[[Path], Any]:
    if path.stem == "models":
        return load_models
    module = importlib.import_module(f"pipeline.{path.stem}.config")
    for name in (f"load_{path.stem}", f"load_{path.stem}_params"):
        if hasattr(module, name):
            return getattr(module, name)
    raise AssertionError(f"{path}: no load_{path.stem} in pipeline/{path.stem}/config.py to check it with")


def set_path(data: Any, dotted: str, value: Any) -> None:
    parts = [int(p) if p.isdigit() else p for p in dotted.split(".")]
    for part in parts[:-1]:
        data = data[part] if isinstance(part, int) else data.setdefault(part, {})
    data[parts[-1]] = value


def shown_location(dotted: str) -> str:
    """How ParamsError writes a location: roster['smollm2-135m'].sampling.temperature (an entry of
    the roster by its name: the shipped roster's first is the embedded model), players[0]."""
    return dotted.replace("roster.0.", "roster['smollm2-135m'].").replace(".0.", "[0].")


def load_broken(tmp_path: Path, source: Path, edit: Callable[[Any], None]) -> str:
    data = yaml.safe_load(source.read_text()) or {}
    edit(data)
    broken = tmp_path / source.name
    broken.write_text(yaml.safe_dump(data))
    with pytest.raises(ParamsError) as err:
        loader_for(source)(broken)
    text = str(err.value)
    assert str(broken) in text, text  # names the file
    return text


@pytest.mark.parametrize("path", PARAMS_FILES, ids=lambda p: p.name)
def test_the_shipped_params_file_loads(path: Path) -> None:
    assert loader_for(path)(path) is not None


@pytest.mark.parametrize("path", PARAMS_FILES, ids=lambda p: p.name)
def test_an_unknown_field_is_named(path: Path, tmp_path: Path) -> None:
    text = load_broken(tmp_path, path, lambda d: d.update(no_such_field=1))
    assert "no_such_field" in text and "Extra inputs are not permitted" in text


@pytest.mark.parametrize("path", PARAMS_FILES, ids=lambda p: p.name)
def test_a_wrong_type_names_the_field_and_what_is_expected(path: Path, tmp_path: Path) -> None:
    model = typing.get_type_hints(loader_for(path))["return"]
    data = yaml.safe_load(path.read_text()) or {}
    # the first field of the file that has a description: give it a value of no possible type
    name = next(n for n, f in model.model_fields.items() if f.description and n in data)
    text = load_broken(tmp_path, path, lambda d: d.update({name: {"not": ["a", {"valid": "value"}]}}))
    assert f"  - {name}" in text and f"expected: {model.model_fields[name].description}" in text


@pytest.mark.parametrize(
    ("stem", "field", "value", "expected"),
    [(stem, *case) for stem, cases in BAD_FIELDS.items() for case in cases],
    ids=lambda v: str(v),
)
def test_example_bad_fields(stem: str, field: str, value: Any, expected: str, tmp_path: Path) -> None:
    text = load_broken(tmp_path, REPO / "params" / f"{stem}.yaml", lambda d: set_path(d, field, value))
    assert shown_location(field) in text and expected in text, text


def test_not_valid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text("roster:\n  - name: a\n    model: [unclosed\n")
    with pytest.raises(ParamsError, match=rf"{path}: not valid YAML at line \d+"):
        load_models(path)


def sample_calls() -> pl.DataFrame:
    return calls_frame(
        [
            {
                "job": "j",
                "roster_name": "m",
                "model": "openai/x",
                "request_id": "abc",
                "attempt": 1,
                "tokens_in": 3,
                "tokens_out": 2,
                "cost_usd": 0.1,
                "latency_s": 0.5,
                "cache_hit": False,
                "error_kind": None,
                "fault": None,
            }
        ]
    )


def test_a_corrupt_table_stops_the_reader_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "calls.parquet"
    write_table(path, sample_calls(), CallsSchema)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])  # a torn copy
    with pytest.raises(TableError, match=rf"{path}: unreadable parquet .*delete it and rerun its stage"):
        read_table(path, CallsSchema)


def test_a_hand_edited_table_stops_the_reader_naming_file_and_column(tmp_path: Path) -> None:
    path = tmp_path / "calls.parquet"
    write_table(path, sample_calls(), CallsSchema)
    sample_calls().with_columns(pl.lit(-5).alias("tokens_out")).write_parquet(path)
    with pytest.raises(TableError) as err:
        read_table(path, CallsSchema)
    assert str(path) in str(err.value) and "column 'tokens_out'" in str(err.value)
    sample_calls().drop("cost_usd").write_parquet(path)
    with pytest.raises(TableError, match="cost_usd"):
        read_table(path, CallsSchema)
    sample_calls().with_columns(pl.lit("x").alias("extra_column")).write_parquet(path)
    with pytest.raises(TableError, match="extra_column"):
        read_table(path, CallsSchema)
