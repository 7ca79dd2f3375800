"""`python -m pipeline skate ...`: the commands SKATE's Snakemake rules call, and `schedule`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

DEFAULT_PARAMS = "params/skate.yaml"
DEFAULT_MODELS = "params/models.yaml"
DEFAULT_OUT = "results/skate"


def _load(args: argparse.Namespace):  # -> (SkateParams, ModelsParams, Schedule)
    from pipeline.core.roster import load_models
    from pipeline.skate.config import load_skate
    from pipeline.skate.schedule import build_schedule

    params = load_skate(args.params)
    models = load_models(args.models)
    return params, models, build_schedule(params, models, source=args.params)


def _sandbox(params):  # -> Sandbox
    from pipeline.core.params import ParamsError
    from pipeline.core.sandbox import Sandbox, SandboxUnavailable

    try:
        return Sandbox(params.sandbox.limits(), allow_unisolated=params.sandbox.allow_unisolated)
    except SandboxUnavailable as exc:
        raise ParamsError(f"params/skate.yaml: sandbox: {exc}") from None


def _cmd_generate(args: argparse.Namespace) -> int:
    from pipeline.core.llm import Gateway
    from pipeline.skate.engine import run_generate, write_generate

    params, models, schedule = _load(args)
    job = schedule.find_generate(args.job_id)
    gateway = Gateway(models, job=f"skate/generate/{job.job_id}")
    record = asyncio.run(run_generate(params, models, schedule, job, args.out, gateway, _sandbox(params)))
    write_generate(args.out, record, gateway)
    outcome = "entered a question" if record["question"] else "no question"
    print(f"round {job.round}, setter {job.setter}: {outcome} after {len(record['attempts'])} attempt(s)", file=sys.stderr)
    return 0


def _cmd_round(args: argparse.Namespace) -> int:
    from pipeline.skate.rounds import run_round, write_round

    params, _, schedule = _load(args)
    record = run_round(params, schedule.find_round(args.job_id), args.out)
    write_round(args.out, record)
    print(f"round {record['round']}: {len(record['questions'])} question(s); no question from "
          f"{', '.join(record['no_question']) or 'nobody'}", file=sys.stderr)
    return 0


def _cmd_answer(args: argparse.Namespace) -> int:
    from pipeline.core.batch import run_job
    from pipeline.core.llm import Gateway
    from pipeline.skate.engine import run_answer, write_answer

    params, models, schedule = _load(args)
    job = schedule.find_answer(args.job_id)
    gateway = Gateway(models, job=f"skate/answer/{job.job_id}")
    # gateway.batch.enabled: through the provider's batch API (pipeline.core.batch)
    samples, summary = run_job(lambda gw: run_answer(params, models, job, args.out, gw), gateway)
    write_answer(args.out, job, samples, summary, gateway)
    for row in summary.iter_rows(named=True):
        print(f"round {job.round} {job.answerer} on {row['question_id']} ({row['setter']}): "
              f"p(correct) {row['p_correct']:.3f} from {row['samples']} {row['mode']} call(s)", file=sys.stderr)
    return 0


def _cmd_rate(args: argparse.Namespace) -> int:
    from pipeline.skate.report import write_rate

    params, _, schedule = _load(args)
    summary = write_rate(params, schedule, args.out, args.out)
    print(f"rated {summary['questions']} question(s) from {summary['attempts']} attempt(s): "
          f"{summary['samples']} sample(s), {summary['events']} pairwise game(s)", file=sys.stderr)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pipeline.skate.report import write_report

    params, _, _ = _load(args)
    metrics = write_report(params, args.out)
    for model, values in metrics.items():
        shown = {k: values[k] for k in ("trueskill_relative_mu", "trueskill_absolute_mu", "answering_skill", "asking_skill") if k in values}
        print(f"{model:<20} {json.dumps(shown)}", file=sys.stderr)
    print(f"see {Path(args.out) / 'metrics.json'} and {Path(args.out) / 'plots'}", file=sys.stderr)
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
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
        print(f"{step['joined']} joined ({step['models']} models): Kendall tau of the others "
              f"{step['kendall_tau_existing']}, largest mu shift {step['max_abs_mu_shift_existing']}", file=sys.stderr)
    print(f"answer-only models joined: Kendall tau of the setters {summary['answer_only']['kendall_tau_setters']}",
          file=sys.stderr)
    return 0


def _cmd_compare_strategies(args: argparse.Namespace) -> int:
    from pipeline.skate.analysis_report import write_strategy_comparison

    params, _, _ = _load(args)
    summary = write_strategy_comparison(params, args.out)
    for row in summary.get("rank_agreement", []):
        print(json.dumps(row), file=sys.stderr)
    return 0


def _cmd_schedule(args: argparse.Namespace) -> int:
    _, _, schedule = _load(args)
    for (r, setter), job in sorted(schedule.generate.items()):
        print(f"generate {job.job_id} round {r} setter {setter}")
    for r, job in sorted(schedule.rounds.items()):
        print(f"round    {job.job_id} round {r}")
    for (r, answerer), job in sorted(schedule.answers.items()):
        extra = " (answer only)" if job.answer_only else ""
        print(f"answer   {job.job_id} round {r} answerer {answerer} mode {job.mode}{extra}")
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from pipeline.skate.calibration import record_in_params, write_calibration

    summary = write_calibration(args.pairs, args.out)
    print(f"{summary['pairs']} labelled pairs ({summary['same']} same): threshold {summary['threshold']:.2f} "
          f"has precision {summary['precision']:.3f}, recall {summary['recall']:.3f}, F1 {summary['f1']:.3f}, "
          f"F0.5 {summary['f_half']:.3f}; "
          f"per threshold: {Path(args.out) / 'thresholds.parquet'}", file=sys.stderr)
    if args.write_params:
        record_in_params(args.params, summary, summary["pair_set"])
        print(f"recorded similarity_threshold {summary['threshold']:.2f} in {args.params}", file=sys.stderr)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    skate = commands.add_parser("skate", help="SKATE: models set and answer code-output-prediction questions")
    sub = skate.add_subparsers(dest="skate_command", metavar="SUBCOMMAND", required=True)

    def add(name: str, help_text: str, handler, job: bool = False) -> None:
        parser = sub.add_parser(name, help=help_text)
        if job:
            parser.add_argument("job_id", help="a job id from `python -m pipeline skate schedule`")
        parser.add_argument("--params", default=DEFAULT_PARAMS)
        parser.add_argument("--models", default=DEFAULT_MODELS)
        parser.add_argument("--out", default=DEFAULT_OUT, help="the stage's results folder")
        parser.set_defaults(func=handler)

    add("generate", "one setter's round: up to `attempts` tries, each run in the sandbox and checked", _cmd_generate, job=True)
    add("round", "collect a round's entered questions into its question set", _cmd_round, job=True)
    add("answer", "one answerer's p(correct) on a round's questions (sampled or exact, one for all)", _cmd_answer, job=True)
    add("rate", "tables of the whole game and pairwise TrueSkill (relative and absolute)", _cmd_rate)
    add("report", "metrics.json, plots and the points-of-difference list", _cmd_report)
    add("schedule", "list every job of the game with its id", _cmd_schedule)
    add("play", "the whole game in this process, without Snakemake (quick experiments)", _cmd_play)
    sub.choices["play"].add_argument("--strategy", default=None, help="play with this augmentation strategy instead")
    add("analyse", "stability as models join, and re-ranking with the answer-only models", _cmd_analyse)
    add("compare-strategies", "the strategy games (results/skate/strategies/*) side by side", _cmd_compare_strategies)
    calibrate = sub.add_parser(
        "calibrate", help="precision and recall of each uniqueness threshold on a labelled pair set"
    )
    calibrate.add_argument("--pairs", default=str(Path(__file__).parent / "data" / "similarity_pairs.yaml"),
                           help="labelled pairs (default: the shipped set)")
    calibrate.add_argument("--out", default=f"{DEFAULT_OUT}/calibration")
    calibrate.add_argument("--params", default=DEFAULT_PARAMS)
    calibrate.add_argument("--write-params", action="store_true",
                           help="record the chosen threshold as similarity_threshold in --params")
    calibrate.set_defaults(func=_cmd_calibrate)
