"""`python -m pipeline dvc-yaml --check | --write`: dvc.yaml, rendered from the benchmark registry.

Each benchmark's stage (its deps, the outputs it declares, its metrics) and the leaderboard stage's
deps (every benchmark's metrics.json and the files its replays read) come from the declarations in
`pipeline/<name>/benchmark.py`, so a new benchmark never edits dvc.yaml by hand: `--write` adds its
stage, `--check` (run by the tests) fails naming the first line that differs.

Metrics files live in git (`cache: false`). DVC removes a stage's outputs before it runs the stage's
command, unless they are `persist`: a run that then stops on bad params would have deleted a tracked
file. So the metrics persist too, and `python -m pipeline run`, started by DVC (`DVC_STAGE` set),
removes its stage's metrics itself once the params check passed (`stage_metrics`): Snakemake then
rebuilds them as after DVC's own removal, and `dvc repro -f` still re-derives the stage.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.core.run.registry import Benchmark

DVC_YAML = "dvc.yaml"
SHARED_DEPS = ("Snakefile", "envs/pipeline.yaml", "pipeline/core")

HEADER = """\
# One DVC stage per benchmark, plus the roster check and the leaderboard. Each stage hands its work to
# Snakemake through `python -m pipeline run TARGET` (pipeline/core/run/launch.py): jobs at once from
# params/models.yaml (parallel.jobs; default: the machine's CPUs), resume after a crash without a
# manual --unlock; the other shared flags live in the workflow profile profiles/default. Snakemake
# reruns only the jobs whose code, params or inputs changed; outs are persistent so DVC never
# deletes what Snakemake fills incrementally. Metrics live in git (cache: false) and persist too: DVC
# removes a stage's other outputs before its command runs, so bad params would delete a tracked file;
# the command removes them itself once the params check passed (dvc_yaml.py's stage_metrics).
# Rendered from the benchmark registry: `python -m pipeline dvc-yaml --write` (tests run --check).
# A cluster: export SNAKEMAKE_PROFILE=profiles/slurm (docs/cluster.md).
stages:
  roster:
    cmd: python -m pipeline run roster_all
    deps:
      - Snakefile
      - envs/pipeline.yaml
      - pipeline/core
      - pipeline/roster
      - params/models.yaml
    outs:
      - results/roster/check.parquet:
          persist: true
      - results/roster/calls.parquet:
          persist: true
    metrics:
      - results/roster/metrics.json:
          cache: false
          persist: true
"""

LEADERBOARD_OUTS = """\
    outs:
      - results/leaderboard/site:
          persist: true
      - results/leaderboard/leaderboard.md:
          cache: false
          persist: true
      - results/leaderboard/version.json:
          cache: false
          persist: true
      - results/leaderboard/combined.csv:
          cache: false
          persist: true
    metrics:
      - results/leaderboard/leaderboard.json:
          cache: false
          persist: true
      - results/leaderboard/calibration.json:
          cache: false
          persist: true
# `dvc plots diff REV_A REV_B` draws the combined score of each leaderboard version side by side
plots:
  - results/leaderboard/combined.csv:
      template: bar_horizontal
      x: combined_score
      y: model
      title: Combined score (joint rating over every benchmark's games, Elo scale)
"""


def _items(paths: Iterable[str], indent: str = "      ") -> list[str]:
    return [f"{indent}- {path}" for path in paths]


def benchmark_stage(bench: Benchmark) -> list[str]:
    """One benchmark's stage: `python -m pipeline run NAME_all`, its code and params, its outputs."""
    lines = [f"  {bench.name}:", f"    cmd: python -m pipeline run {bench.final_rule}", "    deps:"]
    lines += _items([*SHARED_DEPS, bench.source_dir, "params/models.yaml", bench.params_file])
    lines.append("    outs:")
    for out in bench.outputs:
        lines += [f"      - {bench.results}/{out}:", "          persist: true"]
    lines += ["    metrics:", f"      - {bench.metrics}:", "          cache: false", "          persist: true"]
    return lines


def leaderboard_stage(benches: Sequence[Benchmark]) -> list[str]:
    lines = [
        "  # the combined, versioned leaderboard and its static site; reruns when any benchmark's results do",
        "  leaderboard:",
        "    cmd: python -m pipeline run leaderboard_all",
        "    deps:",
    ]
    deps = [*SHARED_DEPS, "pipeline/leaderboard", "params/leaderboard.yaml", "params/models.yaml"]
    for bench in benches:
        deps += [bench.metrics, *(f"{bench.results}/{path}" for path in bench.leaderboard_reads)]
    return lines + _items(deps)


def render(benches: Sequence[Benchmark] | None = None) -> str:
    """The whole dvc.yaml of the registered benchmarks (or `benches`), in run order."""
    if benches is None:
        from pipeline.core.run.registry import benchmarks

        benches = benchmarks()
    lines = [line for bench in benches for line in benchmark_stage(bench)] + leaderboard_stage(benches)
    return HEADER + "\n".join(lines) + "\n" + LEADERBOARD_OUTS


def stage_metrics(stage: str, root: Path = Path(".")) -> list[Path]:
    """The metrics files that dvc.yaml's `stage` (DVC_STAGE: `name`, or `path/dvc.yaml:name`) keeps
    with `persist` only so that its command can check the params before they go (the module's doc)."""
    import yaml

    file, _, name = stage.rpartition(":")
    path = root / (file or DVC_YAML)
    try:
        declared = yaml.safe_load(path.read_text(encoding="utf-8"))["stages"][name]
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return []
    found = []
    for item in declared.get("metrics") or []:
        for out, settings in item.items() if isinstance(item, dict) else []:
            if (settings or {}).get("persist") is True:
                found.append(path.parent / out)
    return found


def difference(current: str, rendered: str, path: str = DVC_YAML) -> str:
    """A unified diff of `path` against what the registry renders ("" when they agree)."""
    return "".join(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            rendered.splitlines(keepends=True),
            fromfile=path,
            tofile=f"{path} (rendered from the registry)",
        )
    )


def _cmd_dvc_yaml(args: argparse.Namespace) -> int:
    path = Path(args.file)
    rendered = render()
    if args.write:
        path.write_text(rendered, encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
        return 0
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    diff = difference(current, rendered, str(path))
    if args.check:
        if diff:
            print(
                f"{path} differs from the benchmark registry; `python -m pipeline dvc-yaml --write` "
                f"renders it:\n{diff}",
                file=sys.stderr,
                end="",
            )
            return 1
        return 0
    print(rendered, end="")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "dvc-yaml",
        help="render dvc.yaml's stages from the benchmark registry",
        description="print dvc.yaml as the benchmark registry renders it; --check compares, --write replaces",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="exit 1, showing the difference, when the file differs")
    what.add_argument("--write", action="store_true", help="write the rendered file")
    parser.add_argument("--file", default=DVC_YAML, help=f"the file (default {DVC_YAML})")
    parser.set_defaults(func=_cmd_dvc_yaml)
