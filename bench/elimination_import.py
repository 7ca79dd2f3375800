"""Import + the default multi-pass rating over a synthetic corpus of 4,000 Elimination Game logs.

The corpus imitates the original benchmark's logs (8 seats from a pool of 40 models, about 330
records per game: statements, proposals, private talk, votes with reasons, some tie-breaks and
split juries, final results; the record shapes of records.py). It is generated into a temp
directory, then `run_import` reads it, writes the tables, rates it at the default settings (100
multi-pass TrueSkill passes plus the bootstrap, with the fast vectorized rating core), writes the
leaderboard, metrics and plots. Issue 6 asks for the time; the baseline reported is the rating
stage alone, measured in the same run.

    .venv/bin/python bench/elimination_import.py [--games 4000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

import pipeline  # noqa: F401
from pipeline.elimination import records as rec
from pipeline.elimination.config import RatingSettings
from pipeline.elimination.importer import run_import

WORDS = (
    "alliance trust vote threat strategy partner loyal jury plan round keep target safe move "
    "quiet bold bloc numbers honest risk"
).split()


def text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def synthetic_game(index: int, models: list[str], skill: dict[str, float]) -> list[dict]:
    rng = random.Random(index)
    gid = str(1_700_000_000_000_000 + index)
    chosen = rng.sample(models, 8)
    seats = [f"P{i}" for i in range(1, 9)]
    pid = {s: rec.player_id(i, gid, m) for i, (s, m) in enumerate(zip(seats, chosen), 1)}
    # elimination order: weaker models tend to go first
    order = sorted(seats, key=lambda s: skill[chosen[int(s[1:]) - 1]] + rng.gauss(0, 1.0))
    active = list(seats)
    out: list[str] = []
    log: list[dict] = []
    for rnd in range(1, 7):
        for s in rng.sample(active, len(active)):
            log.append(rec.conversation(gid, rnd, 1, pid[s], text(rng, 20, 60)))
        shuffled = rng.sample(active, len(active))
        pairs = [(shuffled[i], shuffled[i + 1]) for i in range(0, len(shuffled) - 1, 2)]
        for a, b in pairs:
            log.append(rec.preference_proposal(gid, rnd, a, b, 0))
            log.append(rec.preference_outcome(gid, rnd, b, accepted=a))
            log.append(rec.preference_proposal(gid, rnd, b, a, rng.randint(0, 2)))
            log.append(rec.preference_outcome(gid, rnd, a, accepted=b))
        log.append(rec.preference_result(gid, rnd, pairs))
        for sub in (2, 3, 4):
            for a, b in pairs:
                log.append(rec.private(gid, rnd, sub, pid[a], pid[b], text(rng, 10, 40)))
                log.append(rec.private(gid, rnd, sub, pid[b], pid[a], text(rng, 10, 40)))
        target = order[rnd - 1]
        others = [s for s in active if s != target]
        for voter in rng.sample(active, len(active)):
            choice = target if voter != target and rng.random() < 0.7 else rng.choice([s for s in active if s != voter])
            log.append(rec.vote_reason(gid, rnd, "vote", pid[voter], pid[choice], text(rng, 8, 25)))
            log.append(rec.vote(gid, rnd, pid[voter], pid[choice]))
        if rng.random() < 0.15 and len(others) > 2:  # a tie-break: statements and a re-vote
            rival = rng.choice(others)
            for s in (target, rival):
                log.append(rec.conversation(gid, rnd, 600, pid[s], text(rng, 30, 80)))
            for voter in [s for s in active if s not in (target, rival)]:
                log.append(rec.vote_reason(gid, rnd, "revote", pid[voter], pid[target], text(rng, 8, 25)))
                log.append(rec.vote(gid, rnd, pid[voter], pid[target]))
        log.append(rec.elimination(gid, rnd, pid[target], tie_break=False, random_pick=False))
        active.remove(target)
        out.append(target)
    for s in active:
        log.append(rec.conversation(gid, 7, 900, pid[s], text(rng, 40, 80)))
    loser = order[6]
    split = rng.random() < 0.1
    for juror in out:
        choice = rng.choice(active) if split else (loser if rng.random() < 0.8 else rng.choice(active))
        log.append(rec.vote_reason(gid, 7, "jury", pid[juror], pid[choice], text(rng, 8, 25)))
    log.append(rec.elimination(gid, 7, pid[loser], tie_break=split, random_pick=False))
    winner = next(s for s in active if s != loser)
    ranks = {pid[s]: 8 - i for i, s in enumerate(out)}
    ranks.update({pid[loser]: 2, pid[winner]: 1})
    log.append(rec.final_results(gid, ranks))
    return log


def generate(directory: Path, games: int) -> int:
    pool = random.Random(7)
    models = [f"model-{i:02d}" for i in range(40)]
    skill = {m: pool.gauss(0, 1) for m in models}
    total = 0
    for index in range(games):
        log = synthetic_game(index, models, skill)
        total += len(log)
        with (directory / f"game_{1_700_000_000_000_000 + index}_20250101_000000.jsonl").open("w") as handle:
            handle.write("".join(json.dumps(r) + "\n" for r in log))
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=4000)
    parser.add_argument("--keep", type=Path, default=None, help="write the corpus here and keep it")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="elimination-bench-"))
    corpus = args.keep or work / "logs"
    corpus.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        n_records = generate(corpus, args.games)
        generate_s = time.perf_counter() - started
        size_mb = sum(p.stat().st_size for p in corpus.glob("*.jsonl")) / 1e6
        started = time.perf_counter()
        result = run_import([corpus], work / "out", RatingSettings(), plots=True)
        total_s = time.perf_counter() - started
        assert result.report["games_finished"] == args.games, result.report
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_result(
        "elimination_import",
        metric=f"import of {args.games} logs + TrueSkill at the default settings (100 passes, 50 bootstrap resamples x 5 passes; read, tables, rating, leaderboard, metrics, plots)",
        value=round(total_s, 2),
        unit="s",
        target="report the time (issue 6)",
        baseline={
            "description": "the rating stage alone (fast multi-pass + bootstrap), same run",
            "value": round(result.seconds["rating"], 2),
            "unit": "s",
        },
        games=args.games,
        records=n_records,
        corpus_mb=round(size_mb, 1),
        generate_s=round(generate_s, 2),
        stages_s={k: round(v, 2) for k, v in result.seconds.items()},
        models=result.leaderboard.height,
    )


if __name__ == "__main__":
    main()
