"""What the leaderboard's rule needs at parse time: its inputs among the other benchmarks' targets, and a
fingerprint of the code behind it."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pipeline.leaderboard as leaderboard_package
from pipeline.core.artifacts import content_id
from pipeline.core.run import Benchmark


def leaderboard_inputs(targets: Iterable[Any], benchmarks: Sequence[Benchmark], rules: Iterable[Any]) -> list[str]:
    """Every registered benchmark's file among the workflow's targets, plus the tables the replays
    read where a rule makes them (they may be intermediate outputs, not final targets)."""
    benches = tuple(b.name for b in benchmarks)
    found = set()
    for target in targets:
        for item in target if isinstance(target, (list, tuple)) else [target]:
            path = str(item)
            if any(path.startswith(f"results/{name}/") for name in benches):
                found.add(path)
    wanted = {f"{b.results}/{name}" for b in benchmarks for name in ("metrics.json", *b.tables)}
    for rule in rules:
        found.update(str(path) for path in rule.output if str(path) in wanted)
    return sorted(found)


def leaderboard_code(benchmarks: Sequence[Benchmark]) -> str:
    """The rule's shell line does not change when the Python behind it does: hash the code instead
    (the leaderboard package, plus each benchmark's replay pages, which live in its own folder)."""
    folder = Path(leaderboard_package.__file__).parent
    files = [(str(p.relative_to(folder)), p) for p in sorted(folder.rglob("*.py"))]
    for bench in benchmarks:
        if bench.replays is not None:
            module_file = sys.modules[bench.replays.__module__].__file__
            if module_file:
                files.append((f"{bench.name}:replay", Path(module_file)))
    return content_id([(name, path.read_text(encoding="utf-8")) for name, path in files])


def published_releases(folder: str) -> list[str]:
    """The release records `publish` wrote (the site's release notes), once there are any."""
    path = Path(folder) / "releases.json"
    return [str(path)] if path.exists() else []
