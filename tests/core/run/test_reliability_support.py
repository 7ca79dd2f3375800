"""Shared helpers of the reliability tests: small demo projects, Snakemake on the command line,
table comparisons that ignore wall-clock columns. (No tests here.)

The demo roster stands in API models with litellm's `mock_response` (answered at the provider
boundary in every job process, priced by litellm's price table, with a fake key in the
environment), next to the real bots. The fault injection, the cache, the ledger and the calls
tables all work exactly as for a real provider.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from pipeline.testing.project import copy_project, make_workdir, snakemake_command

PYTHON_BIN = Path(sys.executable).parent
TRIGGERS = ["--rerun-triggers", "code", "input", "params", "software-env"]
MOCK_ROSTER: list[dict[str, Any]] = [
    {"name": "mock-a", "model": "openai/gpt-4o-mini", "extra": {"mock_response": "P2"}, "sampling": {"max_tokens": 16}},
    {
        "name": "mock-b",
        "model": "openai/gpt-4o",
        "extra": {"mock_response": "I would say P3"},
        "sampling": {"max_tokens": 16},
    },
    {"name": "random-bot", "bot": "random"},
    {"name": "heuristic-bot", "bot": "heuristic"},
]
WHOISSPY = {
    "players": ["mock-a"],
    "fill": ["heuristic-bot", "random-bot"],
    "games_per_role": 1,
    "variants": ["baseline"],
    "replies": {"speech_max_tokens": 6, "vote_max_tokens": 3, "reasoning_max_tokens": 8},
    # the game's answer time limit makes a result depend on the machine's load (a slow first call
    # is a foul); far out of reach here, so runs on a loaded machine compare like for like
    "rules": {"time_limit_s": 600},
    "rating": {"passes": 2, "bootstrap_resamples": 5},
}
ELIMINATION = {
    "reply_tokens": {"statement": 12, "preference": 8, "private": 8, "vote": 6},
    "schedule": {
        # mock-b in two seats: enough model calls for the fault tests' 20% rate to show every kind
        "lineups": [
            [
                "mock-b",
                "heuristic-bot",
                "random-bot",
                "heuristic-bot",
                "mock-b",
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
# columns that measure the wall clock (or a machine's speed), never a game's result
TIME_COLUMN = re.compile(r"latency|timestamp|elapsed|seconds|_time$|^time$|duration")
PER_JOB = {"games", "answers", "generate"}  # folders of per-job outputs (stacked by the rating jobs)


def make_project(
    root: Path,
    roster: list[dict[str, Any]] | None = None,
    whoisspy: dict[str, Any] | None = None,
    elimination: dict[str, Any] | None = None,
    gateway: dict[str, Any] | None = None,
    parallel: dict[str, Any] | None = None,
    copy: bool = False,
) -> Path:
    """A work directory of the repository's workflow with a small demo in params/ (cache and ledger
    inside it; profiles/ a link to the repository's, for `--profile profiles/NAME`). One job per game
    unless `parallel` says otherwise (test_shards.py runs shards). `copy`: a repository copy instead
    (Snakefile, params, pipeline/, profiles, envs), for DVC stages and tests that edit its rule files."""
    if copy:
        copy_project(root, ("Snakefile", "params", "pipeline", "profiles", "envs"))
    else:
        make_workdir(root, profiles=True)
    write_models(root, roster or MOCK_ROSTER, gateway, parallel)
    write_yaml(root / "params/whoisspy.yaml", whoisspy or WHOISSPY)
    write_yaml(root / "params/elimination.yaml", elimination or ELIMINATION)
    return root


def write_yaml(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def write_models(
    root: Path,
    roster: list[dict[str, Any]],
    gateway: dict[str, Any] | None = None,
    parallel: dict[str, Any] | None = None,
) -> None:
    settings = {"backoff_base_s": 0.0, "backoff_max_s": 0.0, "cache_dir": ".cache/responses", **(gateway or {})}
    write_yaml(
        root / "params/models.yaml",
        {
            "roster": roster,
            "providers": {"default": {"max_concurrency": 4}, "local": {"max_concurrency": 1}},
            "gateway": settings,
            "parallel": parallel or {"games_per_job": 0},
        },
    )


def env(**extra: str) -> dict[str, str]:
    # the user's pipeline settings out; the tests' fork server (tests/conftest.py) stays
    base = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_") or k == "PIPELINE_FORK_SERVER"}
    base.update(PATH=f"{PYTHON_BIN}:{os.environ['PATH']}", OPENAI_API_KEY="sk-fake-reliability-tests")
    base.update(extra)
    return base


def snakemake_cmd(project: Path, *args: str) -> list[str]:
    """Snakemake with the project's triggers on the workflow of `project` (run it with `cwd=project`)."""
    return snakemake_command(project, *TRIGGERS, *args)


def snakemake(
    project: Path, *args: str, extra_env: dict[str, str] | None = None, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        snakemake_cmd(project, *args),
        cwd=project,
        env=env(**(extra_env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check:
        assert done.returncode == 0, f"snakemake {' '.join(args)} failed:\n{done.stdout}\n{done.stderr[-6000:]}"
    return done


def planned_jobs(project: Path, *targets: str) -> dict[str, int]:
    """Snakemake's own job counts per rule for `targets` (a dry run)."""
    done = snakemake(project, "-n", "--cores", "2", *targets)
    return job_stats(done.stdout + done.stderr)


def job_stats(text: str) -> dict[str, int]:
    """The job counts per rule of the first "Job stats" table in Snakemake's output `text`: what a
    dry run plans, or what a real run starts with (it prints the same table before its first job).
    Empty when Snakemake had nothing to do."""
    if "Nothing to be done" in text:
        return {}
    assert "Job stats:" in text, f"no job stats in Snakemake's output:\n{text[-3000:]}"
    block = text.split("Job stats:", 1)[1]
    counts: dict[str, int] = {}
    for line in block.splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        counts[parts[0]] = int(parts[1])
    counts.pop("total", None)
    return counts


def start_snakemake(project: Path, *args: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Snakemake in its own process group, so a test can SIGKILL it with every job it started."""
    return subprocess.Popen(
        snakemake_cmd(project, *args),
        cwd=project,
        env=env(**(extra_env or {})),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill_when(process: subprocess.Popen[str], ready: Callable[[], bool], timeout: float = 240) -> None:
    """SIGKILL the whole process group as soon as `ready()` holds (fails if the run ends first)."""
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            raise AssertionError(
                f"the run ended before the kill point:\n{process.stdout.read() if process.stdout else ''}"
            )
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            raise AssertionError("the kill point was never reached")
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def strip_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_times(v) for k, v in value.items() if not TIME_COLUMN.search(k)}
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


def game_targets(project: Path) -> list[str]:
    """The output of every scheduled game job of whoisspy and elimination (no rating jobs)."""
    from pipeline.core.models.roster import load_models
    from pipeline.elimination.schedule import schedule_from_files
    from pipeline.whoisspy.config import load_whoisspy
    from pipeline.whoisspy.schedule import build_schedule

    models = load_models(project / "params/models.yaml")
    spy = build_schedule(load_whoisspy(project / "params/whoisspy.yaml"), models)
    elimination = schedule_from_files(project / "params/elimination.yaml", project / "params/models.yaml")
    return [f"results/whoisspy/games/{g.game_id}.json" for g in spy] + [
        f"results/elimination/games/{g.game_id}" for g in elimination
    ]


def game_records(folder: Path) -> dict[str, Any]:
    """Every game record under `folder` (whoisspy JSON, elimination JSONL), without wall-clock fields."""
    records: dict[str, Any] = {}
    for path in sorted(folder.rglob("games/*.json")):
        records[path.stem] = strip_times(json.loads(path.read_text()))
    for path in sorted(folder.rglob("games/*/*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        records[path.parent.name] = strip_times(lines)
    return records


def result_tables(results: Path, skip: Iterable[str] = ("calls",)) -> dict[str, pl.DataFrame]:
    """Every parquet table under results/ except per-job files and `skip`, wall-clock columns dropped."""
    tables = {}
    for path in sorted(results.rglob("*.parquet")):
        rel = str(path.relative_to(results))
        if PER_JOB & set(path.relative_to(results).parts) or path.stem in skip:
            continue
        frame = pl.read_parquet(path)
        frame = frame.drop([c for c in frame.columns if TIME_COLUMN.search(c)])
        tables[rel] = frame
    return tables


def calls_of(results: Path) -> pl.DataFrame:
    """Every per-job calls table under results/ (what each job sent or took from the cache)."""
    from pipeline.core.artifacts.schemas import CallsSchema, read_table

    files = [p for p in results.rglob("*calls.parquet") if PER_JOB & set(p.relative_to(results).parts)]
    return pl.concat([read_table(p, CallsSchema) for p in sorted(files)]) if files else pl.DataFrame()


def ledger(project: Path) -> list[dict[str, Any]]:
    from pipeline.core.models.budget import LEDGER_NAME, SpendLedger

    return SpendLedger(project / ".cache/responses" / LEDGER_NAME).records()


def mtimes(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if p.is_file() and "logs" not in p.parts
    }


def snakemake_done(project: Path, output: str) -> bool:
    """Whether Snakemake has recorded the job of `output` (relative path) as finished."""
    import base64

    name = base64.b64encode(output.encode()).decode()
    meta = project / ".snakemake"
    return (meta / "metadata" / name).exists() and not (meta / "incomplete" / name).exists()
