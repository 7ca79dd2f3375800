"""The combined board's methods on synthetic fields of known skill: the joint fit (plain and
hierarchical) against the mean percentile rank it replaces (issue 44).

Each seed draws 12 models with a general skill g ~ N(0, 1) and, per benchmark, a deviation
d ~ N(0, deviation_sd) (a model is better at some games than others), and four benchmarks of the
shapes the real ones rate: 8-seat free-for-all games (Elimination), 4-seat free-for-all maps
(Xent), pairwise games (SKATE) and one-against-three team games (Who is Spy), with their own game
counts. Three models miss one to three benchmarks (provisional). Outcomes: Plackett-Luce placings
(Gumbel noise) on g + d, logistic pairwise and team results (a team plays at its mean).

Measured: Kendall tau between each method's combined order and the true general skill, over all
models, the full-coverage ones and the provisional ones. `mean_percentile` uses a Bradley-Terry fit
per benchmark for its ranks (TrueSkill's would cost minutes a seed, and rank the same fields alike).

    python bench/joint_rating.py [--seeds 40]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import load_average, run_conditions, write_result
from pipeline.core.rating.events import FreeForAll, Pairwise, TeamMatch
from pipeline.core.rating.joint import JointSettings, events_frame, joint_fit, kendall_tau

MODELS = 12
BENCHMARKS = {"ffa8": 60, "ffa4": 40, "pairwise": 200, "team": 80}  # games each


def field(seed: int, deviation_sd: float) -> tuple[dict[str, float], dict[str, list], set[str]]:
    """True general skills, each benchmark's (game, event) list, and the provisional models."""
    rng = random.Random(seed)
    names = [f"m{k:02d}" for k in range(MODELS)]
    general = {m: rng.gauss(0.0, 1.0) for m in names}
    skill = {b: {m: general[m] + rng.gauss(0.0, deviation_sd) for m in names} for b in BENCHMARKS}
    missing = {m: set(rng.sample(sorted(BENCHMARKS), rng.randint(1, 3))) for m in rng.sample(names, 3)}
    events: dict[str, list] = {}
    for bench, games in BENCHMARKS.items():
        pool = [m for m in names if bench not in missing.get(m, set())]
        s = skill[bench]
        found: list = []
        for g in range(games):
            if bench.startswith("ffa"):
                seats = rng.sample(pool, 8 if bench == "ffa8" else 4)
                perf = {m: s[m] - math.log(-math.log(rng.random())) for m in seats}
                order = sorted(seats, key=lambda m: -perf[m])
                found.append((f"{bench}{g}", FreeForAll({m: i + 1 for i, m in enumerate(order)})))
            elif bench == "pairwise":
                a, b = rng.sample(pool, 2)
                p = 1.0 / (1.0 + math.exp(s[b] - s[a]))
                found.append((f"{bench}{g}", Pairwise(a, b, "a" if rng.random() < p else "b")))
            else:
                spy, *team = rng.sample(pool, 4)
                p = 1.0 / (1.0 + math.exp(statistics.fmean(s[m] for m in team) - s[spy]))
                found.append((f"{bench}{g}", TeamMatch((spy,), tuple(team), "a" if rng.random() < p else "b")))
        events[bench] = found
    return general, events, set(missing)


def mean_percentile(events: dict[str, list]) -> dict[str, float]:
    """The earlier board: the mean over the benchmarks a model played of its percentile rank."""
    points: dict[str, list[float]] = {}
    for found in events.values():
        fit = joint_fit({"b": events_frame(found)}, JointSettings(resamples=0))
        ranked = sorted(fit.ratings.values(), key=lambda r: -r.score)
        n = len(ranked)
        for place, rating in enumerate(ranked, start=1):
            points.setdefault(rating.model, []).append(100.0 * (n - place) / (n - 1))
    return {m: statistics.fmean(v) for m, v in points.items()}


def taus(order: list[str], scores: dict[str, float], provisional: set[str]) -> dict[str, float | None]:
    full = [m for m in order if m not in provisional]
    part = [m for m in order if m in provisional]
    return {
        "all": kendall_tau(order, scores),
        "full_coverage": kendall_tau(full, scores),
        "provisional": kendall_tau(part, scores),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--deviation-sd", type=float, default=0.5, help="true sd of per-benchmark deviations")
    args = parser.parse_args()
    load_before = load_average()
    started = time.perf_counter()
    methods = ("mean_percentile", "joint", "joint_hierarchical")
    found: dict[str, dict[str, list[float]]] = {m: {"all": [], "full_coverage": [], "provisional": []} for m in methods}
    for seed in range(args.seeds):
        general, events, provisional = field(seed, args.deviation_sd)
        order = sorted(general, key=lambda m: -general[m])
        tables = {b: events_frame(e) for b, e in events.items()}
        plain = joint_fit(tables, JointSettings(resamples=0))
        hier = joint_fit(tables, JointSettings(resamples=0, deviation_sd=args.deviation_sd))
        boards = {
            "mean_percentile": mean_percentile(events),
            "joint": {m: r.score for m, r in plain.ratings.items()},
            "joint_hierarchical": {m: r.score for m, r in hier.ratings.items()},
        }
        for method, scores in boards.items():
            for key, tau in taus(order, scores, provisional).items():
                if tau is not None:
                    found[method][key].append(tau)
    summary = {m: {k: round(statistics.fmean(v), 4) for k, v in parts.items()} for m, parts in found.items()}
    write_result(
        "joint_rating",
        metric="mean Kendall tau of the combined order against the true general skill, all models",
        value=summary["joint"]["all"],
        unit="tau",
        target="above the mean percentile board's, same fields (issue 44: one joint fit is the combined rating)",
        baseline={
            "description": "mean_percentile (the earlier board) on the same fields and games",
            "value": summary["mean_percentile"]["all"],
        },
        methods=summary,
        seeds=args.seeds,
        models=MODELS,
        benchmarks=BENCHMARKS,
        deviation_sd=args.deviation_sd,
        seconds=round(time.perf_counter() - started, 1),
        **run_conditions(load_before),
    )


if __name__ == "__main__":
    main()
