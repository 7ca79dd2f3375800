"""The project's own workflow run on a small test configuration, without copying the project.

A *work directory* holds a configuration and nothing else: `params/` (copied from the repository's,
then edited or written by the test). The repository's Snakefile runs in it (`snakemake --snakefile
REPO/Snakefile --directory WORKDIR`, `python -m pipeline run|plan --workdir WORKDIR`, or
`run_workflow` in-process): the rules, `profiles/default` and `envs/` are the repository's, the code
the installed package's, and `results/`, `.snakemake/` and the params' relative paths
(`.cache/responses`, ...) land in the work directory.

`copy_project` makes a repository copy instead, for the tests that need one: a DVC stage
(`dvc repro` runs `dvc.yaml`, whose deps are the project's files), git, or a test that edits a
rule file of its copy (the copy's `pipeline/` is then the package its Snakemake processes import,
as they run in the copy).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from pipeline.core.run.launch import workflow_args, workflow_snakefile
from pipeline.core.run.workflow import WORKFLOW_FILES, copy_workflow

#: the project's rerun triggers (profiles/default), for the in-process API, which reads no profile
RERUN_TRIGGERS = ("code", "input", "params", "software-env")


def repository() -> Path:
    """The project whose Snakefile the installed package runs (the editable install's checkout)."""
    return workflow_snakefile().parent


def make_workdir(into: Path, params: Path | None = None, *, profiles: bool = False) -> Path:
    """`into` made a work directory: `params/` copied from `params` (default: the repository's,
    `params/paper` included). `profiles`: link `profiles/` to the repository's, so that
    `--profile profiles/NAME` and the cluster-generic profile's scripts (named relative to the
    working directory) resolve as in the repository; the link is read, never written through."""
    into.mkdir(parents=True, exist_ok=True)
    source = params if params is not None else repository() / "params"
    shutil.copytree(source, into / "params", ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    if profiles and not (into / "profiles").exists():
        (into / "profiles").symlink_to(repository() / "profiles", target_is_directory=True)
    return into


def copy_project(into: Path, names: Sequence[str] = WORKFLOW_FILES) -> Path:
    """A repository copy in `into` (the Snakefile, dvc.yaml, params, pipeline/, profiles, envs): only
    for tests that need one (see the module's docstring)."""
    return copy_workflow(repository(), into, tuple(names))


def own_snakefile(workdir: Path) -> bool:
    """Whether `workdir` is a repository copy with its own Snakefile (run that one, from there)."""
    return (Path(workdir) / "Snakefile").is_file()


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """`python -m snakemake ARGS` running the repository's Snakefile in `workdir` (any current
    directory); in a repository copy, its own Snakefile (run it with `cwd=workdir`)."""
    workflow = [] if own_snakefile(workdir) else workflow_args(workdir)
    return [sys.executable, "-m", "snakemake", *workflow, *args]


def pipeline_command(workdir: Path, verb: str, *args: str) -> list[str]:
    """`python -m pipeline run|plan --workdir WORKDIR ARGS` (a repository copy: without --workdir;
    run it with `cwd=workdir`)."""
    place = [] if own_snakefile(workdir) else ["--workdir", str(Path(workdir).resolve())]
    return [sys.executable, "-m", "pipeline", verb, *place, *args]


def run_workflow(
    workdir: Path, targets: Iterable[str], cores: int = 2, triggers: Sequence[str] = RERUN_TRIGGERS
) -> None:
    """Snakemake's API in this process: `targets` of the repository's Snakefile (a copy's own) run in
    `workdir` with the project's rerun triggers, on the local executor. Raises on a failed job; the
    current directory is restored whatever happens."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import RerunTrigger
    from snakemake.settings.types import DAGSettings, OutputSettings, ResourceSettings

    snakefile = Path(workdir) / "Snakefile" if own_snakefile(workdir) else workflow_snakefile()
    cwd = os.getcwd()
    try:
        with SnakemakeApi(OutputSettings()) as api:
            workflow = api.workflow(
                resource_settings=ResourceSettings(cores=cores), snakefile=snakefile, workdir=Path(workdir)
            )
            dag = workflow.dag(
                dag_settings=DAGSettings(
                    targets=set(targets), rerun_triggers=frozenset(RerunTrigger.parse_choices_set(list(triggers)))
                )
            )
            dag.execute_workflow(executor="local")
    finally:
        os.chdir(cwd)
