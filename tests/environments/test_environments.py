"""Environments (pipeline.environments, docs/environments.md) and the game contract under them
(pipeline.core.run.contract): an episode of every benchmark played by a simple policy is a real game
whose reward is the seat's score in its record, whose record rates, and which replays identically;
a malformed action is read as a model's malformed reply; the contract names the schedule's games by
the ids `python -m pipeline <b> schedule --json` prints."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pipeline.environments as environments
from pipeline.cli import main
from pipeline.core.rating.events import RatingParams
from pipeline.core.rating.multipass import rating_summary
from pipeline.core.run.contract import game_contract, schedule
from pipeline.xent.prompts import MISSING_TAG_REMINDER
from tests.conftest import REPO

BENCHMARKS = ("whoisspy", "elimination", "xent", "skate")


def policy(benchmark: str) -> Callable[[str, dict[str, Any]], str]:
    """A fixed policy per benchmark: the first valid choice when the move lists them, else a fixed reply."""
    texts = {
        "whoisspy": "It is something you can find outside.",
        "elimination": "I will keep my promises and vote with my partners.",
        "xent": "<move>the dog chased a ball</move>",
        "skate": "A",
    }

    def act(observation: str, info: dict[str, Any]) -> str:
        return info["choices"][0] if info["choices"] else texts[benchmark]

    return act


def run_episode(env: environments.GameEnv, seed: int, act: Callable[[str, dict[str, Any]], str]) -> dict[str, Any]:
    """One episode: (observation, action) per step, the final reward and info."""
    observation, info = env.reset(seed=seed)
    steps = []
    terminated = False
    reward = 0.0
    while not terminated:
        assert observation == info["messages"][-1]["content"]  # the text of the model's last message
        action = act(observation, info)
        steps.append((observation, info["kind"], action))
        observation, reward, terminated, truncated, info = env.step(action)
        assert not truncated
        assert terminated or reward == 0.0
        assert len(steps) < 500, "the episode does not end"
    return {"steps": steps, "reward": reward, "info": info}


def recorded_score(benchmark: str, record: Any, seat: str) -> float:
    """The seat's score read from the record itself, each benchmark's own way."""
    if benchmark == "whoisspy":
        return next(p.score for p in record.players if p.seat == seat)
    if benchmark == "elimination":
        final = next(r.to_json() for r in record.records if r.to_json()["type"] == "final_results")
        return next(points for pid, points in final["partial_points"].items() if pid.startswith(f"Player{seat[1:]}_"))
    if benchmark == "xent":
        play = next(p for p in record.plays if p.player == seat)
        return max(r.total_bits for r in play.maps[0].rounds)
    rows = record.pcorrect.filter(record.pcorrect["answerer"] == seat)
    return sum(rows["p_correct"].to_list()) / rows.height


def without_clocks(data: Any) -> Any:
    """The record without what the wall clock writes (timestamps, the bots' move times, sandbox times)."""
    if isinstance(data, dict):
        return {k: without_clocks(v) for k, v in data.items() if k not in ("timestamp", "elapsed_s", "latency_s")}
    if isinstance(data, list):
        return [without_clocks(v) for v in data]
    return data


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_an_episode_is_a_real_game_that_rates_and_replays(benchmark: str, tmp_path: Path) -> None:
    with environments.make(benchmark, cache_dir=tmp_path / "cache") as env:
        first = run_episode(env, 3, policy(benchmark))
        again = run_episode(env, 3, policy(benchmark))
        other = run_episode(env, 4, policy(benchmark))
    contract = game_contract(benchmark)
    info = first["info"]
    record = info["record"]
    # the reward is the seat's score as the record holds it
    assert first["reward"] == pytest.approx(recorded_score(benchmark, record, info["seat"]))
    assert info["score"] == first["reward"]
    assert "agent" in info["seats"].values()
    # the record rates like any game: events with the agent in them, and ratings from them
    events = contract.events(record)
    assert events and any("agent" in str(event) for _, event in events)
    ratings = rating_summary([e for _, e in events], RatingParams(), passes=2, seed=0, resamples=0)
    assert "agent" in ratings["player"].to_list()
    # the same seed and the same actions give the same game and the same record; another seed another game
    assert again["steps"] == first["steps"]
    assert without_clocks(contract.to_json(again["info"]["record"])) == without_clocks(contract.to_json(record))
    assert other["info"]["game_id"] != info["game_id"]


def test_a_malformed_vote_is_an_invalid_ballot_as_for_a_model() -> None:
    """Who is Spy reads a vote by the paper's rule: a reply that names no candidate is an abstention,
    recorded with its reply and the ballot `invalid`, exactly as a model's."""
    with environments.make("whoisspy") as env:
        observation, info = env.reset(seed=1)
        while info["kind"] != "vote":
            observation, _, done, _, info = env.step("A thing with leaves.")
            assert not done
        candidates = info["choices"][:-1]
        observation, _, done, _, info = env.step("I am not sure, maybe the quiet one?")
        while not done:
            observation, _, done, _, info = env.step(info["choices"][0] if info["choices"] else "A plant.")
    record = info["record"]
    vote = next(e for e in record.events if e.type == "vote" and e.voter == info["seat"])
    assert (vote.target, vote.ballot, vote.reply) == (None, "invalid", "I am not sure, maybe the quiet one?")
    assert candidates and info["seat"] not in candidates


def test_an_untagged_xent_move_is_a_models_untagged_reply() -> None:
    """An Xent reply without <move> tags is the move as a whole and earns the next ask a reminder, as a
    model's does (a bot's bare move would earn none)."""
    with environments.make("xent") as env:
        observation, info = env.reset(seed=0)
        assert MISSING_TAG_REMINDER not in observation
        observation, _, done, _, info = env.step("dog ball garden")
        assert not done
        assert MISSING_TAG_REMINDER in observation
        while not done:
            observation, _, done, _, info = env.step("<move>dog</move>")
    moves = [m for p in info["record"].plays if p.player == "agent" for m in p.maps[0].rounds[0].moves]
    assert [(m.move, m.tagged) for m in moves][:1] == [("dog ball garden", False)]


def test_opponents_may_be_roster_models_and_bots_of_several_kinds(fake_provider, tmp_path: Path) -> None:
    fake_provider.default = "P2"
    opponents = [
        {"name": "scripted", "model": "fake/scripted"},
        {"name": "coin", "bot": "random"},
        {"name": "sly", "bot": "heuristic"},
    ]
    with environments.make("whoisspy", opponents=opponents, seat="civilian", cache_dir=tmp_path) as env:
        episode = run_episode(env, 0, policy("whoisspy"))
    seated = set(episode["info"]["seats"].values())
    assert seated == {"agent", "scripted", "coin", "sly"}
    record = episode["info"]["record"]
    assert next(p.role for p in record.players if p.seat == episode["info"]["seat"]) == "civilian"
    assert fake_provider.calls  # the model opponent answered through the gateway


def test_an_error_inside_the_game_surfaces_with_its_message() -> None:
    with environments.make("whoisspy", opponents=[{"name": "ghost", "bot": "no-such-bot"}]) as env:
        with pytest.raises(environments.EpisodeError, match="no-such-bot"):
            env.reset(seed=0)


def test_close_ends_the_running_game() -> None:
    env = environments.make("elimination")
    env.reset(seed=0)
    running = [t for t in threading.enumerate() if t.name.startswith("game ")]
    assert running
    env.close()
    assert not any(t.is_alive() for t in running)
    with pytest.raises(environments.EpisodeError, match="reset"):
        env.step("hello")


def cli_schedule(benchmark: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    params, models = REPO / f"params/{benchmark}.yaml", REPO / "params/models.yaml"
    main([benchmark, "schedule", "--json", "--params", str(params), "--models", str(models)])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_the_contract_names_the_schedules_games(benchmark: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The core names each game by the content id of what decides it: the ids `schedule --json` prints
    (Xent's and SKATE's games gather the schedule's jobs: their jobs are the printed ids, each once)."""
    printed = [row.get("game_id") or row["job_id"] for row in cli_schedule(benchmark, capsys)]
    games = schedule(benchmark, REPO / f"params/{benchmark}.yaml", REPO / "params/models.yaml")
    if benchmark in ("whoisspy", "elimination"):
        assert [game.id for game in games] == printed
    else:
        assert sorted(job for game in games for job in game.jobs) == sorted(printed)
    if benchmark == "skate":  # a round's id is an adaptive table's: its round job and its answer jobs
        from pipeline.skate.schedule import table_id

        spec = games[0].spec
        assert games[0].id == table_id(spec.schedule, spec.round, spec.params.answerers)


def test_the_training_loop_of_the_docs_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/environments.md's loop: ten episodes, their trajectories, and the agent rated among the bots."""
    page = (REPO / "docs/environments.md").read_text(encoding="utf-8")
    loop = page.split("## A training loop", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, Any] = {}
    exec(compile(loop, "docs/environments.md", "exec"), scope)
    assert len(scope["trajectories"]) == 10 and all(scope["trajectories"])
    assert all(reward == 0.0 for steps in scope["trajectories"] for _, _, reward in steps[:-1])
    assert "agent" in capsys.readouterr().out
