"""`python -m pipeline ...`: the commands Snakemake rules call and users run."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import logging
import pkgutil
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import InputError, ParamsError


def _cmd_ask(args: argparse.Namespace) -> int:
    from pipeline.core.models import Gateway, ModelsParams, RosterEntry, load_models

    models = load_models(args.params)
    try:
        entry = models.entry(args.model)
    except KeyError:
        if "/" not in args.model:
            raise ParamsError(
                f"{args.model!r} is neither a roster name in {args.params} nor a litellm model "
                "string such as openai/gpt-4o-mini or local/smollm2-135m"
            ) from None
        entry = RosterEntry(name="ask", model=args.model)
        models = ModelsParams(roster=[entry], providers=models.providers, gateway=models.gateway)
    if entry.is_bot:
        raise ParamsError(f"{args.model!r} is a bot; `ask` talks to language models")
    gateway = Gateway(models, job="ask", read_cache=args.cached, deadline_s=args.timeout_s or None)
    completion = gateway.complete_sync(
        entry,
        [{"role": "user", "content": args.prompt}],
        seed=args.seed,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
    )
    if args.json:
        print(
            json.dumps(
                {
                    "model": entry.model,
                    "text": completion.text,
                    "tokens_in": completion.tokens_in,
                    "tokens_out": completion.tokens_out,
                    "cost_usd": completion.cost_usd,
                    "latency_s": round(completion.latency_s, 3),
                    "cache_hit": completion.cache_hit,
                }
            )
        )
    else:
        print(completion.text)
    return 0


def _cmd_prepare(args: argparse.Namespace) -> int:
    """Fill the user cache with what a job would otherwise build at its first use: each embedded
    model's de-quantized weights (a minute or more per model on two cores), the compiled rating
    kernel and the plots' Vega bundle. Every later job, on this machine or a cluster node sharing
    the cache, starts from them. Also compiles the package's own modules: where
    PYTHONDONTWRITEBYTECODE is set, Python never writes them itself, and every job process would
    compile the modules it imports anew (they stay beside the sources, ignored by git and DVC)."""
    import compileall
    import time

    import pipeline
    from pipeline.core.models.local import local_models

    steps: list[tuple[str, Callable[[], object]]] = [
        ("package's compiled modules", lambda: compileall.compile_dir(pipeline.__path__[0], quiet=1)),
        *((f"weights of local/{name}", spec.locate) for name, spec in sorted(local_models().items())),
        ("rating kernel", lambda: importlib.import_module("pipeline.core.rating.kernel")),
        ("Vega bundle", lambda: importlib.import_module("pipeline.core.artifacts.plots").vega_script()),
    ]
    for what, step in steps:
        started = time.monotonic()
        step()
        print(f"prepared the {what} ({time.monotonic() - started:.1f} s)")
    return 0


def _cmd_sandbox_run(args: argparse.Namespace) -> int:
    from pipeline.core.sandbox import Sandbox, SandboxLimits, SandboxUnavailable

    limits = SandboxLimits(
        cpu_s=args.cpu_s,
        wall_s=args.wall_s,
        memory_mb=args.memory_mb,
        output_bytes=args.output_bytes,
        processes=args.processes,
    )
    try:
        sandbox = Sandbox(limits, allow_unisolated=args.allow_unisolated)
    except SandboxUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if sandbox.isolation == "none":
        print("warning: running WITHOUT isolation (--allow-unisolated): rlimits only", file=sys.stderr)
    missing = [f for f in args.files if not Path(f).is_file()]
    if missing:
        raise InputError(f"sandbox run: {', '.join(missing)}: no such file; name Python programs to run")
    sources = [Path(f).read_text(encoding="utf-8") for f in args.files]
    for file, result in zip(args.files, sandbox.run_many(sources, jobs=args.jobs)):
        record = {
            "file": file,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "exit_code": result.exit_code,
            "limit": result.limit,
            "elapsed_s": result.elapsed_s,
            "isolation": result.isolation,
        }
        if args.json:
            print(json.dumps(record, ensure_ascii=False))
        else:
            status = "ok" if result.ok else f"exit={result.exit_code} limit={result.limit}"
            print(f"== {file} [{status}, {result.elapsed_s:.2f}s]\n{result.stdout}", end="")
    return 0


#: the core's own commands: `run` and `judge`, then `plan`, then `dvc-yaml`
CORE_COMMANDS = ("pipeline.core.run.cli", "pipeline.core.run.plan_cli", "pipeline.core.run.dvc_yaml")


Register = Callable[[argparse._SubParsersAction], None]


def command_registrars() -> list[Register]:
    """Who adds commands: the core's modules, then, in name order, every registered benchmark (its
    verbs built from its declaration, core.run.verbs.add_benchmark) and the `cli` module of every other
    stage of the package (the roster, the leaderboard); then the benchmarks outside the package (an
    entry point, PIPELINE_BENCHMARKS)."""
    import pipeline
    from pipeline.core.run import benchmarks
    from pipeline.core.run.verbs import add_benchmark

    found: list[Register] = [importlib.import_module(name).register for name in CORE_COMMANDS]
    declared = {
        bench.package.removeprefix("pipeline."): bench
        for bench in benchmarks()
        if bench.package.startswith("pipeline.")
    }
    named: dict[str, Register] = {name: partial(_add, add_benchmark, bench) for name, bench in declared.items()}
    for info in pkgutil.iter_modules(pipeline.__path__):
        if info.ispkg and info.name not in named and (Path(pipeline.__path__[0]) / info.name / "cli.py").exists():
            named[info.name] = importlib.import_module(f"pipeline.{info.name}.cli").register
    found += [named[name] for name in sorted(named)]
    found += [
        partial(_add, add_benchmark, bench) for bench in benchmarks() if not bench.package.startswith("pipeline.")
    ]
    return found


def _add(add: Callable[..., Any], bench: Any, commands: argparse._SubParsersAction) -> None:
    add(commands, bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        # the console command `tournament-pipeline` and `python -m pipeline` are the same program
        prog="tournament-pipeline" if Path(sys.argv[0]).name == "tournament-pipeline" else "python -m pipeline",
        description="Tournament pipeline: rank language models by the games they play.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress and retries")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    ask = commands.add_parser("ask", help="send one prompt to a model through the gateway and print the reply")
    ask.add_argument("model", help="a roster name from params/models.yaml or a litellm model string")
    ask.add_argument("prompt")
    ask.add_argument("--params", default="params/models.yaml")
    ask.add_argument("--max-tokens", type=int, default=None)
    ask.add_argument("--temperature", type=float, default=None)
    ask.add_argument("--seed", type=int, default=0)
    ask.add_argument("--cached", action="store_true", help="answer from the response cache when possible")
    ask.add_argument(
        "--timeout-s",
        type=float,
        default=60.0,
        help="give up after this many seconds without an answer, every retry included, naming the "
        "last error (default 60; 0: no limit, gateway.timeout_s and gateway.retries alone)",
    )
    ask.add_argument("--json", action="store_true", help="print text, tokens, cost and latency as JSON")
    ask.set_defaults(func=_cmd_ask)

    sandbox = commands.add_parser("sandbox", help="run untrusted Python programs isolated and limited")
    sandbox_commands = sandbox.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND", required=True)
    run = sandbox_commands.add_parser("run", help="run FILE.py programs, one fresh sandbox each")
    run.add_argument("files", nargs="+", metavar="FILE.py")
    run.add_argument("--jobs", type=int, default=2, help="programs run in parallel")
    run.add_argument("--json", action="store_true", help="one JSON object per program")
    run.add_argument("--cpu-s", type=float, default=5.0)
    run.add_argument("--wall-s", type=float, default=10.0)
    run.add_argument("--memory-mb", type=int, default=512)
    run.add_argument("--output-bytes", type=int, default=65536)
    run.add_argument("--processes", type=int, default=32)
    run.add_argument("--allow-unisolated", action="store_true", help="run even without isolation (unsafe)")
    run.set_defaults(func=_cmd_sandbox_run)

    prepare = commands.add_parser(
        "prepare",
        help="build the embedded models' weights, the rating kernel, the plots' Vega bundle and the package's "
        "compiled modules once, before the first job needs them",
    )
    prepare.set_defaults(func=_cmd_prepare)

    # every benchmark's commands come from its declaration; the other stages' from their cli.py
    for register in command_registrars():
        register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # before the parser's imports load numpy: the same floating point on every CPU (pipeline/cpu.py)
    from pipeline.cpu import pin_cpu_kernels

    pin_cpu_kernels()
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    from pipeline.core.artifacts import TableError
    from pipeline.core.models import GatewayError

    try:
        return int(args.func(args) or 0)
    except (ParamsError, GatewayError, TableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:  # a path given on the command line that is not there
        verb = " ".join(filter(None, [args.command, getattr(args, f"{args.command}_command", None)]))
        print(
            f"error: {exc.filename or exc}: no such file or directory; check the paths given to `{verb}`",
            file=sys.stderr,
        )
        return 2
