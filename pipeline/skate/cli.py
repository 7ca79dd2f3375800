"""The bodies of `python -m pipeline skate schedule | play | rate | report`, which benchmark.py declares
(core/run/verbs.py builds their command lines), and SKATE's own verbs."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.core.run.verbs import BenchmarkCommands, VerbCall

DEFAULT_OUT = "results/skate"


def _load(args: VerbCall | argparse.Namespace) -> Any:  # -> (SkateParams, ModelsParams, Schedule)
    from pipeline.core.models import load_models
    from pipeline.core.run.rounds import rounds_dir
    from pipeline.skate.config import load_skate
    from pipeline.skate.schedule import game_schedule

    params = load_skate(args.params)
    models = load_models(args.models)
    # the fixed game, or the adaptive rounds' jobs (their ledger: <out>/rounds/round-NNN.json)
    return params, models, game_schedule(params, models, source=args.params, rounds=rounds_dir(Path(args.out)))


def _sandbox(params: Any) -> Any:  # -> Sandbox
    from pipeline.core.artifacts import ParamsError
    from pipeline.core.sandbox import Sandbox, SandboxUnavailable

    try:
        return Sandbox(params.sandbox.limits(), allow_unisolated=params.sandbox.allow_unisolated)
    except SandboxUnavailable as exc:
        raise ParamsError(f"params/skate.yaml: sandbox: {exc}") from None


def _play_generate(args: VerbCall, loaded: Any, job_id: str) -> None:
    from pipeline.core.models import Gateway
    from pipeline.skate.engine import run_generate, write_generate

    params, models, schedule = loaded
    job = schedule.find_generate(job_id)
    gateway = Gateway(models, job=f"skate/generate/{job.job_id}")
    record = asyncio.run(run_generate(params, models, schedule, job, args.out, gateway, _sandbox(params)))
    write_generate(args.out, record, gateway)
    outcome = "entered a question" if record["question"] else "no question"
    print(
        f"round {job.round}, setter {job.setter}: {outcome} after {len(record['attempts'])} attempt(s)", file=sys.stderr
    )


def _play_round(args: VerbCall, loaded: Any, job_id: str) -> None:
    from pipeline.skate.rounds import run_round, write_round

    params, _, schedule = loaded
    record = run_round(params, schedule.find_round(job_id), args.out)
    write_round(args.out, record)
    print(
        f"round {record['round']}: {len(record['questions'])} question(s); no question from "
        f"{', '.join(record['no_question']) or 'nobody'}",
        file=sys.stderr,
    )


def _play_answer(args: VerbCall, loaded: Any, job_id: str) -> None:
    from pipeline.core.models import Gateway, run_job
    from pipeline.skate.engine import run_answer, write_answer

    params, models, schedule = loaded
    job = schedule.find_answer(job_id)
    gateway = Gateway(models, job=f"skate/answer/{job.job_id}")
    # gateway.batch.enabled: through the provider's batch API (pipeline.core.models.batch)
    samples, summary = run_job(lambda gw: run_answer(params, models, job, args.out, gw), gateway)
    write_answer(args.out, job, samples, summary, gateway)
    for row in summary.iter_rows(named=True):
        print(
            f"round {job.round} {job.answerer} on {row['question_id']} ({row['setter']}): "
            f"p(correct) {row['p_correct']:.3f} from {row['samples']} {row['mode']} call(s)",
            file=sys.stderr,
        )


def play(args: VerbCall) -> int:
    """Scheduled jobs of any kind (a setter's round, a round's question set, an answerer's round), in
    the order given: each kind depends on the one before, so they never run concurrently."""
    from pipeline.core.artifacts import ParamsError, write_json_atomic

    loaded = _load(args)
    schedule = loaded[2]
    kinds = {j.job_id: ("generate", _play_generate) for j in schedule.generate.values()}
    kinds |= {j.job_id: ("round", _play_round) for j in schedule.rounds.values()}
    kinds |= {j.job_id: ("answer", _play_answer) for j in schedule.answers.values()}
    played = []
    for job_id in args.jobs:
        if job_id not in kinds:
            raise ParamsError(
                f"no skate job {job_id!r} in the schedule of {args.params} (the params changed since "
                "the DAG was built?); `python -m pipeline skate schedule` lists the jobs"
            )
        kind, play = kinds[job_id]
        play(args, loaded, job_id)
        played.append({"job_id": job_id, "kind": kind})
    if args.marker:
        write_json_atomic(Path(args.marker), {"jobs": played})
    return 0


def rate(args: VerbCall) -> int:
    from pipeline.skate.report import write_rate

    params, _, schedule = _load(args)
    if params.adaptive.enabled and not schedule.answers:
        print(
            "error: adaptive is on and no round has been chosen yet; run `python -m pipeline run skate_all` "
            "(or `dvc repro skate`): it chooses the rounds and plays them",
            file=sys.stderr,
        )
        return 2
    summary = write_rate(params, schedule, args.out, args.out)
    print(
        f"rated {summary['questions']} question(s) from {summary['attempts']} attempt(s): "
        f"{summary['samples']} sample(s), {summary['events']} pairwise game(s)",
        file=sys.stderr,
    )
    return 0


def report(args: VerbCall) -> int:
    from pipeline.skate.report import write_report

    params, _, _ = _load(args)
    metrics = write_report(params, args.out)
    for model, values in metrics.items():
        shown = {
            k: values[k]
            for k in ("trueskill_relative_mu", "trueskill_absolute_mu", "answering_skill", "asking_skill")
            if k in values
        }
        print(f"{model:<20} {json.dumps(shown)}", file=sys.stderr)
    print(f"see {Path(args.out) / 'metrics.json'} and {Path(args.out) / 'plots'}", file=sys.stderr)
    return 0


def _cmd_play_game(args: argparse.Namespace) -> int:
    from pipeline.skate.play import play_game

    params, models, _ = _load(args)
    if args.strategy:
        params = params.model_copy(update={"strategy": args.strategy})
    play_game(params, models, args.out, sandbox=_sandbox(params))
    print(f"played {params.rounds} round(s); see {Path(args.out) / 'metrics.json'}", file=sys.stderr)
    return 0


def _cmd_analyse(args: argparse.Namespace) -> int:
    from pipeline.skate.analysis_report import write_game_analyses

    params, _, _ = _load(args)
    summary = write_game_analyses(params, args.out)
    for step in summary["stability"]:
        print(
            f"{step['joined']} joined ({step['models']} models): Kendall tau of the others "
            f"{step['kendall_tau_existing']}, largest mu shift {step['max_abs_mu_shift_existing']}",
            file=sys.stderr,
        )
    print(
        f"answer-only models joined: Kendall tau of the setters {summary['answer_only']['kendall_tau_setters']}",
        file=sys.stderr,
    )
    return 0


def _cmd_compare_strategies(args: argparse.Namespace) -> int:
    from pipeline.skate.analysis_report import write_strategy_comparison

    params, _, _ = _load(args)
    summary = write_strategy_comparison(params, args.out)
    for row in summary.get("rank_agreement", []):
        print(json.dumps(row), file=sys.stderr)
    return 0


def schedule(args: VerbCall) -> int:
    _, _, schedule = _load(args)
    if args.json:
        jobs = [
            {"job_id": j.job_id, "kind": "generate", "round": r, "setter": setter}
            for (r, setter), j in sorted(schedule.generate.items())
        ]
        jobs += [{"job_id": j.job_id, "kind": "round", "round": r} for r, j in sorted(schedule.rounds.items())]
        jobs += [
            {
                "job_id": j.job_id,
                "kind": "answer",
                "round": r,
                "answerer": answerer,
                "mode": j.mode,
                "why_sampled": j.why_sampled,
                "answer_only": j.answer_only,
            }
            for (r, answerer), j in sorted(schedule.answers.items())
        ]
        print(json.dumps(jobs, indent=2))
        return 0
    for (r, setter), job in sorted(schedule.generate.items()):
        print(f"generate {job.job_id} round {r} setter {setter}")
    for r, job in sorted(schedule.rounds.items()):
        print(f"round    {job.job_id} round {r}")
    for (r, answerer), job in sorted(schedule.answers.items()):
        mode = f"{job.mode} ({job.why_sampled})" if job.why_sampled else job.mode
        extra = " (answer only)" if job.answer_only else ""
        print(f"answer   {job.job_id} round {r} answerer {answerer} mode {mode}{extra}")
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from pipeline.skate.calibration import record_in_params, write_calibration

    summary = write_calibration(args.pairs, args.out)
    print(
        f"{summary['pairs']} labelled pairs ({summary['same']} same): threshold {summary['threshold']:.2f} "
        f"has precision {summary['precision']:.3f}, recall {summary['recall']:.3f}, F1 {summary['f1']:.3f}, "
        f"F0.5 {summary['f_half']:.3f}; "
        f"per threshold: {Path(args.out) / 'thresholds.parquet'}",
        file=sys.stderr,
    )
    if args.write_params:
        record_in_params(args.params, summary, summary["pair_set"])
        print(f"recorded similarity_threshold {summary['threshold']:.2f} in {args.params}", file=sys.stderr)
    return 0


def extra_commands(bench: BenchmarkCommands) -> None:
    game = bench.extra(
        "play-game", "the whole game in this process, without Snakemake (quick experiments)", _cmd_play_game
    )
    game.add_argument("--strategy", default=None, help="play with this augmentation strategy instead")
    bench.extra("analyse", "stability as models join, and re-ranking with the answer-only models", _cmd_analyse)
    bench.extra(
        "compare-strategies", "the strategy games (results/skate/strategies/*) side by side", _cmd_compare_strategies
    )
    calibrate = bench.extra(
        "calibrate",
        "precision and recall of each uniqueness threshold on a labelled pair set",
        _cmd_calibrate,
        out=f"{DEFAULT_OUT}/calibration",
        out_help="the calibration's folder",
    )
    calibrate.add_argument(
        "--pairs",
        default=str(Path(__file__).parent / "data" / "similarity_pairs.yaml"),
        help="labelled pairs (default: the shipped set)",
    )
    calibrate.add_argument(
        "--write-params", action="store_true", help="record the chosen threshold as similarity_threshold in --params"
    )
