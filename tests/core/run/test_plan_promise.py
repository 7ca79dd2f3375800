"""The plan is a promise (issue 45, item 1): for a first roster of API models, every (benchmark, model)
row of `python -m pipeline plan` bounds what the run then spends, and expects it within 50%.

Three API models on a loopback OpenAI-compatible provider that acts like today's APIs: a chat model,
a reasoning model declared with `reasoning_effort`, and a reasoning model that litellm does not know
and the roster does not declare (both spend hidden reasoning tokens inside the cap, and are refused
logprobs, a temperature other than 1 and `max_tokens`). The provider gives no log-probabilities, as
some OpenAI-compatible servers do: SKATE's exact answering then falls back to sampling. The models
reply in each game's format, not always usefully: a vote names a candidate three times in four (else
it is re-asked or abstains, as the game's rules say), a SKATE answer is a guessed letter, a setter
always sends the same valid question. They sit beside the scripted bots in 12 games of Who is Spy
each, 2 of Elimination, and one round of SKATE with the params' strategy games. As the README has it:
`roster check` (which finds that the undeclared model reasons), `plan`, then the workflow with
Snakemake, whose plan-against-spend table (results/plan/compare.json) is read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.testing.loopback import LoopbackServer
from pipeline.testing.project import pipeline_command, snakemake_command
from tests.conftest import write_roster
from tests.core.models.test_frontier_roster import QUESTION  # a setter's valid question

pytestmark = pytest.mark.slow

CHAT, DECLARED, UNDECLARED = "chatter", "reasoner-low", "reasoner-x"
API_MODELS = (CHAT, DECLARED, UNDECLARED)
# hidden reasoning per answer: within the declared model's allowance (low effort: 4096 tokens) and
# within the games' visible budget the undeclared one is sent as a chat model (4096), above the
# roster check's and SKATE's answer caps (8 tokens)
HIDDEN = {DECLARED: 1500, UNDECLARED: 1200}
PRICE = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 4.0}
BOTS = ["heuristic-bot", "random-bot", "graded-90", "graded-50", "graded-10"]
TARGETS = (
    "results/whoisspy/metrics.json",
    "results/elimination/metrics.json",
    "skate_rounds",  # every SKATE job of the main game, nothing rated
    "results/skate/strategies/historical_performance/metrics.json",
    "results/skate/strategies/no_info/metrics.json",
)
TALK = "I weigh what everyone said so far and choose with care, as anyone at this table would."


def reply(messages: Sequence[dict[str, Any]]) -> str:
    """A plausible model: each game's format about three times in four, else a reply the game
    cannot read (an unreadable vote is re-asked or abstains, as the game's rules say)."""
    task = str(messages[-1].get("content") or "")
    roll = int(hashlib.sha256(json.dumps(list(messages), sort_keys=True).encode()).hexdigest()[:8], 16)
    readable = roll % 4 != 0
    seats = re.findall(r"\bP\d+\b", task)
    if "DISTRACTORS:" in task:  # SKATE's setter
        return QUESTION
    if "letter of the correct option" in task:  # SKATE's answerer: a guess, right one time in four
        return "ABCD"[roll % 4]
    if "Describe your secret word" in task:  # Who is Spy's description: never the same twice
        return f"Something you meet on an ordinary day, number {roll % 100_000}."
    if "VOTE: <name>" in task:  # Who is Spy's reasoning variant
        return f"{TALK}\nVOTE: {seats[-1] if readable and seats else 'nobody in particular'}"
    if 'or with "abstain"' in task:  # Who is Spy's vote: a name only
        return seats[-1] if readable and seats else "I am not sure yet."
    if "Rank these seats" in task:  # Elimination's partner ranking
        return " ".join(dict.fromkeys(seats))
    if "`P<n>: <reason>`" in task:  # Elimination's votes, re-votes, jury votes and re-asks
        return f"{seats[-1]}: they were the least open" if readable and seats else "I would rather not say."
    return TALK


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-plan-promise")
    with LoopbackServer(reasoning=dict(HIDDEN), reply=reply, max_requests=100_000, max_seconds=1200) as server:
        yield server


def edit_yaml(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def configure(project: Path, api_base: str) -> None:
    """The committed roster with the three API models added (priced), seated in a few games."""
    extra = {"extra": {"api_base": api_base}}
    roster = yaml.safe_load((project / "params/models.yaml").read_text())["roster"]
    roster += [
        {"name": CHAT, "model": f"openai/{CHAT}", **extra},
        {"name": DECLARED, "model": f"openai/{DECLARED}", "sampling": {"reasoning_effort": "low"}, **extra},
        {"name": UNDECLARED, "model": f"openai/{UNDECLARED}", **extra},  # litellm does not know it
    ]
    write_roster(
        project,
        roster,
        providers={"default": {"max_concurrency": 8, "rpm": 0}, "openai": {"max_concurrency": 8, "rpm": 0}},
        gateway={
            "cache_dir": str(project / ".cache" / "responses"),
            "prices": {f"openai/{name}": PRICE for name in API_MODELS},
            "backoff_base_s": 0.0,
            "backoff_max_s": 0.0,
        },
    )
    params = project / "params"

    def whoisspy(data: dict[str, Any]) -> None:
        # each model in 12 games (spy and civilian, three times, in both variants): a game's length
        # depends on the votes, so fewer would leave the expectation to chance
        data.update(players=list(API_MODELS), fill=BOTS, variants=["baseline", "reasoning"], games_per_role=3)

    def elimination(data: dict[str, Any]) -> None:
        # one lineup per API model, the bots in the other seven seats, each seating played twice
        data["schedule"].update(
            lineups=[[name, *BOTS, "heuristic-bot", "random-bot"] for name in API_MODELS], repeats=2
        )

    def skate(data: dict[str, Any]) -> None:
        # the API models set and answer beside the setter bot (four questions a game: a question's samples
        # depend on the answers, so fewer would leave the expectation to chance); the params' strategy
        # games stay on
        data.update(players=[*API_MODELS, "setter-bot"], answer_only=["oracle-bot"], rounds=1)

    edit_yaml(params / "whoisspy.yaml", whoisspy)
    edit_yaml(params / "elimination.yaml", elimination)
    edit_yaml(params / "skate.yaml", skate)


def run(command: list[str], project: Path, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=project, env=dict(os.environ), capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done


def test_every_row_of_the_plan_bounds_the_spend_and_expects_it(
    provider: LoopbackServer, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    configure(project, provider.url)
    # the README's first step: `roster check` finds that the undeclared model reasons (an empty reply at
    # the limit), and from then on the plan and the games budget it as a reasoning model. Only the API
    # entries are checked (the embedded model asks nothing of the provider).
    models = yaml.safe_load((project / "params/models.yaml").read_text())
    models["roster"] = [entry for entry in models["roster"] if entry["name"] in API_MODELS]
    (project / "api-models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    run(
        [sys.executable, "-m", "pipeline", "roster", "check", "--params", "api-models.yaml", "--out", "checked"],
        project,
    )
    run(pipeline_command(project, "plan", *TARGETS), project)
    plan = json.loads((project / "results/plan/plan.json").read_text())
    rows = {(r["benchmark"], r["model"]): r for r in plan["rows"]}
    # the check's sighting reached the plan: the undeclared model is budgeted with a reasoning allowance
    assert rows[("whoisspy", UNDECLARED)]["tokens_reasoning"] > 0
    for benchmark in ("whoisspy", "elimination", "skate"):
        for model in API_MODELS:
            row = rows[(benchmark, model)]
            assert row["cost_usd"] is not None, (benchmark, model, row["note"])  # the bound is priced
            assert row["calls"] > 0 and row["expected_calls"] > 0, (benchmark, model)
    # the strategy games are counted: each a whole game of one round, as the main game (the one under
    # the main game's own strategy sends its requests again: in the bound, answered by the cache)
    skate = yaml.safe_load((project / "params/skate.yaml").read_text())
    games = 1 + len(skate["analyses"]["strategies"])
    per_game = len(skate["players"]) * skate["answering"]["max_samples"] + skate["attempts"]
    for model in (DECLARED, UNDECLARED):  # sampled answerers: max_samples a question, a question a player
        assert rows[("skate", model)]["calls"] == games * per_game
    assert not any("not estimated" in rows[("skate", model)]["note"] for model in API_MODELS)

    run(snakemake_command(project, *TARGETS, "--cores", "2"), project)
    compared = json.loads((project / "results/plan/compare.json").read_text())["rows"]
    seen = {(r["benchmark"], r["model"]): r for r in compared}
    table = "\n".join(
        f"{b:<12} {m:<13} calls {r['planned_calls']}/{r['expected_calls']}/{r['spent_calls']}  "
        f"tokens_out {r['planned_tokens_out']}/{r['expected_tokens_out']}/{r['spent_tokens_out']}  "
        f"cost {r['planned_cost_usd']}/{r['expected_cost_usd']}/{r['spent_cost_usd']}  "
        f"{'kept' if r['within_bound'] else 'EXCEEDED'}"
        for (b, m), r in sorted(seen.items())
    )
    with capsys.disabled():
        print(f"\nbound/expected/spent per row ({time.monotonic() - started:.0f} s):\n{table}")

    problems = []
    for benchmark in ("whoisspy", "elimination", "skate"):
        for model in API_MODELS:
            r = seen.get((benchmark, model))
            if r is None:
                problems.append(f"{benchmark}/{model}: no row in compare.json")
                continue
            assert r["spent_calls"] > 0, (benchmark, model)
            if r["spent_calls"] > r["planned_calls"]:
                problems.append(f"{benchmark}/{model}: {r['spent_calls']} calls spent > bound {r['planned_calls']}")
            if r["spent_tokens_out"] > r["planned_tokens_out"]:
                problems.append(
                    f"{benchmark}/{model}: {r['spent_tokens_out']} tokens out > bound {r['planned_tokens_out']}"
                )
            if r["planned_cost_usd"] is None or r["spent_cost_usd"] > r["planned_cost_usd"] + 1e-9:
                problems.append(f"{benchmark}/{model}: ${r['spent_cost_usd']} spent > bound ${r['planned_cost_usd']}")
            if not r["within_bound"]:
                problems.append(f"{benchmark}/{model}: compare says the bound was exceeded")
            if r["planned_calls"] != rows[(benchmark, model)]["paid_calls"]:  # the run's plan is the one shown
                problems.append(
                    f"{benchmark}/{model}: the run planned {r['planned_calls']} calls, `plan` showed "
                    f"{rows[(benchmark, model)]['paid_calls']}"
                )
            if abs(r["expected_calls"] - r["spent_calls"]) > 0.5 * r["spent_calls"]:
                problems.append(
                    f"{benchmark}/{model}: expected {r['expected_calls']} calls, spent {r['spent_calls']} (beyond 50%)"
                )
    assert not problems, "\n".join(problems) + "\n" + table
