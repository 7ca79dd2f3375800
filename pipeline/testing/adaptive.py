"""Helpers of the adaptive-schedule workflow tests (tests/<benchmark>/test_<benchmark>_adaptive_workflow.py).

Each of those tests writes a small roster and its benchmark's params into a work directory
(`pipeline.testing.project.make_workdir`), runs `python -m pipeline run|plan` there, then reads the
round ledger (`results/<benchmark>/rounds/round-*.json`), the rated metrics and the modification times
of the played jobs' files (a replay would change them, so equal times prove nothing was played again).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pipeline.testing.project import make_workdir, pipeline_command

Record = dict[str, Any]


def results(root: Path, benchmark: str) -> Path:
    """The benchmark's results folder in the work directory `root`: `results/<benchmark>`."""
    return root / "results" / benchmark


def read_params(root: Path, benchmark: str) -> Record:
    """The benchmark's params as `root/params/<benchmark>.yaml` holds them."""
    return yaml.safe_load((root / "params" / f"{benchmark}.yaml").read_text())


def write_params(root: Path, benchmark: str, params: Record, roster: list[Record] | None = None) -> Path:
    """The written `root/params/<benchmark>.yaml` (`params`), after the roster of `params/models.yaml`
    is made `roster` where one is given."""
    if roster is not None:
        models = yaml.safe_load((root / "params" / "models.yaml").read_text())
        models["roster"] = roster
        (root / "params" / "models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    path = root / "params" / f"{benchmark}.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def run_pipeline(root: Path, verb: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The finished `python -m pipeline VERB ARGS` in the work directory `root`, asserted successful."""
    done = subprocess.run(pipeline_command(root, verb, *args), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def rounds(root: Path, benchmark: str) -> list[Record]:
    """The benchmark's round ledger, in order: each `results/<benchmark>/rounds/round-*.json` read."""
    folder = results(root, benchmark) / "rounds"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("round-*.json"))]


def metrics(root: Path, benchmark: str) -> dict[str, Record]:
    """The benchmark's rated metrics, a row per player: `results/<benchmark>/metrics.json` read."""
    return json.loads((results(root, benchmark) / "metrics.json").read_text())


def stamps(folder: Path, pattern: str, *, inner: str = "", strip: str = "") -> dict[str, int]:
    """Each path that `pattern` globs in `folder` (sorted), named by its path from `folder` less the suffix
    `strip`, to its modification time in ns (that of its file `inner` where given): a replay changes it."""
    return {
        str(p.relative_to(folder)).removesuffix(strip): (p / inner).stat().st_mtime_ns
        for p in sorted(folder.glob(pattern))
    }


def copy_workdir(played: Path, into: Path) -> Path:
    """`into`, made a copy of the work directory `played` (links copied as links)."""
    shutil.copytree(played, into, symlinks=True)
    return into


def played_workdir(into: Path, target: str, configure: Callable[[Path], object]) -> Path:
    """`into`, made a work directory, given its params by `configure(into)`, where `python -m pipeline run
    TARGET` has succeeded."""
    root = make_workdir(into)
    configure(root)
    run_pipeline(root, "run", target)
    return root


def rerun_plays_nothing(
    root: Path, benchmark: str, target: str, ledger: list[Record], stamp: Callable[[Path], dict[str, int]]
) -> subprocess.CompletedProcess[str]:
    """The finished rerun of `python -m pipeline run TARGET` in `root`, asserted to play nothing: Snakemake
    has nothing to do, the rounds stay stopped, and neither the played files' times (`stamp(root)`) nor
    the round ledger (`ledger`, as read before) change."""
    before, files = stamp(root), [json.dumps(r) for r in ledger]
    again = run_pipeline(root, "run", target)
    assert "Nothing to be done" in again.stderr + again.stdout, again.stdout[-3000:] + again.stderr[-3000:]
    assert "stopped (max_rounds)" in again.stderr, again.stderr[-3000:]
    assert stamp(root) == before and [json.dumps(r) for r in rounds(root, benchmark)] == files, (
        "a rerun played again: the played files' times or the ledger changed"
    )
    return again
