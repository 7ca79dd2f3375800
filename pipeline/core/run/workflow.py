"""What the Snakefile sets up before any rule: the interpreter the rules call, their software, and
the params directory every rule reads.

Rules call `python -m pipeline ...`. Rather than writing the interpreter's path into every shell
line (which `snakemake --lint` rightly flags, and which a conda or container run must not bypass),
the Snakefile puts the interpreter running Snakemake first on PATH; a run with `--sdm conda`
activates `envs/pipeline.yaml` for each job instead, and `python` is that environment's.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from pipeline.core.run.registry import Benchmark


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
    names = [f"{b.name}.yaml" for b in benchmarks if b.in_workflow]
    return ["models.yaml", *names, "leaderboard.yaml"]


def check_params_dir(directory: str, names: Iterable[str], root: str | Path = ".") -> None:
    """Stop with a ParamsError naming the path and the fix when `directory` (relative to `root`) is
    missing or lacks one of `names`."""
    from pipeline.core.artifacts.params import ParamsError

    folder = Path(root) / directory
    switch = (
        f"--params DIR (python -m pipeline run|plan), --config {PARAMS_CONFIG_KEY}=DIR (snakemake) or {PARAMS_ENV}=DIR"
    )
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


def freeze_sightings(directory: str, root: str | Path = ".") -> None:
    """The run's view of reasoning models seen in their replies (pipeline.core.models.reasoning_seen),
    as this parse sees it, put in the environment its jobs inherit: a sighting made mid-run waits
    for the next run, so no job's schedule or half-played game changes under it."""
    from pipeline.core.models.reasoning_seen import SNAPSHOT_ENV, snapshot
    from pipeline.core.models.roster import load_models

    if SNAPSHOT_ENV in os.environ:  # a job of a run (a cluster job's own Snakemake parses again): its run's view
        return
    os.environ[SNAPSHOT_ENV] = snapshot(load_models(Path(root) / directory / "models.yaml"))


def check_chosen_params_dir(
    directory: str,
    root: str | Path = ".",
    benchmarks: Iterable[Any] | None = None,
    targets: Sequence[str] | None = None,
) -> dict[str, str]:
    """Stop with a ParamsError naming the file, the field, the value and the fix when `directory` is
    missing, lacks a file of `benchmarks` (default: the registered ones), or holds a file its stage
    cannot load (`check_params_files`): a bad params file stops every run, whatever its targets.

    Returns, per benchmark, the names of its params that resolve to nothing (a player not in the
    roster, an unknown judge): such a benchmark stops the runs that need it (`params_guard`), and
    with `targets` (the Snakemake targets of a run or plan; [] is the default target, everything)
    this raises already when one of them needs it."""
    if benchmarks is None:
        from pipeline.core.run.registry import benchmarks as registered

        benchmarks = registered()
    every = list(benchmarks)
    benchmarks = [b for b in every if b.in_workflow]  # a copy of the project may leave one out
    check_params_dir(directory, required_params(benchmarks), root)
    problems = check_params_files(directory, root, benchmarks, [b.name for b in every])
    if targets is not None:
        stopped = [problems[name] for name in benchmarks_of(targets, [b.name for b in benchmarks]) if name in problems]
        if stopped:
            from pipeline.core.artifacts.params import ParamsError

            raise ParamsError("\n".join(stopped))
    return problems


def _loader(package: str, stem: str) -> Callable[[Path], Any] | None:
    """The loader of `params/<stem>.yaml`: `load_<stem>`, `load_<stem>_params` or `load` in the
    stage's `config` module (the roster's is pipeline.core.models.roster.load_models)."""
    if stem == "models":
        from pipeline.core.models.roster import load_models

        return load_models
    name = f"{package}.config"
    try:
        found = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return None
    module = importlib.import_module(name)
    for attr in (f"load_{stem}", f"load_{stem}_params", "load"):
        if callable(getattr(module, attr, None)):
            return cast(Callable[[Path], Any], getattr(module, attr))
    return None


def check_params_files(
    directory: str, root: str | Path = ".", benchmarks: Iterable[Any] = (), registered: Sequence[str] | None = None
) -> dict[str, str]:
    """Load every params file of `directory` with its stage's model: the roster (models.yaml), each
    benchmark's, the leaderboard's and any other `<stage>.yaml` a `pipeline.<stage>.config` reads.
    Raises one ParamsError listing every file's problems (file, field, value and fix). Returns, per
    benchmark, what its names get wrong against the roster ({} when everything resolves).
    `registered`: every benchmark name the roster's keys may use (default: those of `benchmarks`)."""
    from pipeline.core.artifacts.params import ParamsError, did_you_mean

    benchmarks = list(benchmarks)
    folder = Path(root) / directory
    packages = {
        "models": "pipeline.core",
        "leaderboard": "pipeline.leaderboard",
        **{b.name: b.package for b in benchmarks},
    }
    files = [f"{stem}.yaml" for stem in packages] + sorted(
        p.name for p in folder.glob("*.yaml") if p.stem not in packages
    )
    loaded: dict[str, Any] = {}
    errors: list[str] = []
    for name in files:
        stem = name.removesuffix(".yaml")
        path = folder / name
        if not path.is_file():
            continue  # check_params_dir has said which files are required
        loader = _loader(packages.get(stem, f"pipeline.{stem}"), stem)
        if loader is None:
            guess = did_you_mean(stem, packages)
            if guess:
                print(
                    f"warning: {path}: no stage reads this file; {guess} (a stage reads <stage>.yaml)", file=sys.stderr
                )
            continue
        try:
            loaded[stem] = loader(path)
        except ParamsError as exc:
            errors.append(str(exc))
    models = loaded.get("models")
    if models is not None:
        errors += roster_problems(
            models,
            str(folder / "models.yaml"),
            list(registered) if registered is not None else [b.name for b in benchmarks],
        )
    if errors:
        raise ParamsError("\n".join(errors))
    problems: dict[str, str] = {}
    for bench in benchmarks:
        params = loaded.get(bench.name)
        check = getattr(params, "check_roster", None)
        if models is None or check is None:
            continue
        try:
            check(models, str(folder / f"{bench.name}.yaml"), str(folder / "models.yaml"))
        except ParamsError as exc:
            problems[bench.name] = str(exc)
    return problems


def roster_problems(models: Any, source: str, benchmark_names: Sequence[str]) -> list[str]:
    """What in the roster names something that does not exist: a per-move budget keyed by an unknown
    benchmark (`elimnation.vote`), a provider's limits under a misspelt prefix (`opnai`)."""
    from pipeline.core.artifacts.params import did_you_mean

    problems = []
    for i, entry in enumerate(models.roster):
        for key in entry.sampling.move_max_tokens:
            prefix = key.split(".", 1)[0]
            if "." in key and prefix not in benchmark_names:
                guess = did_you_mean(prefix, benchmark_names)
                problems.append(
                    f"{source}: roster[{i}].sampling.move_max_tokens: {key!r} names no benchmark {prefix!r}; "
                    f"{guess + ' ' if guess else ''}keys are `<benchmark>.<kind>` with a benchmark of "
                    f"{', '.join(benchmark_names)}, or `<kind>` for every benchmark"
                )
    used = {entry.provider for entry in models.roster}
    for key in models.providers:
        guess = did_you_mean(key, used) if key != "default" and key not in used else ""
        if guess:
            problems.append(
                f"{source}: providers.{key}: no roster entry's model starts with {key}/; {guess} "
                f"(providers are keyed by the prefix of a roster entry's model, or `default`)"
            )
    return problems


def benchmarks_of(targets: Sequence[str], benches: Sequence[str]) -> list[str]:
    """The benchmarks a run of these Snakemake targets needs: every one for the default target (no
    targets), `all` and the leaderboard's; else those named by a rule (`elimination_all`) or a path
    (`results/elimination/...`)."""
    needed: list[str] = []
    for target in targets or ["all"]:
        parts = Path(target).parts
        name = parts[1] if len(parts) > 1 and parts[0] == "results" else target
        if name in ("all", "leaderboard") or name.startswith("leaderboard_"):
            return list(benches)
        match = next((r for r in sorted(benches, key=len, reverse=True) if name == r or name.startswith(f"{r}_")), None)
        if match and match not in needed:
            needed.append(match)
    return needed


def params_guard(problems: dict[str, str], name: str) -> Any:
    """For a benchmark's rate rule's input: [] while the benchmark's params resolve; else an input function that
    raises its problem, so Snakemake stops while building the DAG of any target needing the benchmark (a
    dry run and `python -m pipeline plan` included) and the other benchmarks' targets still run."""
    if name not in problems:
        return []

    def guard(_wildcards: Any) -> list[str]:
        from pipeline.core.artifacts.params import ParamsError

        raise ParamsError(problems[name])

    return guard


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


def fields(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested value as its fields: dotted keys (`rating.passes`), a list of named entries (the
    roster) by name (`roster[gpt-5].sampling.temperature`), other lists and empty mappings whole."""
    if isinstance(value, Mapping) and value:
        found: dict[str, Any] = {}
        for key, item in value.items():
            found.update(fields(item, f"{prefix}.{key}" if prefix else str(key)))
        return found
    if isinstance(value, list) and value and all(isinstance(v, Mapping) and "name" in v for v in value):
        return {k: v for entry in value for k, v in fields(entry, f"{prefix}[{entry['name']}]").items()}
    return {prefix: value}


def setting_items(settings: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """`settings` as a rule's `params:` (`*setting_items(SETTINGS)`): one (field, value) pair a value
    (`fields`; lists as tuples).

    Snakemake compares a job's params as a set and its rerun reason prints the ones that differ
    ("Params have changed ... before: X now: Y"): a whole settings dict as one param is printed whole,
    twice; one pair a field prints the fields that changed, and a change of any field still reruns the
    job. Pairs, not "field=value" strings: Snakemake would read a string's `{...}` as a wildcard."""
    found = fields(settings) if settings else {}
    return [(key, tuple(value) if isinstance(value, list) else value) for key, value in sorted(found.items())]


def code_fingerprint(package: str, modules: Sequence[str]) -> str:
    """A content id of a package's modules, for a rule's `params:`. Snakemake's code trigger sees
    only a rule's own shell line, not the Python it calls: with this, a change to those modules
    reruns the rule."""
    from pipeline.core.artifacts.io import content_id

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ImportError(f"no package {package!r}")
    folder = Path(spec.origin).parent
    return content_id([(name, (folder / name).read_text(encoding="utf-8")) for name in modules])


def adaptive_benchmarks(targets: Sequence[str]) -> list[Benchmark]:
    """The benchmarks with an adaptive declaration that a run of `targets` builds (`all`, `<bench>_all`,
    a path under results/<bench>/, ...: core.run.workflow.benchmarks_of)."""
    from pipeline.core.run.registry import benchmarks

    declared = [b for b in benchmarks() if b.in_workflow]
    needed = set(benchmarks_of(targets, [b.name for b in declared]))
    return [b for b in declared if b.name in needed and b.adaptive is not None]
