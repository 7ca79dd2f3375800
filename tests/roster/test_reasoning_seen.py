"""Reasoning found from replies (issue 45): an entry that says nothing about reasoning, of a model
litellm does not know, whose replies spend hidden reasoning tokens, is a reasoning model for the
roster check (asked again with an allowance), the run plan (priced with it) and the games (every
request carries it), said in one line with the fix. Against the loopback OpenAI-compatible provider.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.cli import main
from pipeline.core.artifacts.schemas import RosterCheckSchema, read_table
from pipeline.core.models import describe, is_reasoning_model
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.reasoning_seen import SNAPSHOT_ENV
from pipeline.core.models.reply_budgets import DEFAULT_REASONING_TOKENS, most_reply_tokens
from pipeline.core.models.roster import load_models
from pipeline.core.run.estimates import PlanContext
from pipeline.core.run.plan import PlannedJob, TokenHistory, plan_table
from pipeline.roster.estimators import ESTIMATORS
from pipeline.testing.loopback import LoopbackServer

KEY_ENV = "REASONING_SEEN_TEST_KEY"
HIDDEN = 300  # hidden tokens the unknown reasoning model spends before every visible reply


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "not-a-real-key")
    monkeypatch.delenv(SNAPSHOT_ENV, raising=False)  # no run's frozen view: this process reads the cache


def entry(name: str, url: str, **sampling: Any) -> dict[str, Any]:
    row = {"name": name, "model": f"openai/{name}", "api_key_env": KEY_ENV, "extra": {"api_base": url}}
    return {**row, "sampling": sampling} if sampling else row


def write_models(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "models.yaml"
    roster = [
        entry("mystery-thinker", url),  # reasons, says nothing, unknown to litellm
        entry("plain-chat", url),
        entry("honest-chat", url, reasoning=False),  # says it does not reason: never marked
    ]
    prices = {f"openai/{r['name']}": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 4.0} for r in roster}
    gateway = {"cache_dir": str(tmp_path / "cache"), "prices": prices, "backoff_base_s": 0.0}
    path.write_text(yaml.safe_dump({"roster": roster, "gateway": gateway}))
    return path


def test_a_model_whose_replies_reason_is_treated_as_reasoning_by_check_plan_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reasoning = {"mystery-thinker": HIDDEN, "honest-chat": HIDDEN}
    with LoopbackServer(reply=lambda messages: "blue", reasoning=reasoning, max_seconds=120) as server:
        path = write_models(tmp_path, server.url)
        before = load_models(path)
        assert not is_reasoning_model(before.entry("mystery-thinker"))  # nothing says so yet
        assert most_reply_tokens(before.entry("mystery-thinker"), "speech", 20, "whoisspy") == 20
        plan_before = _roster_plan(tmp_path, before)

        out = tmp_path / "roster"
        assert main(["roster", "check", "--params", str(path), "--out", str(out)]) == 0
        err = capsys.readouterr().err
        rows = {r["name"]: r for r in read_table(out / "check.parquet", RosterCheckSchema).to_dicts()}

        # the check: its first reply came back empty at the limit (the hidden reasoning spent the cap),
        # so it asked again with a reasoning allowance and got the word; one line says what and the fix
        thinker = rows["mystery-thinker"]
        assert thinker["reachable"] and thinker["reply"] == "blue" and thinker["reasoning"] is True
        assert thinker["status"] == "warn" and "replies like a reasoning model" in thinker["reason"]
        assert "`sampling: {reasoning: true}`" in thinker["reason"] and "hidden reasoning tokens" in thinker["reason"]
        assert thinker["budgets"].startswith("reasoning model (seen in its replies")
        assert err.count("roster entry 'mystery-thinker' (openai/mystery-thinker) replies like a reasoning model") == 2
        assert rows["plain-chat"]["status"] == "ok" and rows["plain-chat"]["reasoning"] is False
        # an entry that says `reasoning: false` is taken at its word: starved, never marked
        assert rows["honest-chat"]["reasoning"] is False and "replies like" not in (rows["honest-chat"]["reason"] or "")

        # the plan, in a new load of the roster: priced with the reasoning allowance
        after = load_models(path)
        thinker_entry = after.entry("mystery-thinker")
        assert is_reasoning_model(thinker_entry) and "seen in its replies" in describe(thinker_entry)
        assert not is_reasoning_model(after.entry("plain-chat")) and not is_reasoning_model(after.entry("honest-chat"))
        allowance = DEFAULT_REASONING_TOKENS[None]
        assert most_reply_tokens(thinker_entry, "speech", 20, "whoisspy") == 20 + allowance
        # before it was seen, its bound counted the check's second request; now the check sends the
        # request with the allowance it already answered: from the cache, nothing to pay
        assert (plan_before["mystery-thinker"]["calls"], plan_before["mystery-thinker"]["expected_calls"]) == (2, 1)
        plan_after = _roster_plan(tmp_path, after)["mystery-thinker"]
        assert (plan_after["calls"], plan_after["cached_calls"], plan_after["paid_calls"]) == (1, 1, 0)

        # the run: a game's request carries the allowance, so the reply is no longer starved
        gateway = Gateway(after, job="whoisspy/test")
        move = [{"role": "user", "content": "Describe your word in a few words."}]
        reply = asyncio.run(gateway.complete(thinker_entry, move, seed=1, max_tokens=20, kind="speech"))
        assert reply.text and not reply.empty_at_token_limit and (reply.tokens_reasoning or 0) >= HIDDEN

        # a run that began before the sighting keeps its view (the Snakefile's parse froze it): its jobs'
        # schedules and half-played games do not change under it
        monkeypatch.setenv(SNAPSHOT_ENV, "[]")
        assert not is_reasoning_model(load_models(path).entry("mystery-thinker"))


def _roster_plan(root: Path, models: Any) -> dict[str, dict[str, Any]]:
    context = PlanContext(root, models)
    job = PlannedJob("roster_check", "new job")
    estimates = [("roster", job, e) for e in ESTIMATORS["roster_check"](job, context)]
    table = plan_table(estimates, models, TokenHistory.load(root / "results"))
    return {r["model"]: r for r in table.iter_rows(named=True)}
