"""What the Snakefile sets up before any rule: the interpreter the rules call, their software, and
the params directory every rule reads.

Rules call `python -m pipeline ...`. Rather than writing the interpreter's path into every shell
line (which `snakemake --lint` rightly flags, and which a conda or container run must not bypass),
the Snakefile puts the interpreter running Snakemake first on PATH; a run with `--sdm conda`
activates `envs/pipeline.yaml` for each job instead, and `python` is that environment's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any


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


#: The params directory (the demo's `params`, the references' scale `params/paper`, any other):
#: `--config params=DIR` for Snakemake, `--params DIR` for `python -m pipeline run|plan`, or this
#: environment variable; a flag wins over the variable.
PARAMS_ENV = "PIPELINE_PARAMS"
DEFAULT_PARAMS = "params"
PARAMS_CONFIG_KEY = "params"  # snakemake --config params=DIR


def params_dir(chosen: Any = None) -> str:
    """The params directory: `chosen` (a flag, Snakemake's `config["params"]`), else $PIPELINE_PARAMS,
    else `params`. Normalized without a trailing slash, so the default's paths stay `params/<name>`."""
    value = chosen if chosen not in (None, "") else os.environ.get(PARAMS_ENV) or DEFAULT_PARAMS
    return os.path.normpath(str(value))


def params_config(directory: str) -> list[str]:
    """Snakemake arguments that choose `directory`: [] for the default when $PIPELINE_PARAMS does not
    name another (the demo's command lines stay as they were), else `--config params=DIR`, which
    wins over the variable Snakemake inherits."""
    if directory == DEFAULT_PARAMS and params_dir() == DEFAULT_PARAMS:
        return []
    return ["--config", f"{PARAMS_CONFIG_KEY}={directory}"]


def required_params(benchmarks: Iterable[Any]) -> list[str]:
    """The files a params directory must hold: the roster, each benchmark's (whose rules this copy of
    the project has) and the leaderboard's."""
    names = [f"{b.name}.yaml" for b in benchmarks if b.rules.exists()]
    return ["models.yaml", *names, "leaderboard.yaml"]


def check_params_dir(directory: str, names: Iterable[str], root: str | Path = ".") -> None:
    """Stop with a ParamsError naming the path and the fix when `directory` (relative to `root`) is
    missing or lacks one of `names`."""
    from pipeline.core.params import ParamsError

    folder = Path(root) / directory
    switch = (f"--params DIR (python -m pipeline run|plan), --config {PARAMS_CONFIG_KEY}=DIR (snakemake) "
              f"or {PARAMS_ENV}=DIR")
    if not folder.is_dir():
        raise ParamsError(
            f"params directory {directory} does not exist ({folder.resolve()}); name an existing one with "
            f"{switch} ({DEFAULT_PARAMS} is the demo's, {DEFAULT_PARAMS}/paper the references' scale), or "
            f"create {directory}/ with a copy of every {DEFAULT_PARAMS}/*.yaml and edit them"
        )
    missing = [name for name in names if not (folder / name).is_file()]
    if missing:
        raise ParamsError(
            f"params directory {directory} lacks {', '.join(f'{directory}/{name}' for name in missing)}: "
            f"every stage reads its own file there; copy "
            f"{', '.join(f'{DEFAULT_PARAMS}/{name}' for name in missing)} into {directory}/ and edit "
            f"{'them' if len(missing) > 1 else 'it'}, or name a complete directory with {switch}"
        )


def check_chosen_params_dir(directory: str, root: str | Path = ".", benchmarks: Iterable[Any] | None = None) -> None:
    """`check_params_dir` for a directory other than the project's own `params` (which every copy
    has): it must hold the files of `benchmarks` (default: the registered ones)."""
    if directory == DEFAULT_PARAMS:
        return
    if benchmarks is None:
        from pipeline.core.registry import benchmarks as registered

        benchmarks = registered()
    check_params_dir(directory, required_params(benchmarks), root)


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
