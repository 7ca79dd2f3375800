"""A bad params file stops with a message naming the file, the field and what is expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.artifacts.params import ParamsError
from pipeline.core.models.roster import load_models

REPO = Path(__file__).resolve().parents[3]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(text)
    return path


def test_the_shipped_roster_is_valid() -> None:
    models = load_models(REPO / "params" / "models.yaml")
    assert [e.name for e in models.roster][:2] == ["smollm2-135m", "random-bot"]
    assert models.entry("smollm2-135m").provider == "local"
    # up to 8 requests of a process share each decoding step of the embedded model (pipeline/core/models/local_batch.py)
    assert models.limits_for("local").max_concurrency == 8
    assert models.limits_for("openai") == models.providers["default"]


@pytest.mark.parametrize(
    ("text", "field", "hint"),
    [
        ("roster:\n  - name: a\n", "roster['a']", "exactly one of `model: provider/name`"),
        ("roster:\n  - name: a\n    model: gpt-4o\n", "roster['a'].model", "provider prefix, e.g. openai/gpt-4o"),
        ("roster:\n  - name: 'bad name'\n    bot: random\n", "roster['bad name'].name", "must match"),
        (
            "roster:\n  - name: a\n    bot: random\n    sampling: {temprature: 0.3}\n",
            "roster['a'].sampling.temprature",
            "Extra inputs are not permitted",
        ),
        (
            "roster:\n  - name: a\n    bot: random\n    sampling: {temperature: 9}\n",
            "roster['a'].sampling.temperature",
            "expected: sampling temperature in [0, 2]",
        ),
        (
            "roster:\n  - name: a\n    model: openai/x\n    extra: {api_key: sk-123}\n",
            "roster['a'].extra",
            "must not be written in params",
        ),
        ("roster:\n  - {name: a, bot: random}\n  - {name: a, bot: random}\n", "(top level)", "appears twice"),
        ("roster: []\n", "roster", "at least 1 item"),
        (
            "roster:\n  - {name: a, bot: random}\nproviders:\n  openai: {max_concurrency: 0}\n",
            "providers.openai.max_concurrency",
            "expected: a positive integer",
        ),
        ("roster:\n  - {name: a, bot: random}\ngateway: {retries: many}\n", "gateway.retries", "valid integer"),
    ],
)
def test_bad_field_names_file_field_and_fix(tmp_path: Path, text: str, field: str, hint: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ParamsError) as info:
        load_models(path)
    message = str(info.value)
    assert str(path) in message
    assert f"- {field}:" in message
    assert hint in message


def test_invalid_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "roster:\n  - name: a\n   bot: [\n")
    with pytest.raises(ParamsError, match=r"models.yaml: not valid YAML at line \d+, column \d+"):
        load_models(path)


def test_an_unclosed_bracket_is_named_where_it_opened(tmp_path: Path) -> None:
    """The parser notices a missing `]` where the next item starts, lines later: the message also
    says where the `[` opened."""
    path = write(tmp_path, "roster:\n  - name: a\n    bot: random\nplayers: [a, b\nfill: [c]\nseed: 0\n")
    with pytest.raises(ParamsError) as info:
        load_models(path)
    assert "at line 5, column 5" in str(info.value)
    assert "a flow sequence that opened at line 4, column 10: a bracket not closed?" in str(info.value)


def test_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match="file not found"):
        load_models(tmp_path / "nope.yaml")
