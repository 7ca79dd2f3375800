"""Many API games per job, as a user runs them: `python -m pipeline run` against a loopback
OpenAI-compatible server (127.0.0.1, bounded in requests and time), killed with SIGKILL mid-shard,
then rerun with the same command (no --unlock), compared with one job per game."""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from pipeline.testing.loopback import LoopbackServer
from pipeline.testing.project import pipeline_command
from tests.core.run.test_reliability_support import (
    env,
    game_records,
    job_stats,
    kill_when,
    ledger,
    make_project,
    mtimes,
    result_tables,
    snakemake,
)

pytestmark = pytest.mark.slow


def api_roster(url: str) -> list[dict]:
    # not reasoning models, as litellm's model map says of a model it does not know; stated in the
    # roster, so that a job whose every answer comes from the cache (the per-game run below) has no
    # reason to import litellm (seconds of CPU) just to ask its map
    api = {"model": "openai/loop", "extra": {"api_base": url}, "sampling": {"max_tokens": 16, "reasoning": False}}
    return [
        {"name": "api-a", **api},
        {"name": "api-b", **api, "sampling": {"max_tokens": 12, "reasoning": False}},
        {"name": "random-bot", "bot": "random"},
        {"name": "heuristic-bot", "bot": "heuristic"},
    ]


WHOISSPY = {
    "players": ["api-a", "api-b"],
    "fill": ["heuristic-bot", "random-bot"],
    "games_per_role": 1,
    "variants": ["baseline"],
    "replies": {"speech_max_tokens": 6, "vote_max_tokens": 3, "reasoning_max_tokens": 8},
    "rules": {"time_limit_s": 600},
    "rating": {"passes": 2, "bootstrap_resamples": 5},
}
ELIMINATION = {
    "reply_tokens": {"statement": 12, "preference": 8, "private": 8, "vote": 6},
    "schedule": {
        "lineups": [
            [
                "api-a",
                "api-b",
                "random-bot",
                "heuristic-bot",
                "random-bot",
                "heuristic-bot",
                "random-bot",
                "heuristic-bot",
            ]
        ],
        "rotations": 1,
        "max_seats_per_player": 4,
    },
    "rating": {"passes": 3, "bootstrap_resamples": 2, "bootstrap_passes": 1},
}
SHARDS = {"games_per_job": 64}


def run(project: Path, *args: str, background: bool = False):
    command = pipeline_command(project, "run", *args)  # the repository's workflow in the work directory
    if background:
        return subprocess.Popen(
            command,
            cwd=project,
            env=env(),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return subprocess.run(command, cwd=project, env=env(), text=True, capture_output=True, timeout=300, check=False)


def printed(process: subprocess.Popen[str]) -> str:
    """What a killed background run printed: its output pipe, read without waiting on any writer."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_killed_shard_run_resumes_with_the_same_command(tmp_path: Path) -> None:
    with LoopbackServer(latency_s=0.4, reply=lambda messages: "P2", max_requests=4000, max_seconds=280) as server:
        project = make_project(
            tmp_path / "p",
            roster=api_roster(server.url),
            whoisspy=WHOISSPY,
            elimination=ELIMINATION,
            gateway={"rate_limit_patience_s": 60},
            parallel=SHARDS,
        )
        games = project / "results/whoisspy/games"

        first = run(project, "whoisspy_all", background=True)

        def some_games_done() -> bool:
            return len(list(games.glob("*.json"))) >= 1

        kill_when(first, some_games_done)
        # Snakemake's plan of the command, as the run printed it before its first job: the 4 games
        # in one shard job
        assert job_stats(printed(first)) == {
            "whoisspy_shard": 1,
            "whoisspy_rate": 1,
            "whoisspy_report": 1,
            "whoisspy_all": 1,
        }
        # (checked before the kill would be racy; a live run is refused in the next test)
        done_before = sorted(p.name for p in games.glob("*.json"))
        assert 1 <= len(done_before) < 4, done_before
        assert any((project / ".snakemake/locks").iterdir())  # the killed run's stale lock
        stamps = mtimes(games)
        answered = {r["key"] for r in ledger(project)}

        again = run(project, "whoisspy_all", "elimination_all")
        assert again.returncode == 0, again.stderr[-4000:]
        assert "removing the lock of an earlier run" in again.stderr
        assert "| calls" not in again.stderr  # not a terminal: no progress lines in the log

    after = mtimes(games)
    assert all(after[name] == stamps[name] for name in done_before)  # finished games were not replayed
    assert len(list(games.glob("*.json"))) == 4
    sent = Counter(r["key"] for r in ledger(project))
    assert not [k for k, n in sent.items() if n > 1]  # no answered request was sent again
    assert answered <= set(sent)
    assert (project / "results/elimination/leaderboard.csv").exists()

    # the same tournament with one job per game (each game a Snakemake output), from the cache:
    # the same games, the same tables (every table is the rate jobs'; report only draws plots from them)
    single = tmp_path / "single"
    make_project(
        single,
        roster=api_roster(server.url),
        whoisspy=WHOISSPY,
        elimination=ELIMINATION,
        gateway={"rate_limit_patience_s": 60},
        parallel={"games_per_job": 0},
    )
    shutil.copytree(project / ".cache", single / ".cache")
    done = snakemake(single, "--cores", "2", "whoisspy_rate", "elimination_rate")
    assert job_stats(done.stdout + done.stderr)["whoisspy_play"] == 4
    assert game_records(single / "results") == game_records(project / "results")
    sharded, per_game = result_tables(project / "results"), result_tables(single / "results")
    assert sharded.keys() == per_game.keys()
    for name, table in sharded.items():
        assert table.equals(per_game[name]), name


def test_a_live_run_is_refused(tmp_path: Path) -> None:
    with LoopbackServer(latency_s=1.0, reply=lambda messages: "P2", max_requests=400, max_seconds=120) as server:
        project = make_project(
            tmp_path / "p", roster=api_roster(server.url), whoisspy=WHOISSPY, elimination=ELIMINATION, parallel=SHARDS
        )
        live = run(project, "whoisspy_all", background=True)
        try:
            locks = project / ".snakemake/locks"
            deadline = time.monotonic() + 120
            while not (locks.is_dir() and any(locks.iterdir())):
                assert time.monotonic() < deadline and live.poll() is None
                time.sleep(0.1)
            refused = run(project, "whoisspy_all")
            assert refused.returncode == 2
            assert "another run is working" in refused.stderr and str(live.pid) in refused.stderr
        finally:
            kill_when(live, lambda: True)


def run_in_terminal(command: list[str], cwd: Path) -> str:
    """Run `command` with a pseudo-terminal as its stdout and stderr; return what it printed."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(command, cwd=cwd, env=env(), stdin=terminal, stdout=terminal, stderr=terminal)
    os.close(terminal)
    chunks = []
    while True:
        try:
            data = os.read(controller, 65536)
        except OSError:  # the terminal closed: the process ended
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=300)
    os.close(controller)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_shows_the_stage_progress(tmp_path: Path) -> None:
    with LoopbackServer(latency_s=0.05, reply=lambda messages: "P2", max_requests=2000, max_seconds=240) as server:
        project = make_project(
            tmp_path / "p", roster=api_roster(server.url), whoisspy=WHOISSPY, elimination=ELIMINATION, parallel=SHARDS
        )
        printed = run_in_terminal(pipeline_command(project, "run", "whoisspy_all"), project)
    final = re.findall(
        r"\[whoisspy_all\] games (\d+)/(\d+) \| calls (\d+) \(cache hits (\d+)\) \| cost \$[0-9.]+ "
        r"\| elapsed \d+m\d+s \| left",
        printed,
    )
    assert final, printed[-3000:]
    done, total, calls, hits = map(int, final[-1])
    assert done == total == 4
    assert calls == server.stats.accepted and hits == 0
