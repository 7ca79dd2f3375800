"""A provider's top tier from one machine (issue 46): a thousand concurrent API games, and the
client CPU each call costs, against bare `litellm.acompletion` on the same kind of server.

The tournament: Elimination and Who is Spy games whose every seat is an API model, played by the
pipeline's own shard jobs (`python -m pipeline <benchmark> play <ids> --marker ...`, the command a
shard job runs: response cache, spend ledger, calls journal, machine-wide provider limits), several
processes at once sharing the limits, against a loopback OpenAI-compatible server
(pipeline/testing/loopback.py) with a provider's latency mix (most replies 1-3 s, a slow tail of
5-15 s, a reasoning model's replies 20-40 s) that answers 429 with Retry-After above the
configured requests per minute (over the minute and over `--burst-s` windows).

Reported (bench/results/provider_scale.json):
- value: client CPU per answered call of the pipeline's processes (every shard process, every
  thread) over the steady part of the run (from the 10% to the 90% point of the calls, so the
  imports before the first call and the tail when few games are left are outside), in ms;
- baseline: bare `litellm.acompletion` on a fresh server of the same settings, in the pipeline's
  process layout (one process per shard, each with its own event loop and litellm, replaying
  every n-th of the steady part's request bodies at its share of the rate), CPU of the call phase
  per call, measured after the tournament, twice, interleaved with one bare process at the whole
  rate (`ratio_to_single_process_bare`);
- rate_limit_share: answered requests per minute over the steady part / the configured rpm;
- peak_memory_mb: the sum of the RSS of every pipeline process, sampled every 0.5 s;
- calls, games written, paid twice (ledger lines and provider answers of one request key).

    python bench/provider_scale.py                  # 1,000 games at once, about 20 minutes on 2 cores (4 bare litellm runs included)
    python bench/provider_scale.py --smoke          # 40 games, latencies / 10: about 2 minutes
    python bench/provider_scale.py --paper-tenth    # part 3: params/paper's plan at a tenth (8 minutes; docs/api_scale.md)
    python bench/provider_scale.py --smoke --profile /tmp/prof   # py-spy (pip install py-spy) on each shard

CPU time per call is the robust figure on a shared machine; wall time and the share of the limit
depend on what else runs (the load average before and after is in `machine`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import load_average, run_conditions, write_result
from bench.api_throughput import seat_reply
from pipeline.core.run.workflow import copy_workflow
from pipeline.testing.loopback import LatencyMix, LoopbackServer

REPO = Path(__file__).resolve().parents[1]
TREE = ("Snakefile", "params", "pipeline", "profiles", "envs")
KEY_ENV = {"OPENAI_API_KEY": "sk-loopback-bench"}
CHAT_MODEL = "gpt-4o-mini"  # litellm prices both, so the ledger holds real-looking costs
REASONING_MODEL = "o3-mini"
HIDDEN_REASONING_TOKENS = 200
RESULTS_FILE = Path(__file__).resolve().parent / "results" / "provider_scale.json"


def loopback_reply(messages: Sequence[dict[str, Any]]) -> str:
    """bench/api_throughput.py's player: a vote names an offered seat, anything else a short description."""
    return seat_reply(messages)


# -- the project ---------------------------------------------------------------------------------
def models_yaml(url: str, args: argparse.Namespace, games_per_job: int) -> dict[str, Any]:
    chat = [
        {
            "name": f"chat-{i}",
            "model": f"openai/{CHAT_MODEL}",
            "extra": {"api_base": url},
            "sampling": {"temperature": 0.7},
        }
        for i in range(args.chat_models)
    ]
    reasoner = {
        "name": "reasoner",
        "model": f"openai/{REASONING_MODEL}",
        "extra": {"api_base": url},
        "sampling": {"temperature": 1.0, "reasoning_tokens": 512},  # as a reasoning API accepts
    }
    return {
        "roster": [*chat, reasoner, {"name": "random-bot", "bot": "random"}],
        "providers": {"openai": {"rpm": args.rpm, "max_concurrency": args.max_concurrency, "tpm": 0}},
        "gateway": {
            "cache_dir": ".cache/responses",
            "timeout_s": 120.0 * args.time_scale + 30.0,
            "backoff_base_s": 0.5,
            "backoff_max_s": 10.0,
            "rate_limit_patience_s": 600,
        },
        "parallel": {"games_per_job": games_per_job, "jobs": args.processes},
    }


def elimination_yaml(games: int, players: list[str], seats: int) -> dict[str, Any]:
    """`games` games of `seats` API seats: lineups of distinct players, every rotation, replayed."""
    lineups = [[players[(i + k) % len(players)] for k in range(seats)] for i in range(len(players))]
    per_lineup = seats  # rotations
    return {
        "seats": seats,
        "history_rounds": 0,  # the whole game in every prompt, as real tournaments run it
        "schedule": {
            "lineups": lineups,
            "rotations": per_lineup,
            "repeats": max(1, math.ceil(games / (len(lineups) * per_lineup))),
            "max_seats_per_player": 1,
        },
        "rating": {"passes": 1, "bootstrap_resamples": 0, "bootstrap_passes": 1},
    }


def whoisspy_yaml(games: int, players: list[str]) -> dict[str, Any]:
    """`games` one-round games of 6 API seats (each player as spy and as civilian): 12 calls each."""
    return {
        "players": players,
        "fill": players,
        "games_per_role": max(1, math.ceil(games / (2 * len(players)))),
        "variants": ["baseline"],
        "rank_variant": "baseline",
        "rules": {"seats": 6, "rounds": 1, "min_players": 3, "time_limit_s": 600, "max_chars": 400},
        "rating": {"passes": 1, "bootstrap_resamples": 0},
    }


def make_project(work: Path, url: str, args: argparse.Namespace) -> Path:
    project = copy_workflow(REPO, work / "project", TREE)
    players = [*(f"chat-{i}" for i in range(args.chat_models)), "reasoner"]
    counts = game_counts(args)
    per_job = math.ceil(args.games / args.processes)
    files = {
        "models.yaml": models_yaml(url, args, per_job),
        "elimination.yaml": elimination_yaml(counts["elimination"], players, args.elimination_seats),
        "whoisspy.yaml": whoisspy_yaml(counts["whoisspy"], players),
    }
    for name, content in files.items():
        (project / "params" / name).write_text(yaml.safe_dump(content, sort_keys=False))
    return project


def game_counts(args: argparse.Namespace) -> dict[str, int]:
    elimination = round(args.games * args.elimination_share)
    return {"elimination": elimination, "whoisspy": args.games - elimination}


def env_for(project: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_")},
        **KEY_ENV,
        "PYTHONPATH": str(project),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }


def scheduled(project: Path, benchmark: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pipeline", benchmark, "schedule", "--json"],
        cwd=project,
        env=env_for(project),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [game["game_id"] for game in json.loads(out)]


def shard_commands(project: Path, args: argparse.Namespace) -> list[tuple[str, list[str], list[str]]]:
    """(benchmark, game ids, command) of each shard process: the games split into `processes`
    shards, each benchmark's apart (a shard job plays one benchmark's games)."""
    counts = game_counts(args)
    games = {b: scheduled(project, b)[: counts[b]] for b in ("elimination", "whoisspy")}
    per_benchmark = {
        "elimination": max(1, args.processes // 2),
        "whoisspy": max(1, args.processes - args.processes // 2),
    }
    commands = []
    for benchmark, ids in games.items():
        parts = per_benchmark[benchmark]
        size = math.ceil(len(ids) / parts)
        for k in range(parts):
            chunk = ids[k * size : (k + 1) * size]
            if not chunk:
                continue
            marker = f"results/{benchmark}/shards/bench-{k}.json"
            command = [
                sys.executable,
                "-m",
                "pipeline",
                benchmark,
                "play",
                ",".join(chunk),
                "--params",
                f"params/{benchmark}.yaml",
                "--models",
                "params/models.yaml",
                "--out",
                f"results/{benchmark}/games",
                "--marker",
                marker,
            ]
            commands.append((benchmark, chunk, command))
    return commands


def profiled(command: list[str], folder: Path | None, index: int) -> list[str]:
    """The command under py-spy (every thread, on-CPU samples only, collapsed stacks) when `folder` is set."""
    if folder is None:
        return command
    folder.mkdir(parents=True, exist_ok=True)
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return [
        spy,
        "record",
        "-f",
        "raw",
        "-r",
        "250",
        "--threads",
        "--gil",
        "-o",
        str(folder / f"shard-{index}.txt"),
        "--",
        *command,
    ]


# -- measuring -----------------------------------------------------------------------------------
class Sampler:
    """Every 0.5 s: the summed CPU seconds (all threads, and the main threads alone) and RSS of the
    given processes and their descendants."""

    def __init__(self, pids: list[int]) -> None:
        import psutil

        self.roots = [psutil.Process(pid) for pid in pids]
        # (monotonic, cpu seconds, of them the main threads', rss bytes)
        self.timeline: list[tuple[float, float, float, int]] = []
        self._last: dict[int, tuple[float, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            rss = 0
            for root in self.roots:
                try:
                    procs = [root, *root.children(recursive=True)]
                except psutil.NoSuchProcess:
                    continue
                for proc in procs:
                    try:
                        with proc.oneshot():
                            times = proc.cpu_times()
                            main = next((t for t in proc.threads() if t.id == proc.pid), None)
                            rss += proc.memory_info().rss
                    except psutil.NoSuchProcess:
                        continue
                    main_cpu = main.user_time + main.system_time if main is not None else 0.0
                    self._last[proc.pid] = (times.user + times.system, main_cpu)
            cpu = sum(total for total, _ in self._last.values())
            main_cpu = sum(main for _, main in self._last.values())
            self.timeline.append((time.monotonic(), cpu, main_cpu, rss))
            self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def cpu_at(self, when: float, column: int = 1) -> float:
        """CPU seconds at `when` (column 2: the main threads'), interpolated between samples."""
        points = self.timeline
        for before, after in zip(points, points[1:], strict=False):
            t0, t1 = before[0], after[0]
            if t0 <= when <= t1:
                share = (when - t0) / (t1 - t0) if t1 > t0 else 0.0
                return float(before[column] + (after[column] - before[column]) * share)
        return float(points[-1][column]) if points and when > points[-1][0] else 0.0

    @property
    def peak_rss_mb(self) -> float:
        return round(max((point[3] for point in self.timeline), default=0) / 2**20, 1)


def steady_window(times: list[float], low: float = 0.1, high: float = 0.9) -> tuple[float, float, int]:
    """(start, end, calls) between the `low` and `high` points of the answered calls' arrivals."""
    ordered = sorted(times)
    first, last = int(len(ordered) * low), max(int(len(ordered) * high) - 1, int(len(ordered) * low))
    return ordered[first], ordered[last], last - first


def games_written(project: Path, commands: list[tuple[str, list[str], list[str]]]) -> tuple[int, int]:
    written = total = 0
    for benchmark, ids, _ in commands:
        folder = project / "results" / benchmark / "games"
        for game_id in ids:
            total += 1
            if benchmark == "whoisspy":
                written += (folder / f"{game_id}.json").is_file() and (folder / f"{game_id}.calls.parquet").is_file()
            else:
                written += (folder / game_id / "calls.parquet").is_file()
    return written, total


def paid_twice(project: Path, server: LoopbackServer) -> dict[str, int]:
    """Request keys with more than one spend-ledger line, and request bodies the provider answered
    (a whole 200 completion delivered) more than once."""
    ledger = project / ".cache" / "responses" / "spend-ledger.jsonl"
    keys = Counter(json.loads(line)["key"] for line in ledger.read_text().splitlines() if line.strip())
    answered = Counter(server.answered_keys())
    return {
        "ledger_lines": sum(keys.values()),
        "ledger_keys_twice": sum(1 for n in keys.values() if n > 1),
        "provider_answers_twice": sum(1 for n in answered.values() if n > 1),
    }


def limiter_state(project: Path) -> dict[str, Any]:
    """The machine-wide limit store's provider rows at the end (adaptive concurrency, 429s met)."""
    import sqlite3

    path = project / ".cache" / "provider-limits.sqlite"
    if not path.exists():
        return {}
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT name, concurrency, rejected FROM providers").fetchall()
    return {name: {"concurrency": round(concurrency, 1), "rejected": rejected} for name, concurrency, rejected in rows}


def server_settings(args: argparse.Namespace, limit: int) -> dict[str, Any]:
    return {
        "latency": LatencyMix(scale=args.time_scale),
        "limit": limit,
        "window_s": 60.0,
        "burst_s": args.burst_s if limit else None,
        "reply": loopback_reply,
        "reasoning": {REASONING_MODEL: HIDDEN_REASONING_TOKENS},
        "max_requests": 10**9,
        "max_seconds": args.timeout + 600,
        "retry_after_ms": True,  # as OpenAI's 429s say the wait
    }


# -- the baseline: bare litellm --------------------------------------------------------------------
def bare_worker(bodies_path: str, url: str, rate_per_s: float) -> None:
    """(A process of its own.) Send the bodies through bare `litellm.acompletion`, paced at
    `rate_per_s`; print its import CPU and its call phase's CPU."""
    started = time.process_time()
    import litellm

    imported = time.process_time() - started
    bodies = json.loads(Path(bodies_path).read_text())

    async def one(body: dict[str, Any]) -> bool:
        params = {k: v for k, v in body.items() if k not in ("model", "messages")}
        try:
            await litellm.acompletion(
                model=f"openai/{body['model']}",
                messages=body["messages"],
                api_base=url,
                api_key=KEY_ENV["OPENAI_API_KEY"],
                num_retries=0,
                timeout=600,
                **params,
            )
        except Exception:  # noqa: BLE001 - counted, not retried: the baseline is the call itself
            return False
        return True

    async def run() -> dict[str, Any]:
        await one(bodies[0])  # litellm's first call imports more: not part of a call's cost
        cpu = time.process_time()
        main = time.thread_time()
        wall = time.monotonic()
        tasks = []
        for i, body in enumerate(bodies):
            delay = wall + i / rate_per_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one(body)))
        answered = sum(await asyncio.gather(*tasks))
        return {
            "calls": len(bodies),
            "answered": answered,
            "cpu_s": round(time.process_time() - cpu, 3),
            "main_thread_cpu_s": round(time.thread_time() - main, 3),
            "wall_s": round(time.monotonic() - wall, 2),
            "import_cpu_s": round(imported, 3),
        }

    print(json.dumps(asyncio.run(run())))


def bare_litellm(
    work: Path, bodies: list[dict[str, Any]], args: argparse.Namespace, tag: str, workers: int = 1
) -> dict[str, Any]:
    """Bare litellm replaying `bodies` at the run's rate, in `workers` processes at once (each every
    `workers`-th body at its share of the rate), on a fresh server: the CPU per call of them all."""
    paths = []
    for k in range(workers):
        path = work / f"bodies-{tag}-{k}.json"
        path.write_text(json.dumps(bodies[k::workers]))
        paths.append(path)
    rate = args.rpm / 60.0 / workers
    with LoopbackServer(**server_settings(args, 0)) as server:
        running = [
            subprocess.Popen(
                [sys.executable, __file__, "--bare-worker", str(path), server.url, str(rate)],
                env={**os.environ, **KEY_ENV},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for path in paths
        ]
        outputs = [process.communicate(timeout=args.timeout) for process in running]
    runs = []
    for process, (stdout, stderr) in zip(running, outputs, strict=True):
        if process.returncode != 0:
            raise RuntimeError(f"bare litellm worker failed: {stderr[-2000:]}")
        runs.append(json.loads(stdout.strip().splitlines()[-1]))
    result: dict[str, Any] = {
        "processes": workers,
        "calls_per_s_per_process": round(rate, 2),
        **{k: sum(run[k] for run in runs) for k in ("calls", "answered")},
        **{k: round(sum(run[k] for run in runs), 3) for k in ("cpu_s", "main_thread_cpu_s")},
        "wall_s": max(run["wall_s"] for run in runs),
        "import_cpu_s": round(max(run["import_cpu_s"] for run in runs), 3),
    }
    result["cpu_ms_per_call"] = round(result["cpu_s"] * 1000 / result["calls"], 3)
    result["main_thread_ms_per_call"] = round(result["main_thread_cpu_s"] * 1000 / result["calls"], 3)
    return result


def mean_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Repeated baseline runs: the mean CPU per call, with each run kept."""
    return {
        "cpu_ms_per_call": round(sum(run["cpu_ms_per_call"] for run in runs) / len(runs), 3),
        "main_thread_ms_per_call": round(sum(run["main_thread_ms_per_call"] for run in runs) / len(runs), 3),
        "processes": runs[0]["processes"],
        "calls_per_s_per_process": runs[0]["calls_per_s_per_process"],
        "runs": runs,
    }


# -- the tournament --------------------------------------------------------------------------------
def tournament(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    with LoopbackServer(**server_settings(args, args.rpm)) as server:
        project = make_project(work, server.url, args)
        commands = shard_commands(project, args)
        before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        logs = [open(work / f"shard-{i}.log", "w") for i in range(len(commands))]
        processes = [
            subprocess.Popen(
                profiled(command, args.profile, i),
                cwd=project,
                env=env_for(project),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for i, ((_, _, command), log) in enumerate(zip(commands, logs, strict=True))
        ]
        sampler = Sampler([p.pid for p in processes])
        deadline = started + args.timeout
        codes = []
        for process in processes:
            try:
                codes.append(process.wait(timeout=max(1.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                process.kill()
                codes.append(process.wait())
        wall = time.monotonic() - started
        sampler.stop()
        for log in logs:
            log.close()
        after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        server.settle()
        total_cpu = (after_children.ru_utime - before_children.ru_utime) + (
            after_children.ru_stime - before_children.ru_stime
        )
        accepted = list(server.stats.accepted_times)
        low, high, window_calls = steady_window(accepted)
        window_cpu = sampler.cpu_at(high) - sampler.cpu_at(low)
        window_main = sampler.cpu_at(high, 2) - sampler.cpu_at(low, 2)
        span_min = (high - low) / 60.0
        written, scheduled_games = games_written(project, commands)
        twice = paid_twice(project, server)
        statuses = Counter(status for _, status in server.stats.arrivals)
        # the baseline replays the bodies of the steady part, evenly picked: later moves carry longer
        # games in their prompts, which costs litellm more per call too
        steady = [b for b, t in zip(server.requests, accepted, strict=False) if low <= t <= high and b.get("messages")]
        step = max(1, len(steady) // max(1, args.baseline_calls))
        bodies = steady[::step][: args.baseline_calls]
        limiter = limiter_state(project)
        result = {
            "processes": len(commands),
            "games_per_process": [len(ids) for _, ids, _ in commands],
            "return_codes": codes,
            "wall_s": round(wall, 1),
            "cpu_s_total": round(total_cpu, 2),
            "calls_answered": server.stats.accepted,
            "http_429": statuses.get(429, 0),
            "cpu_ms_per_call_whole_run": round(total_cpu * 1000 / max(1, server.stats.accepted), 3),
            "steady": {
                "from_s": round(low - started, 1),
                "to_s": round(high - started, 1),
                "calls": window_calls,
                "cpu_s": round(window_cpu, 2),
                "cpu_ms_per_call": round(window_cpu * 1000 / max(1, window_calls), 3),
                # the event loop's thread; the rest: litellm's executor, the limit store, the answer writer
                "main_thread_ms_per_call": round(window_main * 1000 / max(1, window_calls), 3),
                "per_minute": round(window_calls / span_min, 1) if span_min else None,
            },
            "max_in_any_60s": server.max_in_any_window(60.0),
            "limiter_at_end": limiter,
            "max_in_flight": server.stats.max_in_flight,
            "peak_memory_mb": sampler.peak_rss_mb,
            "games_scheduled": scheduled_games,
            "games_written": written,
            "paid_twice": twice,
            "tails": []
            if all(c == 0 for c in codes)
            else [(work / f"shard-{i}.log").read_text()[-1500:] for i in range(len(commands))],
        }
    result["_bodies"] = bodies
    return result


# -- part 3: params/paper at a tenth, time compressed ----------------------------------------------
#: each provider prefix of params/paper, and the OpenAI-compatible litellm prefix that plays it against
#: the loopback (litellm speaks Anthropic's and Google's own APIs to anthropic/ and gemini/, which the
#: loopback does not): the stand-in keeps the provider's own limits, under its own prefix
STAND_INS = {"openai": "openai", "anthropic": "hosted_vllm", "gemini": "lm_studio", "deepseek": "deepseek"}
PAPER_HIDDEN_REASONING = 1500  # hidden reasoning tokens of a reasoning model's reply (medium effort)


def paper_tenth_params(project: Path, urls: dict[str, str], k: float) -> Path:
    """params/paper at a tenth of its games (Elimination and Who is Spy), every API model at the
    loopback under its provider's stand-in prefix, every time k times shorter and every rate k
    times higher (a simulated minute lasts 60/k s)."""
    import litellm

    source = REPO / "params" / "paper"
    target = project / "params" / "paper-tenth"
    target.mkdir(parents=True)
    for name in ("leaderboard.yaml", "skate.yaml", "xent.yaml"):
        shutil.copy(source / name, target / name)
    models = yaml.safe_load((source / "models.yaml").read_text())
    reasoning = set(reasoning_entries())
    prices: dict[str, dict[str, float]] = {}
    for entry in models["roster"]:
        if "model" not in entry:
            continue
        provider, name = entry["model"].split("/", 1)
        info = litellm.get_model_info(entry["model"])
        entry["model"] = f"{STAND_INS[provider]}/{name}"
        entry["extra"] = {"api_base": urls[provider]}
        if entry["name"] in reasoning:  # as the paper's roster runs it; the stand-in's string is not in litellm's map
            entry.setdefault("sampling", {})["reasoning"] = True
        prices[entry["model"]] = {
            "input_usd_per_mtok": float(info["input_cost_per_token"]) * 1e6,
            "output_usd_per_mtok": float(info["output_cost_per_token"]) * 1e6,
        }
    models["providers"] = {
        STAND_INS.get(name, name): {
            **limits,
            **{key: limits[key] * k for key in ("rpm", "tpm") if limits.get(key)},
        }
        for name, limits in models["providers"].items()
    }
    gateway = models["gateway"]
    for key in ("timeout_s", "rate_limit_patience_s", "backoff_base_s", "backoff_max_s"):
        gateway[key] = gateway[key] / k
    gateway["prices"] = prices
    (target / "models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    elimination = yaml.safe_load((source / "elimination.yaml").read_text())
    elimination["schedule"]["lineups_per_player"] = round(elimination["schedule"]["lineups_per_player"] / 10)
    (target / "elimination.yaml").write_text(yaml.safe_dump(elimination, sort_keys=False))
    whoisspy = yaml.safe_load((source / "whoisspy.yaml").read_text())
    whoisspy["games_per_role"] = math.ceil(whoisspy["games_per_role"] / 10)
    whoisspy["rules"]["time_limit_s"] = whoisspy["rules"]["time_limit_s"] / k  # a foul is a slow reply in model time
    (target / "whoisspy.yaml").write_text(yaml.safe_dump(whoisspy, sort_keys=False))
    return target


def mean_latency_s(mix: LatencyMix, reasoning: bool) -> float:
    """The mean reply time of the loopback's latency mix (seconds, scale included)."""

    def mid(span: tuple[float, float]) -> float:
        return (span[0] + span[1]) / 2

    chat = (1 - mix.tail) * mid(mix.chat_s) + mix.tail * mid(mix.tail_s)
    return (mid(mix.reasoning_s) if reasoning else chat) * mix.scale


def plan_bound_minutes(plan: dict[str, Any], models: dict[str, Any], mix: LatencyMix) -> dict[str, Any]:
    """The wall time the providers' limits allow for the plan's expected calls and tokens (minutes;
    the plan itself gives none): per provider the largest of calls / rpm, tokens / tpm, and the
    calls' reply time / max_concurrency (requests in flight at the limit, each as long as the
    provider's mean reply time, which a user knows from the provider and the plan does not)."""
    provider_of = {e["name"]: e["model"].split("/", 1)[0] for e in models["roster"] if "model" in e}
    reasoning = set(reasoning_entries())
    totals: dict[str, list[float]] = {}
    for row in plan["rows"]:
        provider = provider_of.get(row["model"])
        if provider is None:
            continue
        acc = totals.setdefault(provider, [0.0, 0.0, 0.0])
        calls = row["expected_calls"] or 0
        acc[0] += calls
        acc[1] += (row["expected_tokens_in"] or 0) + (row["expected_tokens_out"] or 0)
        acc[2] += calls * mean_latency_s(mix, row["model"] in reasoning)
    bound = {}
    for provider, (calls, tokens, reply_s) in totals.items():
        limits = models["providers"].get(provider, models["providers"].get("default", {}))
        by_calls = calls / limits["rpm"] if limits.get("rpm") else 0.0
        by_tokens = tokens / limits["tpm"] if limits.get("tpm") else 0.0
        by_flight = reply_s / 60.0 / limits["max_concurrency"] if limits.get("max_concurrency") else 0.0
        bound[provider] = {
            "calls": calls,
            "tokens": tokens,
            "minutes_by_rpm": round(by_calls, 2),
            "minutes_by_tpm": round(by_tokens, 2),
            "minutes_by_concurrency": round(by_flight, 2),
            "minutes": round(max(by_calls, by_tokens, by_flight), 2),
        }
    return {"providers": bound, "minutes": max((b["minutes"] for b in bound.values()), default=0.0)}


def paper_tenth(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    k = args.time_compression
    project = copy_workflow(REPO, work / "paper", TREE)
    servers = {
        provider: LoopbackServer(
            latency=LatencyMix(scale=1.0 / k),
            reply=loopback_reply,
            reasoning=dict.fromkeys(reasoning_entries().values(), PAPER_HIDDEN_REASONING),
            retry_after_ms=True,
            keep_requests=False,
            max_requests=10**9,
            max_seconds=args.timeout + 600,
        ).start()
        for provider in STAND_INS
    }
    try:
        params = paper_tenth_params(project, {p: s.url for p, s in servers.items()}, k)
        models = yaml.safe_load((params / "models.yaml").read_text())
        for provider, server in servers.items():  # the provider holds its limit (k times faster), as the roster says
            server.limit = int(models["providers"][STAND_INS[provider]].get("rpm") or 0)
            server.burst_s = 10.0 if server.limit else None
        env = {
            **env_for(project),
            **{f"{n}_API_KEY": "sk-loopback" for n in ("OPENAI", "DEEPSEEK", "HOSTED_VLLM", "LM_STUDIO")},
        }
        targets = ["elimination_all", "whoisspy_all"]
        relative = str(params.relative_to(project))
        plan_started = time.monotonic()
        planned = subprocess.run(
            [sys.executable, "-m", "pipeline", "plan", "--params", relative, *targets, "--json"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=args.timeout,
        )
        if planned.returncode != 0:
            raise RuntimeError(f"plan failed: {planned.stderr[-2000:]}")
        plan = json.loads(planned.stdout)
        plan_s = time.monotonic() - plan_started
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "pipeline", "run", "--params", relative, *targets],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        sampler = Sampler([process.pid])
        try:
            output, _ = process.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        wall = time.monotonic() - started
        sampler.stop()
        compare_path = project / "results" / "plan" / "compare.json"
        compared = json.loads(compare_path.read_text())["rows"] if compare_path.exists() else []
        ledger = [
            json.loads(line)
            for line in (project / ".cache/responses/spend-ledger.jsonl").read_text().splitlines()
            if line.strip()
        ]
        answered = sum(s.stats.accepted for s in servers.values())
        served = {
            p: {"accepted": s.stats.accepted, "http_429": s.stats.rejected, "max_in_flight": s.stats.max_in_flight}
            for p, s in servers.items()
        }
    finally:
        for server in servers.values():
            server.stop()
    keys = Counter(line["key"] for line in ledger)
    sums = {
        "calls": len(ledger),
        "tokens_in": sum(int(line.get("tokens_in") or 0) for line in ledger),
        "tokens_out": sum(int(line.get("tokens_out") or 0) for line in ledger),
        "tokens_reasoning": sum(int(line.get("tokens_reasoning") or 0) for line in ledger),
        "cost_usd": round(sum(float(line.get("cost_usd") or 0.0) for line in ledger), 2),
    }
    rows = [r for r in plan["rows"] if r["model"] != "-"]
    planned_sums = {
        "calls_bound": sum(r["paid_calls"] for r in rows),
        "calls_expected": sum(r["expected_calls"] for r in rows),
        "tokens_in_bound": sum(r["tokens_in"] for r in rows),
        "tokens_in_expected": sum(r["expected_tokens_in"] for r in rows),
        "tokens_out_bound": sum(r["tokens_out"] for r in rows),
        "tokens_out_expected": sum(r["expected_tokens_out"] for r in rows),
        "tokens_reasoning_bound": sum(r["tokens_reasoning"] for r in rows),
        "cost_usd_bound": round(sum(r["cost_usd"] or 0.0 for r in rows), 2),
        "cost_usd_expected": round(sum(r["expected_cost_usd"] or 0.0 for r in rows), 2),
    }
    bound = plan_bound_minutes(plan, models, LatencyMix(scale=1.0 / k))
    return {
        "time_compression": k,
        "returncode": process.returncode,
        "tail": output[-3000:] if process.returncode else output[-600:],
        "plan_s": round(plan_s, 1),
        "wall_s": round(wall, 1),
        "simulated_wall_minutes": round(wall * k / 60, 1),
        # the roster's limits (k times the paper's) bound the run to this many real minutes
        "limits_bound_minutes": bound["minutes"],
        "limits_bound_simulated_minutes": round(bound["minutes"] * k, 1),
        "limits_bound": bound,
        "planned": planned_sums,
        "spent": sums,
        "provider_requests_answered": answered,
        "providers": served,
        "paid_twice": sum(1 for n in keys.values() if n > 1),
        "cpu_s": round(sampler.timeline[-1][1], 1) if sampler.timeline else None,
        "cpu_ms_per_call": round(sampler.timeline[-1][1] * 1000 / max(1, sums["calls"]), 2)
        if sampler.timeline
        else None,
        "peak_memory_mb": sampler.peak_rss_mb,
        "compare": compared,
    }


def reasoning_entries() -> dict[str, str]:
    """params/paper's reasoning models as the pipeline decides it (roster name -> model name as sent)."""
    from pipeline.core.models.reply_budgets import is_reasoning_model
    from pipeline.core.models.roster import load_models

    roster = load_models(REPO / "params" / "paper" / "models.yaml").roster
    return {e.name: (e.model or "").split("/", 1)[1] for e in roster if is_reasoning_model(e)}


def previous_record() -> dict[str, Any]:
    try:
        return dict(json.loads((RESULTS_FILE).read_text()))
    except (OSError, json.JSONDecodeError):
        return {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1000, help="games at once, Elimination and Who is Spy")
    parser.add_argument("--elimination-share", type=float, default=0.2, help="the share of Elimination games")
    parser.add_argument(
        "--elimination-seats", type=int, default=4, help="seats of an Elimination game (a game of 4: about 50 calls)"
    )
    parser.add_argument("--processes", type=int, default=2, help="shard processes sharing the machine's limits")
    parser.add_argument("--rpm", type=int, default=3000, help="the provider's limit, and the roster's")
    parser.add_argument(
        "--burst-s", type=float, default=10.0, help="the provider also holds rpm over windows this long"
    )
    parser.add_argument("--max-concurrency", type=int, default=4000)
    parser.add_argument("--chat-models", type=int, default=7)
    parser.add_argument("--time-scale", type=float, default=1.0, help="every loopback latency times this")
    parser.add_argument("--baseline-calls", type=int, default=3000, help="bodies the bare-litellm baseline replays")
    parser.add_argument("--baseline-repeats", type=int, default=2, help="runs of each baseline, interleaved")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--smoke", action="store_true", help="40 games, latencies / 10, rpm 1200")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--profile",
        type=Path,
        help="profile each shard process with py-spy into this folder (CPU figures then include py-spy's pauses)",
    )
    parser.add_argument(
        "--paper-tenth", action="store_true", help="part 3: params/paper's Elimination and Who is Spy at a tenth"
    )
    parser.add_argument("--time-compression", type=float, default=30.0, help="(part 3) times k shorter, rates k higher")
    parser.add_argument("--bare-worker", nargs=3, metavar=("BODIES", "URL", "RATE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_worker:
        bare_worker(args.bare_worker[0], args.bare_worker[1], float(args.bare_worker[2]))
        return 0
    if args.smoke:
        args.games, args.time_scale, args.rpm, args.baseline_calls = 40, 0.1, 1200, 400

    load_before = load_average()
    work = Path(tempfile.mkdtemp(prefix="provider-scale-"))
    previous = previous_record()
    try:
        if args.paper_tenth:
            if not previous:
                raise SystemExit("run the tournament first (without --paper-tenth): its record is kept beside part 3")
            kept = {k: v for k, v in previous.items() if k not in ("name", "machine", "measured_at", "paper_tenth")}
            kept["paper_tenth"] = {**paper_tenth(work, args), "conditions": run_conditions(load_before)}
            write_result("provider_scale", **kept)
            return 0
        run = tournament(work, args)
        bodies = run.pop("_bodies")
        # the pipeline's calls are spread over its shard processes, each with its own event loop and
        # litellm: the like-for-like yardstick is bare litellm in the same layout; one process at the
        # whole rate is measured beside it
        # each measured twice, interleaved: the mean evens out what else the machine did meanwhile
        runs: dict[str, list[dict[str, Any]]] = {"layout": [], "single": []}
        for _ in range(args.baseline_repeats):
            runs["layout"].append(bare_litellm(work, bodies, args, "layout", workers=run["processes"]))
            runs["single"].append(bare_litellm(work, bodies, args, "single", workers=1))
        layout, single = (mean_of(runs[name]) for name in ("layout", "single"))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}", file=sys.stderr)
    bare = layout["cpu_ms_per_call"]
    value = run["steady"]["cpu_ms_per_call"]
    share = run["steady"]["per_minute"] / args.rpm if run["steady"]["per_minute"] else None
    extra = {"paper_tenth": previous["paper_tenth"]} if "paper_tenth" in previous else {}
    write_result(
        "provider_scale",
        metric="client CPU per answered call, pipeline shard processes (steady part of the run)",
        value=value,
        unit="ms",
        target={
            "cpu_per_call": "<= 1.3x bare litellm",
            "rate_limit_share": ">= 0.9",
            "peak_memory_mb": "<= 2048 for 1,000 concurrent games",
            "games": "every game written",
            "paid_twice": 0,
        },
        baseline={
            "description": (
                "bare litellm.acompletion in the pipeline's process layout (one process per shard, each "
                "replaying every n-th of the steady part's request bodies at its share of the rate), on a "
                "fresh loopback server of the same settings, same run"
            ),
            "cpu_ms_per_call": round(bare, 3),
            "layout": layout,
            "single_process": single,
        },
        ratio_to_bare=round(value / bare, 3) if bare else None,
        ratio_to_single_process_bare=round(value / single["cpu_ms_per_call"], 3),
        concurrent_games=run["games_scheduled"],
        rate_limit_share=round(share, 3) if share else None,
        peak_memory_mb=run["peak_memory_mb"],
        calls=run["calls_answered"],
        games_written=run["games_written"],
        paid_twice=run["paid_twice"]["ledger_keys_twice"] + run["paid_twice"]["provider_answers_twice"],
        run=run,
        settings={k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "bare_worker"},
        conditions=run_conditions(load_before),
        note=(
            "2 CPU cores shared with other work (other sessions' tests) during the run: CPU time per call "
            "is the robust figure; the load average before and after is in conditions"
        ),
        **extra,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
