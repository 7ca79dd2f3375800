"""`python -m pipeline run TARGET...`: Snakemake with the project's profile, safe to rerun after a crash.

- Jobs at once come from `parallel.jobs` in params/models.yaml (default: the machine's CPUs), so
  no stage command (dvc.yaml) fixes `--cores`.
- A run killed with SIGKILL (a crash, a lost node) leaves Snakemake's lock in `.snakemake/locks`
  and the next run would stop with LockException until `--unlock`. This command holds a `flock`
  on `.snakemake/pipeline-run.lock` for the whole run (Snakemake inherits it, and the kernel
  drops it when the processes die), and also looks for a Snakemake process working in this
  folder. When neither is alive the lock is stale: it runs `snakemake --unlock` and goes on.
  When a run is alive it refuses, naming its process id: two runs never write the same files.
- While Snakemake runs, it prints the stage's progress (pipeline.core.artifacts.progress) when stderr is a
  terminal.
- Run by a DVC stage (DVC sets DVC_STAGE), it removes the stage's metrics files once the params
  check passed: dvc.yaml keeps them `persist` so that bad params delete no git-tracked file
  (pipeline/core/run/dvc_yaml.py), and Snakemake rebuilds them as after DVC's own removal.
- `--params DIR` (or PIPELINE_PARAMS=DIR) reads every params file from DIR instead of params/ (e.g.
  params/paper): Snakemake gets `--config params=DIR` (the Snakefile's PARAMS_DIR).
- Adaptive schedules (pipeline.core.run.rounds): when a target needs a benchmark whose params turn
  its adaptive schedule on, the run first loops under the same lock: the round ledger advances,
  Snakemake plays the round's games (the benchmark's play target), and so on until the rounds stop;
  then Snakemake builds the targets asked for (rating, reports). A dry run (`-n`) advances nothing.
- `--workdir DIR` runs this project's own Snakefile (the one beside the installed `pipeline`
  package) with DIR as Snakemake's working directory (`--snakefile`, `--directory`): the rules, the
  workflow profile and envs/ are the project's, the code the installed package's, and results/,
  .snakemake/ (with this command's lock), the default params/ and every relative path in the params
  files (.cache/responses, data/...) are DIR's. Nothing is copied: a small test configuration, or
  a second configuration beside the project's results, is a directory holding params/. In such a
  directory (params/, no Snakefile) it is the default: `cd DIR && python -m pipeline run`.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.core.artifacts.progress import PROGRESS_ENV, stage_progress
from pipeline.core.run.dvc_yaml import stage_metrics
from pipeline.core.run.workflow import DEFAULT_PARAMS, check_chosen_params_dir, params_config, params_dir

LOCK_NAME = "pipeline-run.lock"
DVC_STAGE = "DVC_STAGE"  # set by DVC for a stage's command: the stage's name
# arguments after which Snakemake runs nothing, so no lock is involved
_HARMLESS = {"-n", "--dry-run", "--dryrun", "--unlock", "--list", "-l", "--summary", "-S", "--lint"}
_JOB_FLAGS = {"--cores", "-c", "--jobs", "-j", "--profile", "--workflow-profile"}


class RunRefused(RuntimeError):
    """Another run is alive in this project folder."""


class NoWorkflow(FileNotFoundError):
    """The installed package has no Snakefile beside it (not a source checkout): --workdir cannot run."""


def snakemake_processes(root: Path, exclude: set[int]) -> list[int]:
    """Ids of live Snakemake processes (not dry runs) whose working folder is `root`."""
    found = []
    target = root.resolve()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = (entry / "cwd").resolve()
        except (OSError, RuntimeError):
            continue
        words = [a.decode("utf-8", "replace") for a in argv if a]
        if cwd != target or not any(Path(w).name == "snakemake" or w == "snakemake" for w in words[:3]):
            continue
        if _HARMLESS.intersection(words):
            continue
        found.append(int(entry.name))
    return sorted(found)


def take_run_lock(root: Path) -> int:
    """The run's flock (a file descriptor), or RunRefused naming the live run."""
    folder = root / ".snakemake"
    folder.mkdir(exist_ok=True)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise RunRefused(
            f"another run is working in {root.resolve()} (process {holder}); wait for it to end or stop it, "
            "then rerun this command"
        ) from None
    others = snakemake_processes(root, exclude={os.getpid()})
    if others:
        os.close(fd)
        raise RunRefused(
            f"a Snakemake run is working in {root.resolve()} (process {', '.join(map(str, others))}); wait for "
            "it to end or stop it, then rerun this command"
        )
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    return fd


def clear_stale_lock(
    root: Path, targets: Sequence[str], say: Callable[[str], None], workflow: Sequence[str] = ()
) -> None:
    """Called with the run lock held and no Snakemake alive here: any Snakemake lock is stale.
    `workflow`: the Snakefile and directory arguments of a --workdir run."""
    locks = root / ".snakemake" / "locks"
    if locks.is_dir() and any(locks.iterdir()):
        say("removing the lock of an earlier run that did not end cleanly (killed or crashed)")
        subprocess.run(
            [sys.executable, "-m", "snakemake", *workflow, "--unlock", *targets],
            cwd=root,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


def workflow_snakefile() -> Path:
    """The Snakefile of the project the installed `pipeline` package belongs to (the repository an
    editable install points at); NoWorkflow naming the fix when the package came without it."""
    import pipeline

    path = Path(pipeline.__file__).resolve().parent.parent / "Snakefile"
    if not path.is_file():
        raise NoWorkflow(
            f"no Snakefile beside the installed pipeline package ({path}): --workdir runs the workflow of "
            "a source checkout; install the project with `pip install -e .` from its clone"
        )
    return path


def here_without_snakefile() -> str | None:
    """ "." when the current directory is a work directory (params/ and no Snakefile): `run` and
    `plan` there run this project's Snakefile in it, as with --workdir . (Snakemake alone would find
    no Snakefile); None elsewhere (a checkout or copy of the project runs its own)."""
    return "." if Path("params").is_dir() and not Path("Snakefile").exists() else None


def workflow_args(workdir: str | os.PathLike[str]) -> list[str]:
    """Snakemake arguments running this project's Snakefile in `workdir`."""
    return ["--snakefile", str(workflow_snakefile()), "--directory", str(Path(workdir).resolve())]


def with_params_config(args: Sequence[str], params: str) -> list[str]:
    """`args` choosing the params directory: `--config params=DIR` (merged into a --config of the
    user's own, which takes several KEY=VALUE)."""
    words = list(args)
    config = params_config(params)
    if not config:
        return words
    for i, word in enumerate(words):
        if word in ("--config", "-C"):
            return [*words[: i + 1], config[1], *words[i + 1 :]]
    return [*words, *config]


def default_jobs(root: Path, params: str = DEFAULT_PARAMS) -> int:
    from pipeline.core.models.roster import load_models

    jobs = load_models(root / params / "models.yaml").parallel.jobs
    return jobs or os.cpu_count() or 1


def say(message: str) -> None:
    print(f"pipeline run: {message}", file=sys.stderr, flush=True)


def run_snakemake(
    targets: Sequence[str],
    extra: Sequence[str],
    root: Path = Path("."),
    interval_s: float = 5.0,
    params: str | None = None,
    workdir: str | os.PathLike[str] | None = None,
) -> int:
    """Snakemake on `targets`; `params` is the params directory (None: PIPELINE_PARAMS, else params).

    `workdir`: this project's Snakefile run in that directory (it replaces `root`); relative paths of
    `extra` (a `--profile`) stay relative to the current directory, `params` is relative to `workdir`."""
    workflow: list[str] = []
    if workdir is not None:
        root = Path(workdir)
        workflow = workflow_args(root)
    params = params_dir(params)
    check_chosen_params_dir(params, root, targets=targets)  # a bad params file stops here, named
    fd = take_run_lock(root)
    try:
        clear_stale_lock(root, targets, say, workflow)
        if os.environ.get(DVC_STAGE) and not _HARMLESS.intersection(extra):
            for metrics in stage_metrics(os.environ[DVC_STAGE], root):
                metrics.unlink(missing_ok=True)  # the params are good: what DVC would have removed
        # the shared flags (rerun triggers, --rerun-incomplete) come from the workflow profile
        # profiles/default, which Snakemake loads by itself
        jobs = (
            []
            if _JOB_FLAGS.intersection(a.split("=", 1)[0] for a in extra)
            else ["--cores", str(default_jobs(root, params))]
        )

        def snakemake(run_targets: Sequence[str]) -> int:
            args = with_params_config([*run_targets, *extra], params) + jobs
            progress_dir = root / ".snakemake" / "pipeline-progress" / str(os.getpid())
            progress_dir.mkdir(parents=True, exist_ok=True)
            env = {**os.environ, PROGRESS_ENV: str(progress_dir.resolve())}
            # a --workdir run starts where it was called (Snakemake changes into the work directory itself)
            process = subprocess.Popen(
                [sys.executable, "-m", "snakemake", *workflow, *args],
                cwd=None if workflow else root,
                env=env,
                pass_fds=(fd,),
            )
            return _watch(process, progress_dir, run_targets, root, interval_s)

        if not _HARMLESS.intersection(extra):  # a dry run or an unlock chooses no round
            code = _adaptive_rounds(targets, root, params, snakemake)
            if code != 0:
                return code
        return snakemake(targets)
    finally:
        os.close(fd)


def _adaptive_rounds(targets: Sequence[str], root: Path, params: str, snakemake: Callable[[Sequence[str]], int]) -> int:
    """The rounds of every adaptive benchmark the targets need, played before the targets are built."""
    from pipeline.core.run.rounds import play_rounds
    from pipeline.core.run.workflow import adaptive_benchmarks

    benches = adaptive_benchmarks(targets)
    if not benches:
        return 0
    return play_rounds(benches, snakemake, root=root, params_dir=params, say=say)


def _watch(
    process: subprocess.Popen[bytes], folder: Path, targets: Sequence[str], root: Path, interval_s: float
) -> int:
    label = " ".join(targets) or "all"
    benches = sorted({t.split("_", 1)[0] for t in targets if "_" in t and "/" not in t}) or None
    started = time.monotonic()
    baseline: tuple[int, float] | None = None
    show = sys.stderr.isatty()  # quiet in logs: Snakemake's own output says enough there
    while True:
        try:
            code = process.wait(timeout=interval_s)
            break
        except subprocess.TimeoutExpired:
            pass
        state = stage_progress(folder, benches, started, baseline, root)
        if baseline is None and state.games_total:
            baseline = (state.games_done, time.monotonic())
        if show:
            print(state.line(label), file=sys.stderr, flush=True)
    if show:
        print(stage_progress(folder, benches, started, baseline, root).line(label), file=sys.stderr, flush=True)
    return code
