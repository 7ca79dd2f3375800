"""A researcher's first real roster: two reasoning models and one chat model, declared the litellm
way with nothing set per benchmark, seated in every benchmark at its committed params and run with
real Snakemake against a loopback provider that acts like today's reasoning APIs (hidden reasoning
inside the cap, empty content with finish_reason "length" below it, logprobs and a temperature
other than 1 refused). Every benchmark finishes, and no reply is starved or cut by a cap.

The committed params are kept whole where they decide a reply's budget (every game's rules, word
limits, reply caps, answering mode); only how often the same moves repeat is trimmed, as the test
already does for elimination's lineups: SKATE plays one round (its second asks the same kinds of
move under the same caps) among the three models alone (its scripted setter and answer-only bots,
each a job of its own, ask no model anything), Xent plays the first of its committed games (every
game's moves share one cap) scored by the model-free `word` judge (the judge decides no reply's
budget; the embedded judge's CPU is tested elsewhere), and the run builds what each benchmark's metrics.json needs (no plots,
no SKATE analyses or strategy replays: they ask nothing a play job has not)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline.testing.loopback import LoopbackServer
from pipeline.testing.project import make_workdir, snakemake_command

pytestmark = pytest.mark.slow

KEY_ENV = "FRONTIER_TEST_KEY"
API_MODELS = ("reasoner-a", "reasoner-b", "chatter")
BENCHMARKS = ("whoisspy", "elimination", "skate", "xent")
# hidden reasoning each reasoning model spends on every answer: more than any game's old caps,
# less than the default allowances (8,192 tokens)
REASONING_NEED = {"reasoner-a": 3000, "reasoner-b": 6000}
# a long-winded but well-formed reply: 70 words of talk before the move itself
TALK = " ".join(["I weigh what everyone said so far, and I choose carefully."] * 7)
QUESTION = """DESCRIPTION: reversing strings inside a generator passed to str.join
PROGRAM:
```python
words = ["tea", "milk", "jam"]
print("-".join(w[::-1] for w in words))
```
DISTRACTORS:
1. tea-milk-jam
2. aet-klim-maj-
3. jam-milk-tea
4. maj-klim-aet
5. aetklimmaj
6. ['aet', 'klim', 'maj']
7. aet klim maj
8. -aet-klim-maj
9. mat-klie-jaa
"""


def reply(messages: Sequence[dict[str, Any]]) -> str:
    """Answers as a capable model would, in each game's format (the games parse it as always)."""
    task = str(messages[-1].get("content") or "")
    seats = re.findall(r"\bP\d+\b", task)
    if "DISTRACTORS:" in task:
        return QUESTION
    if "letter of the correct option" in task:
        return "A"
    if "<move>" in task:
        return f"{TALK} <move>a river of quiet stones</move>"
    if "Rank these seats" in task:
        return " ".join(dict.fromkeys(seats))
    if "`P<n>: <reason>`" in task:
        return f"{TALK}\n{seats[-1]}: they were the least open"
    if "vote" in task.lower():
        return f"{TALK} VOTE: {seats[-1] if seats else 'abstain'}"
    return TALK


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    monkeypatch.setenv(KEY_ENV, "not-a-real-key")
    with LoopbackServer(reasoning=dict(REASONING_NEED), reply=reply, max_requests=100_000, max_seconds=1500) as server:
        yield server


def edit_yaml(path: Path, **changes: Any) -> None:
    data = yaml.safe_load(path.read_text())
    data.update(changes)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def frontier_project(root: Path, api_base: str) -> Path:
    """The committed params with the embedded model's seats given to the three API models, and
    their repeats trimmed (the module's docstring): one SKATE round without the bots, Xent's first game."""
    make_workdir(root)
    models = yaml.safe_load((root / "params/models.yaml").read_text())
    common = {"extra": {"api_base": api_base}, "api_key_env": KEY_ENV}
    models["roster"] += [
        {"name": "reasoner-a", "model": "openai/reasoner-a", "sampling": {"reasoning_effort": "medium"}, **common},
        {"name": "reasoner-b", "model": "openai/reasoner-b", "sampling": {"reasoning": True}, **common},
        {"name": "chatter", "model": "openai/chatter", **common},
    ]
    models["providers"]["openai"] = {"max_concurrency": 8, "rpm": 0}
    (root / "params/models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    params = root / "params"
    edit_yaml(params / "whoisspy.yaml", players=list(API_MODELS))
    committed_games = yaml.safe_load((params / "xent.yaml").read_text())["games"]
    # the model-free `word` judge: the judge scores moves, it decides no reply's budget
    edit_yaml(params / "xent.yaml", players=list(API_MODELS), games=committed_games[:1], judge="word")
    edit_yaml(
        params / "skate.yaml",
        players=["reasoner-a", "chatter"],
        answer_only=["reasoner-b"],
        rounds=1,
    )
    elimination = yaml.safe_load((params / "elimination.yaml").read_text())
    elimination["schedule"]["lineups"] = [
        [
            "reasoner-a",
            "heuristic-bot",
            "reasoner-b",
            "random-bot",
            "chatter",
            "heuristic-bot",
            "random-bot",
            "heuristic-bot",
        ]
    ]
    (params / "elimination.yaml").write_text(yaml.safe_dump(elimination, sort_keys=False))
    return root


def snakemake(project: Path, *targets: str) -> None:
    done = subprocess.run(
        snakemake_command(
            project, *targets, "--cores", "2", "--rerun-triggers", "code", "input", "params", "software-env"
        ),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=1400,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


def api_calls(project: Path) -> pl.DataFrame:
    frames = [pl.read_parquet(p) for p in (project / "results").rglob("*calls.parquet")]
    calls = pl.concat(frames, how="diagonal_relaxed")
    return calls.filter(
        pl.col("roster_name").is_in(API_MODELS) & pl.col("error_kind").is_null()
        | pl.col("roster_name").is_in(API_MODELS) & (pl.col("error_kind") == "empty")
    )


def test_reasoning_and_chat_models_play_every_benchmark_unstarved(provider: LoopbackServer, tmp_path: Path) -> None:
    project = frontier_project(tmp_path / "project", provider.url)
    snakemake(project, *(f"results/{benchmark}/metrics.json" for benchmark in BENCHMARKS))

    calls = api_calls(project)
    played = set(calls["roster_name"].unique())
    assert played == set(API_MODELS)
    # nothing came back at the cap: no empty reasoning reply, no chat reply cut short
    assert calls.filter(pl.col("finish_reason") == "length").is_empty()
    reasoned = calls.filter(pl.col("roster_name").is_in(list(REASONING_NEED)))
    assert (reasoned["tokens_reasoning"] > 0).all()
    # the reasoning APIs refused the temperature: dropped, recorded, never fatal
    assert reasoned["dropped_params"].drop_nulls().str.contains("temperature").all()

    # what the provider saw: reasoning models got max_completion_tokens with an allowance above
    # their need, the chat model the games' own budgets (none set by the game: 4096 tokens)
    for body in provider.requests:
        if body["model"] in REASONING_NEED:
            assert body.get("max_completion_tokens", 0) > REASONING_NEED[body["model"]]
        elif body["model"] == "chatter" and not body.get("logprobs"):  # an exact SKATE answer asks 1 token
            assert body.get("max_tokens", 0) >= 8

    for benchmark in BENCHMARKS:
        metrics = json.loads((project / "results" / benchmark / "metrics.json").read_text())
        assert metrics, benchmark
        for model in API_MODELS:
            shown = json.dumps(metrics)
            assert model in shown, (benchmark, model)
