"""What the Snakefile sets up before any rule: the interpreter the rules call and their software.

Rules call `python -m pipeline ...`. Rather than writing the interpreter's path into every shell
line (which `snakemake --lint` rightly flags, and which a conda or container run must not bypass),
the Snakefile puts the interpreter running Snakemake first on PATH; a run with `--sdm conda`
activates `envs/pipeline.yaml` for each job instead, and `python` is that environment's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def interpreter_on_path(shim_dir: Path = Path(".snakemake") / "pipeline-bin") -> str:
    """Make `python` in the rules' shells the interpreter running Snakemake; returns its folder.

    A venv's bin folder holds `python`; an interpreter installed as `python3.11` alone gets a
    one-link shim folder instead, so the name still resolves to the same interpreter.
    """
    folder = Path(sys.executable).parent
    if Path(os.path.realpath(folder / "python")) != Path(os.path.realpath(sys.executable)):
        shim_dir.mkdir(parents=True, exist_ok=True)
        link = shim_dir / "python"
        if not link.is_symlink() or os.readlink(link) != sys.executable:
            tmp = shim_dir / f".python.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(sys.executable)
            os.replace(tmp, link)
        folder = shim_dir.resolve()
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if not parts or parts[0] != str(folder):
        os.environ["PATH"] = os.pathsep.join([str(folder), *[p for p in parts if p and p != str(folder)]])
    return str(folder)


#: what a copy of the workflow needs besides the installed package (tests and benchmarks run copies)
WORKFLOW_FILES = ("Snakefile", "dvc.yaml", ".dvcignore", "params", "pipeline", "profiles", "envs")


def copy_workflow(source: Path, into: Path, names: tuple[str, ...] = WORKFLOW_FILES) -> Path:
    """Copy the workflow files of the project at `source` into `into` (existing files are replaced)."""
    import shutil

    into.mkdir(parents=True, exist_ok=True)
    for name in names:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, into / name, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        elif src.exists():
            shutil.copy2(src, into / name)
    return into
