"""Commands of the shared core: `python -m pipeline judge score|story` and `python -m pipeline run`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _load(args: argparse.Namespace):  # -> Judge, imported lazily (torch is slow to import)
    from pipeline.core.judge.scoring import load_judge

    return load_judge(
        args.judge,
        device=args.device,
        dtype=args.dtype,
        cache_dir=args.cache_dir,
        scoring=args.scoring,
        clip_logprobs=args.clip_logprobs,
    )


def _cmd_judge_score(args: argparse.Namespace) -> int:
    from pipeline.core.judge.scoring import JudgeError

    try:
        judge = _load(args)
        score = judge.xent(args.text, args.prefix)
    except JudgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(score.to_dict(), ensure_ascii=False))
        return 0
    width = max([len(repr(t)) for t in score.tokens] + [5])
    print(f"{'token':<{width}}  bits")
    for token, bits in zip(score.tokens, score.bits):
        print(f"{token!r:<{width}}  {bits:7.3f}")
    print(f"{'total':<{width}}  {score.total:7.3f}  ({len(score.tokens)} scored tokens, {score.judge.scoring} scoring)")
    if score.prefix_tokens_dropped:
        print(f"note: the prefix lost its first {score.prefix_tokens_dropped} tokens to fit the judge's context")
    fp = score.judge
    print(f"judge: {fp.model_id} sha256 {fp.weights_sha256[:12]} {fp.dtype} {fp.device}")
    return 0


def _cmd_judge_story(args: argparse.Namespace) -> int:
    from pipeline.core.judge.scoring import JudgeError

    try:
        judge = _load(args)
        text = judge.story(args.seed, args.tokens)
    except JudgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"seed": args.seed, "story": text, "judge": judge.fingerprint.as_dict()}, ensure_ascii=False))
    else:
        print(text)
    return 0


def _judge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--judge", default=None, help="registered judge name or Hugging Face model directory (default: gemma-3-270m)"
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--dtype", default=None, help="float32 or bfloat16 (default: bfloat16 on cuda, float32 on cpu)")
    parser.add_argument(
        "--scoring",
        default="reference",
        choices=["reference", "include_first_token", "bos_once"],
        help="which tokens are scored (default: the reference implementation's; see docs/xent.md)",
    )
    parser.add_argument(
        "--clip-logprobs",
        action="store_true",
        help="cap each token at log2(vocabulary size) bits (the reference's clip_logprobs)",
    )
    parser.add_argument("--cache-dir", default=None, help="keep scores on disk here (default: memory only)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _own_flag(words: list[str], name: str) -> tuple[str | None, list[str]]:
    """`NAME DIR` / `NAME=DIR` anywhere on the line is ours (Snakemake has no such flag)."""
    found, rest, i = None, [], 0
    while i < len(words):
        if words[i] == name and i + 1 < len(words):
            found, i = words[i + 1], i + 2
            continue
        if words[i].startswith(f"{name}="):
            found = words[i].split("=", 1)[1]
        else:
            rest.append(words[i])
        i += 1
    return found, rest


def _params_flag(words: list[str]) -> tuple[str | None, list[str]]:
    """`--params DIR` / `--params=DIR` anywhere on the line is ours (Snakemake has no such flag)."""
    return _own_flag(words, "--params")


def _cmd_run(args: argparse.Namespace) -> int:
    from pipeline.core.run.launch import NoWorkflow, RunRefused, here_without_snakefile, run_snakemake

    late, targets = _params_flag(list(args.targets))
    later, extra = _params_flag(list(args.snakemake_args))
    there, targets = _own_flag(targets, "--workdir")
    elsewhere, extra = _own_flag(extra, "--workdir")
    workdir = args.workdir or there or elsewhere or here_without_snakefile()
    if workdir is not None and not Path(workdir).is_dir():
        print(
            f"error: work directory {workdir} does not exist; create it with a params/ folder "
            "(a copy of the project's params/*.yaml), or name an existing one",
            file=sys.stderr,
        )
        return 2
    try:
        return run_snakemake(targets, extra, params=args.params or late or later, workdir=workdir)
    except (RunRefused, NoWorkflow) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def register(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser(
        "run", help="run Snakemake targets with the project's flags; resumes after a crash without --unlock"
    )
    run.add_argument("targets", nargs="*", help="Snakemake targets, e.g. whoisspy_all (default: all)")
    run.add_argument(
        "--params",
        metavar="DIR",
        default=None,
        help="read every params file from DIR instead of params/ (e.g. params/paper); "
        "default: $PIPELINE_PARAMS, else params. Snakemake gets --config params=DIR",
    )
    run.add_argument(
        "--workdir",
        metavar="DIR",
        default=None,
        help="run this project's Snakefile with DIR as the working directory, nothing copied: "
        "results/, .snakemake/ and the default params/ are DIR's; --params is relative to DIR "
        "(docs/paper-scale.md)",
    )
    run.add_argument(
        "snakemake_args",
        nargs=argparse.REMAINDER,
        help="after --: more Snakemake arguments (e.g. -- --profile profiles/slurm)",
    )
    run.set_defaults(func=_cmd_run)

    judge = commands.add_parser("judge", help="cross-entropy judge: score texts, sample stories")
    judge_commands = judge.add_subparsers(dest="judge_command", metavar="SUBCOMMAND", required=True)

    score = judge_commands.add_parser(
        "score", help="per-token cross-entropy (bits) of TEXT after PREFIX; the first token of TEXT is not scored"
    )
    score.add_argument("--text", required=True)
    score.add_argument("--prefix", default="")
    _judge_options(score)
    score.set_defaults(func=_cmd_judge_score)

    story = judge_commands.add_parser("story", help="a story sampled from the judge, seeded")
    story.add_argument("--seed", default="0", help="map seed (any string or number)")
    story.add_argument("--tokens", type=int, default=50, help="length cap in judge tokens")
    _judge_options(story)
    story.set_defaults(func=_cmd_judge_story)
