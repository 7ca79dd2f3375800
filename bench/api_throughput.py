"""API tournaments at the provider's limit (issue 17), against a loopback OpenAI-compatible server.

Two measurements, each run twice in the same process: with this tree's design (shared provider
limits, shard jobs, `python -m pipeline run`) and with the baseline design, the tree of
`--baseline-ref` (default: the commit before issue 17: one process per game, limits per process).

(a) limit binding: a Who is Spy tournament of API players, 8 jobs in parallel, against a server
    that answers 429 above `--rpm` requests in any 60 s (with Retry-After), rpm set to the same
    value in params. Reported: requests rejected, games finished, throughput as a share of the limit.
(b) limit not binding: Elimination games of 8 API seats, 1 s latency. Reported: wall time of the
    games against one game's wall time, peak memory of the whole run (sum of RSS over the process
    tree, sampled), CPU time per call. The baseline plays `--baseline-games` games, all at once
    (one process each, as `--cores N` would), and the result extrapolates nothing: it is what it is.

    python bench/api_throughput.py                 # both, full size (about 15 minutes)
    python bench/api_throughput.py --part b --games 8 --no-baseline   # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import write_result
from pipeline.core.run.workflow import copy_workflow
from pipeline.testing.loopback import LoopbackServer

REPO = Path(__file__).resolve().parents[1]
BASELINE_REF = "d7b0ac1"  # the last commit before issue 17
SEAT = re.compile(r"\bP([1-9])\b")
KEY_ENV = {"OPENAI_API_KEY": "sk-loopback-bench"}


ADJECTIVES = ("small", "bright", "quiet", "common", "useful", "soft", "old", "round", "heavy", "cheap", "warm", "plain")
PLACES = ("at home", "in shops", "outdoors", "at school", "in kitchens", "on trips", "at work", "in towns")


def seat_reply(messages: Sequence[dict[str, Any]]) -> str:
    """A player that answers every prompt sensibly enough for the games to go on: a vote names one
    of the seats the prompt offers, anything else is a short description that rarely repeats
    (both chosen by the prompt's hash, so the same prompt gets the same answer)."""
    text = str(messages[-1].get("content") or "") if messages else ""
    pick = int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)
    offered = re.search(r"vote for one of: ([^.\n]*)", text)
    seats = SEAT.findall(offered.group(1) if offered else text)
    if offered or "vote" in text.lower()[-400:]:
        return f"P{sorted(set(seats))[pick % len(set(seats))]}" if seats else "abstain"
    a, b = ADJECTIVES[pick % 12], ADJECTIVES[(pick // 12) % 12]
    where = PLACES[(pick // 144) % 8]
    seat = f"P{sorted(set(seats))[pick % len(set(seats))]}" if seats else "P2"
    return f"It is {a} and {b}, seen {where}; {seat} seems careful."


# -- projects ------------------------------------------------------------------------------------
TREE = ("Snakefile", "params", "pipeline", "profiles", "envs")


def source_tree(ref: str | None, into: Path) -> Path:
    """This working tree (ref None) or the files of commit `ref`: Snakefile, params, pipeline."""
    if ref is None:
        return copy_workflow(REPO, into, TREE)
    into.mkdir(parents=True)
    names = [
        n
        for n in TREE  # envs/: newer commits only
        if subprocess.run(["git", "cat-file", "-e", f"{ref}:{n}"], cwd=REPO, capture_output=True).returncode == 0
    ]
    blob = subprocess.run(["git", "archive", ref, *names], cwd=REPO, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as archive:
        archive.extractall(into, filter="data")
    return into


def write_params(
    project: Path,
    url: str,
    *,
    players: int,
    rpm: float,
    concurrency: int,
    shards: dict | None,
    whoisspy: dict | None = None,
    elimination: dict | None = None,
) -> None:
    # a model litellm can price (the loopback server answers whatever the name): cost shows as it would
    api = [
        {
            "name": f"api-{i}",
            "model": "openai/gpt-4o-mini",
            "extra": {"api_base": url},
            "sampling": {"temperature": 0.7, "max_tokens": 24},
        }
        for i in range(players)
    ]
    models: dict[str, Any] = {
        "roster": [*api, {"name": "random-bot", "bot": "random"}, {"name": "heuristic-bot", "bot": "heuristic"}],
        "providers": {"openai": {"max_concurrency": concurrency, "rpm": rpm}},
        "gateway": {"cache_dir": ".cache/responses", "backoff_base_s": 1.0, "backoff_max_s": 30.0},
    }
    if shards is not None:  # settings the baseline's params do not know
        models["parallel"] = shards
        models["gateway"]["rate_limit_patience_s"] = 300
    (project / "params/models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    if whoisspy is not None:
        (project / "params/whoisspy.yaml").write_text(yaml.safe_dump(whoisspy, sort_keys=False))
    if elimination is not None:
        (project / "params/elimination.yaml").write_text(yaml.safe_dump(elimination, sort_keys=False))


# -- one measured run ------------------------------------------------------------------------------
class TreeSampler:
    """Peak of the summed RSS of a process and all its descendants, sampled every 0.2 s."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.peak_bytes = 0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                break
            total = 0
            for proc in procs:
                try:
                    total += proc.memory_info().rss
                except psutil.NoSuchProcess:
                    pass
            self.peak_bytes = max(self.peak_bytes, total)
            self.peak_processes = max(self.peak_processes, len(procs))
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def run_stage(project: Path, command: list[str], timeout: float) -> dict[str, Any]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_")},
        **KEY_ENV,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    sampler = TreeSampler(process.pid)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        output, _ = process.communicate()
    sampler.stop()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "returncode": process.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mb": round(sampler.peak_bytes / 2**20, 1),
        "peak_processes": sampler.peak_processes,
        "tail": output[-1500:],
    }


def snakemake_cmd(design: str, targets: list[str], cores: int) -> list[str]:
    if design == "shards":
        return [sys.executable, "-m", "pipeline", "run", *targets, "--", "--cores", str(cores)]
    return [
        sys.executable,
        "-m",
        "snakemake",
        *targets,
        "--cores",
        str(cores),
        "--rerun-incomplete",
        "--rerun-triggers",
        "code",
        "input",
        "params",
        "software-env",
    ]


def server_report(server: LoopbackServer) -> dict[str, Any]:
    """What the provider saw. The rate is accepted requests per minute from the first request that
    arrived to the last (429s included): a run that gives up early gets no credit for a burst."""
    arrivals = [t for t, _ in server.stats.arrivals]
    span = (arrivals[-1] - arrivals[0]) if len(arrivals) > 1 else 0.0
    return {
        "accepted": server.stats.accepted,
        "rejected": server.stats.rejected,
        "max_in_flight": server.stats.max_in_flight,
        "max_in_any_60s": server.max_in_any_window(60.0),
        "span_s": round(span, 2),
        "per_minute": round(server.stats.accepted / span * 60, 2) if span else None,
    }


# -- (a) limit binding ----------------------------------------------------------------------------
def part_a(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    whoisspy = {
        # every seat an API player: the focal players, and two more API players filling the rest
        "players": [f"api-{i}" for i in range(args.a_players)],
        "fill": [f"api-{args.a_players}", f"api-{args.a_players + 1}"],
        "games_per_role": 1,
        "variants": ["baseline"],
        "replies": {"speech_max_tokens": 12, "vote_max_tokens": 6, "reasoning_max_tokens": 8},
        "rules": {"time_limit_s": 600, "rounds": args.a_rounds},
        "rating": {"passes": 2, "bootstrap_resamples": 0},
    }
    results: dict[str, Any] = {}
    for design, ref in (("shards", None), ("baseline", args.baseline_ref)):
        if design == "baseline" and args.no_baseline:
            continue
        project = source_tree(ref, work / f"a-{design}")
        with LoopbackServer(
            latency_s=args.a_latency,
            limit=args.rpm,
            window_s=60.0,
            reply=seat_reply,
            max_requests=100_000,
            max_seconds=args.timeout + 60,
        ) as server:
            games = 2 * args.a_players
            shards = {"games_per_job": -(-games // args.jobs), "jobs": args.jobs}
            write_params(
                project,
                server.url,
                players=args.a_players + 2,
                rpm=args.rpm,
                concurrency=8,
                shards=shards if design == "shards" else None,
                whoisspy=whoisspy,
            )
            run = run_stage(project, snakemake_cmd(design, ["whoisspy_all"], args.jobs), args.timeout)
            finished = len(list((project / "results/whoisspy/games").glob("*.json")))
            results[design] = {
                **run,
                "server": server_report(server),
                "games": games,
                "games_finished": finished,
                "throughput_share_of_limit": round(server_report(server)["per_minute"] / args.rpm, 3)
                if server_report(server)["per_minute"]
                else None,
            }
        print(f"(a) {design}: {json.dumps({k: v for k, v in results[design].items() if k != 'tail'})}", flush=True)
    return results


# -- (b) limit not binding ----------------------------------------------------------------------------
def elimination_params(games: int) -> dict[str, Any]:
    # one lineup of the 8 API players: up to 8 seat rotations, replayed with new seeds
    return {
        "reply_tokens": {"statement": 24, "preference": 12, "private": 16, "vote": 12},
        "schedule": {
            "lineups": [[f"api-{k}" for k in range(8)]],
            "rotations": min(8, games),
            "repeats": -(-games // 8),
        },
        "rating": {"passes": 2, "bootstrap_resamples": 0, "bootstrap_passes": 1},
    }


def game_ids(project: Path) -> list[str]:
    env = {**os.environ, **KEY_ENV, "PYTHONPATH": str(project)}
    out = subprocess.run(
        [sys.executable, "-m", "pipeline", "elimination", "schedule"],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def play_targets(project: Path, design: str, ids: list[str]) -> list[str]:
    """What playing the games means in each design: the game folders, or the shards' markers."""
    if design == "baseline":
        return [f"results/elimination/games/{g}" for g in ids]
    sys.path.insert(0, str(project))
    from pipeline.core.run.shards import plan_shards

    per_job = yaml.safe_load((project / "params/models.yaml").read_text())["parallel"]["games_per_job"]
    return [f"results/elimination/shards/{s}.json" for s in sorted(plan_shards(ids, per_job))]


def part_b(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    runs = [("shards", None, 1, "one_game"), ("shards", None, args.games, "tournament")]
    if not args.no_baseline:
        runs.append(("baseline", args.baseline_ref, args.baseline_games, "tournament"))
    for design, ref, games, label in runs:
        project = source_tree(ref, work / f"b-{design}-{games}")
        with LoopbackServer(
            latency_s=1.0, reply=seat_reply, max_requests=1_000_000, max_seconds=args.timeout + 60
        ) as server:
            cores = 2 if design == "shards" else games  # baseline: every game's process at once
            shards = {"games_per_job": max(1, -(-games // 2)), "jobs": 2}
            write_params(
                project,
                server.url,
                players=8,
                rpm=0,
                concurrency=100_000,
                shards=shards if design == "shards" else None,
                elimination=elimination_params(games),
            )
            ids = game_ids(project)[:games]
            run = run_stage(project, snakemake_cmd(design, play_targets(project, design, ids), cores), args.timeout)
            report = server_report(server)
            played = sum((project / "results/elimination/games" / g / "calls.parquet").exists() for g in ids)
            calls = report["accepted"]
            results[f"{design}_{label}"] = {
                **run,
                "server": report,
                "games": len(ids),
                "games_finished": played,
                "cpu_ms_per_call": round(run["cpu_s"] * 1000 / calls, 2) if calls else None,
            }
        print(
            f"(b) {design} {label}: "
            f"{json.dumps({k: v for k, v in results[f'{design}_{label}'].items() if k != 'tail'})}",
            flush=True,
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["a", "b", "all"], default="all")
    parser.add_argument("--rpm", type=float, default=60)
    parser.add_argument("--jobs", type=int, default=8, help="(a) jobs in parallel")
    parser.add_argument("--a-players", type=int, default=4, help="(a) focal API players: 2 games each")
    parser.add_argument("--a-rounds", type=int, default=2, help="(a) rounds per game")
    parser.add_argument("--a-latency", type=float, default=0.5)
    parser.add_argument("--games", type=int, default=64, help="(b) Elimination games of 8 API seats")
    parser.add_argument("--baseline-games", type=int, default=8, help="(b) games of the baseline run")
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--timeout", type=float, default=1500)
    parser.add_argument("--keep", action="store_true", help="keep the temp projects")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="api-throughput-"))
    record: dict[str, Any] = previous_runs() if args.part != "all" else {}  # one part: keep the other's
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        if args.part in ("a", "all"):
            record["a_limit_binding"] = {**part_a(work, args), "measured_at": stamp}
        if args.part in ("b", "all"):
            record["b_limit_not_binding"] = {**part_b(work, args), "measured_at": stamp}
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    for part in record.values():
        for run in part.values():
            if isinstance(run, dict) and run.get("returncode") == 0:
                run.pop("tail", None)
    summary = summarise(record, args)
    write_result("api_throughput", **summary, settings=vars(args), runs=record)
    return 0


def previous_runs() -> dict[str, Any]:
    path = Path(__file__).resolve().parent / "results" / "api_throughput.json"
    try:
        return dict(json.loads(path.read_text())["runs"])
    except (OSError, KeyError, json.JSONDecodeError):
        return {}


def summarise(record: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    a = record.get("a_limit_binding", {})
    b = record.get("b_limit_not_binding", {})
    one, many = b.get("shards_one_game"), b.get("shards_tournament")
    ratio = round(many["wall_s"] / one["wall_s"], 3) if one and many else None
    return {
        "metric": f"(b) wall time of {args.games} Elimination games of 8 API seats (1 s latency) / one game's",
        "value": ratio,
        "unit": "x",
        "target": {
            "b_wall_ratio": "<= 1.5",
            "b_peak_rss_mb": "<= 2048",
            "a": "0 rejected, every game finished, throughput >= 90% of the limit",
        },
        "baseline": {
            "description": f"tree of {args.baseline_ref} (one process per game, limits per process), same run",
            "a": a.get("baseline"),
            "b": b.get("baseline_tournament"),
        },
        "a_shards": a.get("shards"),
        "b_peak_rss_mb": many["peak_rss_mb"] if many else None,
        "b_cpu_ms_per_call": many["cpu_ms_per_call"] if many else None,
    }


if __name__ == "__main__":
    raise SystemExit(main())
