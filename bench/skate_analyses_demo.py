"""SKATE's paper analyses on the demo roster (params/skate.yaml, params/models.yaml), in one process.

Plays the demo game, re-rates it as models join in order and with/without the answer-only
models, then plays one game per augmentation strategy and compares them. Reports the rank
agreement (Kendall's tau) of the models already present when a model joins (the paper's
stability claim: 1.0 means unchanged order), the same for the setters when the answer-only
models join, the strategies' rankings against the default strategy's, the mass the embedded
model puts outside A-D in exact mode, and the wall time of each part.

    .venv/bin/python bench/skate_analyses_demo.py [--out /tmp/skate-demo]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

import pipeline  # noqa: F401
from pipeline.core.models.roster import load_models
from pipeline.core.sandbox.runner import Sandbox
from pipeline.skate.analysis_report import write_game_analyses, write_strategy_comparison
from pipeline.skate.config import load_skate
from pipeline.skate.play import play_game


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/skate-analyses-demo")
    args = parser.parse_args()
    out = Path(args.out)
    params, models = load_skate(), load_models()
    sandbox = Sandbox(params.sandbox.limits(), allow_unisolated=params.sandbox.allow_unisolated)
    timings: dict[str, float] = {}
    started = time.monotonic()
    metrics = play_game(params, models, out, sandbox=sandbox)
    timings["game_s"] = round(time.monotonic() - started, 1)
    started = time.monotonic()
    game = write_game_analyses(params, out)
    timings["stability_and_answer_only_s"] = round(time.monotonic() - started, 1)
    started = time.monotonic()
    for strategy in params.analyses.strategies:
        play_game(
            params.model_copy(update={"strategy": strategy}), models, out / "strategies" / strategy, sandbox=sandbox
        )
    strategies = write_strategy_comparison(params, out)
    timings["strategy_games_s"] = round(time.monotonic() - started, 1)
    taus = [s["kendall_tau_existing"] for s in game["stability"] if s["kendall_tau_existing"] is not None]
    outside = {m: v.get("outside_mass_mean") for m, v in metrics.items()}
    write_result(
        "skate_analyses",
        metric="lowest Kendall tau of the models already present when a model joins (demo roster)",
        value=min(taus) if taus else None,
        unit="tau",
        target="1.0 (the paper: adding models preserves the existing order)",
        baseline="the order before each model joined, in the same game",
        roster=params.answerers,
        rounds=params.rounds,
        estimator=params.answering.mode,
        stability=game["stability"],
        answer_only=game["answer_only"],
        strategies=strategies,
        outside_mass_mean=outside,
        timings=timings,
    )


if __name__ == "__main__":
    main()
