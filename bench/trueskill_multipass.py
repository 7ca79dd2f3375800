"""Fast multi-pass TrueSkill against the reference, on a corpus the size of the Elimination Game's.

The corpus: 4,000 eight-player free-for-all games among 50 models with hidden skills (seeded;
each game seats 8 models at random and ranks them by skill plus noise). Both implementations
rate the same passes (`pipeline.core.rating.pass_ratings`, orders from the same seed). The fast
one runs all `--passes` passes and is timed; the reference (one trueskill call per game) runs
only the first `--reference-passes` passes, since its cost is the same for every pass, and its
time is extrapolated linearly to `--passes` (the JSON says so). Every reference pass is compared
with the fast pass of the same index: the largest absolute difference of mu and of sigma over
all players is reported (the requirement is 1e-6).

Then `rating_summary` is timed with Elimination's default rating settings (100 passes plus 50
bootstrap resamples of 5 passes, all rated side by side): the rating stage of an import of this
corpus (`--no-summary` skips it).

Rating settings are Elimination's (draw probability 0, tau 0, mu 4); `--default-env` switches
to trueskill's defaults (tau > 0).

    .venv/bin/python bench/trueskill_multipass.py [--games 4000] [--passes 100] [--reference-passes 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, write_result  # noqa: E402

from pipeline.core.rating import FreeForAll, RatingParams, pass_ratings, rating_summary  # noqa: E402

TARGET_S = 60.0
TOLERANCE = 1e-6


def corpus(games: int, models: int, seats: int, seed: int) -> list[FreeForAll]:
    rng = np.random.default_rng(seed)
    names = [f"model-{i:02d}" for i in range(models)]
    skill = rng.normal(0.0, 1.0, size=models)
    events = []
    for _ in range(games):
        table = rng.choice(models, size=seats, replace=False)
        performance = skill[table] + rng.normal(0.0, 1.0, size=seats)
        order = table[np.argsort(-performance)]
        events.append(FreeForAll({names[m]: place for place, m in enumerate(order, start=1)}))
    return events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4000)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--seats", type=int, default=8)
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--reference-passes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--default-env", action="store_true", help="trueskill's default settings")
    parser.add_argument("--no-summary", action="store_true",
                        help="skip timing rating_summary at Elimination's defaults (100 passes, 50 x 5 bootstrap)")
    args = parser.parse_args()

    params = RatingParams() if args.default_env else RatingParams(
        mu=4.0, sigma=8.3333, beta=4.1667, tau=0.0, draw_probability=0.0
    )
    events = corpus(args.games, args.models, args.seats, args.seed)
    load_before = load_average()

    cpu0, wall0 = time.process_time(), time.perf_counter()
    players, fast_mu, fast_sigma = pass_ratings(events, params, args.passes, args.seed, "fast")
    fast_wall, fast_cpu = time.perf_counter() - wall0, time.process_time() - cpu0

    ref_passes = min(args.reference_passes, args.passes)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    ref_players, ref_mu, ref_sigma = pass_ratings(events, params, ref_passes, args.seed, "reference")
    ref_wall, ref_cpu = time.perf_counter() - wall0, time.process_time() - cpu0

    assert ref_players == players
    summary: dict[str, object] = {}
    if not args.no_summary:
        # What an Elimination import of this corpus runs with its default rating settings.
        cpu0, wall0 = time.process_time(), time.perf_counter()
        table = rating_summary(events, params, 100, args.seed, resamples=50, bootstrap_passes=5, method="fast")
        summary = {
            "rating_summary_elimination_defaults": {
                "passes": 100, "resamples": 50, "bootstrap_passes": 5,
                "wall_s": round(time.perf_counter() - wall0, 2),
                "cpu_s": round(time.process_time() - cpu0, 2),
                "widest_rank_interval": int((table["rank_hi"] - table["rank_lo"]).max()),
            }
        }
    load_after = load_average()
    diff_mu = float(np.max(np.abs(fast_mu[:ref_passes] - ref_mu)))
    diff_sigma = float(np.max(np.abs(fast_sigma[:ref_passes] - ref_sigma)))
    ref_per_pass = ref_wall / ref_passes
    ref_extrapolated = ref_per_pass * args.passes
    write_result(
        "trueskill_multipass",
        metric=f"{args.passes} TrueSkill passes over {args.games} {args.seats}-player free-for-all games",
        value=round(fast_wall, 2),
        unit="s",
        target=f"<= {TARGET_S:.0f} s on 2 cores, every pass within {TOLERANCE:g} of the reference",
        baseline={
            "description": (
                f"reference (one trueskill.rate call per game), {ref_passes} passes timed in the "
                f"same run and extrapolated linearly to {args.passes} passes"
            ),
            "unit": "s",
            "value": round(ref_extrapolated, 1),
            "measured_passes": ref_passes,
            "measured_s": round(ref_wall, 2),
            "cpu_s": round(ref_cpu, 2),
        },
        speedup=round(ref_extrapolated / fast_wall, 1),
        speedup_cpu=round(ref_cpu / ref_passes * args.passes / fast_cpu, 1),
        fast_cpu_s=round(fast_cpu, 2),
        fast_per_pass_s=round(fast_wall / args.passes, 4),
        reference_per_pass_s=round(ref_per_pass, 3),
        max_abs_diff_mu=diff_mu,
        max_abs_diff_sigma=diff_sigma,
        within_tolerance=bool(max(diff_mu, diff_sigma) <= TOLERANCE),
        meets_target=bool(fast_wall <= TARGET_S and max(diff_mu, diff_sigma) <= TOLERANCE),
        games=args.games,
        models=args.models,
        seats=args.seats,
        passes=args.passes,
        rating_params={k: getattr(params, k) for k in ("mu", "sigma", "beta", "tau", "draw_probability")},
        load_avg_before=load_before,
        load_avg_after=load_after,
        pid_nice=os.nice(0),
        **summary,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
