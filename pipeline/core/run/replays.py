"""Why a planned job is new: what changed since the last run of its benchmark.

Snakemake says only that a new job's output is missing (the plan's "new job"). A game whose roster
entry or params changed has a new content id, so it is a new job as well, and the plan names what
changed. A run that succeeds records, for each benchmark its targets built, the params file and the
roster entries it ran with (`results/plan/ran_with.json`; a killed or failed run records nothing);
the plan compares the current ones with those (with git's HEAD where no run was recorded: the params
of the committed results) and gives each new job of the benchmark what differs: the roster entries
among the job's seats that are new or changed (which fields), and the fields of the benchmark's
params file. Which jobs run stays Snakemake's answer; this only says why.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import yaml

from pipeline.core.artifacts.io import write_json_atomic
from pipeline.core.run.plan import NO_MODEL, CallEstimate, PlannedJob, why
from pipeline.core.run.workflow import DEFAULT_PARAMS, benchmarks_of, fields

RAN_WITH = "ran_with.json"
DEFAULT_OUT = "results/plan"
SHOWN_FIELDS = 3

Planned = tuple[str, PlannedJob, CallEstimate]


def _yaml(text: str | None) -> Any:
    try:
        return yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        return None


def _entries(models: Any) -> dict[str, Any]:
    """The roster entries of a models.yaml's content, by name."""
    roster = models.get("roster") if isinstance(models, dict) else None
    return {str(e["name"]): e for e in roster or [] if isinstance(e, dict) and "name" in e}


def params_now(bench: str, root: str | Path = ".", params_dir: str = DEFAULT_PARAMS) -> dict[str, Any]:
    """The benchmark's params file and the roster entries, as written in `params_dir`."""

    def read(name: str) -> Any:
        path = Path(root) / params_dir / name
        return _yaml(path.read_text(encoding="utf-8")) if path.is_file() else None

    return {"params": read(f"{bench}.yaml"), "roster": _entries(read("models.yaml"))}


def _committed(bench: str, root: str | Path, params_dir: str) -> dict[str, Any] | None:
    """The same at git's HEAD (None outside git, or when the file is not committed)."""

    def show(name: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "show", f"HEAD:./{params_dir}/{name}"], cwd=root, capture_output=True, text=True, check=False
            )
        except OSError:
            return None
        return done.stdout if done.returncode == 0 else None

    params = show(f"{bench}.yaml")
    if params is None:
        return None
    return {"params": _yaml(params), "roster": _entries(_yaml(show("models.yaml")))}


def _saved(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return found if isinstance(found, dict) else {}


def record_run(
    targets: Sequence[str], *, root: str | Path = ".", params_dir: str = DEFAULT_PARAMS, out: str = DEFAULT_OUT
) -> None:
    """After a successful run: the params and roster each benchmark of `targets` ran with."""
    from pipeline.core.run.registry import benchmarks

    path = Path(root) / out / RAN_WITH
    saved = _saved(path)
    for bench in benchmarks_of(targets, [b.name for b in benchmarks()]):
        if (Path(root) / params_dir / f"{bench}.yaml").is_file():
            saved[bench] = params_now(bench, root, params_dir)
    write_json_atomic(path, saved)


def ran_with(
    bench: str, root: str | Path = ".", params_dir: str = DEFAULT_PARAMS, out: str = DEFAULT_OUT
) -> dict[str, Any] | None:
    """What the benchmark last ran with: the last successful run's record, else git's HEAD."""
    recorded = _saved(Path(root) / out / RAN_WITH).get(bench)
    return recorded if isinstance(recorded, dict) else _committed(bench, root, params_dir)


def _differing(before: Any, now: Any) -> list[str]:
    old, new = (fields(before) if before else {}), (fields(now) if now else {})
    return sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN_FIELDS} more" if len(names) > SHOWN_FIELDS else ""
    return ", ".join(names[:SHOWN_FIELDS]) + more


def _referenced(value: Any, names: Collection[str]) -> set[str]:
    """The roster names a params file mentions (players, fill, lineups, ...)."""
    if isinstance(value, str):
        return {value} & set(names)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*(_referenced(v, names) for v in value))
    return set()


def changes(before: dict[str, Any], now: dict[str, Any], params_file: str, seated: Collection[str] = ()) -> str:
    """What differs between two records of `params_now`: the roster entries seated in the job (all
    those the params file names when the job's seats are unknown), then the params file's fields."""
    old_roster, new_roster = before.get("roster") or {}, now.get("roster") or {}
    names = sorted(n for n in seated if n in new_roster) or sorted(_referenced(now.get("params"), new_roster))
    parts = []
    for name in names:
        if name not in old_roster:
            parts.append(f"roster entry '{name}' is new")
        elif differing := _differing(old_roster[name], new_roster[name]):
            parts.append(f"roster entry '{name}' changed ({_listed(differing)})")
    if differing := _differing(before.get("params"), now.get("params")):
        parts.append(f"{params_file} changed ({_listed(differing)})")
    return "; ".join(parts)


def _key(job: PlannedJob) -> tuple[Any, ...]:
    return (job.rule, tuple(sorted(job.wildcards.items())), job.outputs)


def explain_new_jobs(
    planned: Sequence[Planned], *, root: str | Path = ".", params_dir: str = DEFAULT_PARAMS, out: str = DEFAULT_OUT
) -> list[Planned]:
    """The planned jobs, each new job of a benchmark given what changed since the benchmark last ran
    (`PlannedJob.change`, which its `why` shows): the seats are the roster entries its estimates name."""
    seated: dict[tuple[Any, ...], set[str]] = {}
    for _, job, estimate in planned:
        if estimate.model != NO_MODEL:
            seated.setdefault(_key(job), set()).add(estimate.model)
    records: dict[str, tuple[dict[str, Any] | None, dict[str, Any]]] = {}
    said: dict[tuple[str, frozenset[str]], str] = {}
    found = []
    for bench, job, estimate in planned:
        if why(job.reason) == "new job" and (Path(root) / params_dir / f"{bench}.yaml").is_file():
            if bench not in records:
                records[bench] = (ran_with(bench, root, params_dir, out), params_now(bench, root, params_dir))
            before, now = records[bench]
            names = frozenset(seated.get(_key(job), ()))
            if before is not None and (bench, names) not in said:
                said[(bench, names)] = changes(before, now, f"{params_dir}/{bench}.yaml", names)
            if said.get((bench, names)):
                job = dataclasses.replace(job, change=said[(bench, names)])
        found.append((bench, job, estimate))
    return found
