# Leaderboard: combine the benchmarks into results/leaderboard/ (leaderboard.json, leaderboard.md,
# version.json, site/). Included last by the Snakefile, so ALL_TARGETS already lists every other
# room's outputs: the benchmarks' files among them are this rule's inputs (a room that is absent
# simply adds none), and a change to any of them re-publishes.
from pathlib import Path as _LeaderboardPath

import pipeline.leaderboard as _leaderboard_package
from pipeline.core.io import content_id as _leaderboard_content_id

LEADERBOARD_DIR = "results/leaderboard"
LEADERBOARD_ROOMS = tuple(b.name for b in BENCHMARKS)  # the Snakefile's registered benchmarks


def _leaderboard_inputs():
    found = set()
    for target in ALL_TARGETS:
        for item in target if isinstance(target, (list, tuple)) else [target]:
            path = str(item)
            if any(path.startswith(f"results/{room}/") for room in LEADERBOARD_ROOMS):
                found.add(path)
    # the tables read for replays may be intermediate outputs (not final targets): add those a rule makes
    wanted = {f"{b.results}/{name}" for b in BENCHMARKS for name in ("metrics.json", *b.tables)}
    for other in workflow.rules:
        found.update(str(path) for path in other.output if str(path) in wanted)
    return sorted(found)


def _leaderboard_code():
    # the rule's shell line does not change when the Python behind it does: hash the code instead
    # (the leaderboard package, plus each benchmark's replay pages, which live in its own folder)
    import sys as _sys

    folder = _LeaderboardPath(_leaderboard_package.__file__).parent
    files = [(str(p.relative_to(folder)), p) for p in sorted(folder.rglob("*.py"))]
    for bench in BENCHMARKS:
        if bench.replays is not None:
            files.append((f"{bench.name}:replay", _LeaderboardPath(_sys.modules[bench.replays.__module__].__file__)))
    return _leaderboard_content_id([(name, path.read_text(encoding="utf-8")) for name, path in files])


rule publish:
    input:
        rooms=_leaderboard_inputs(),
        params="params/leaderboard.yaml",
    output:
        leaderboard=f"{LEADERBOARD_DIR}/leaderboard.json",
        markdown=f"{LEADERBOARD_DIR}/leaderboard.md",
        version=f"{LEADERBOARD_DIR}/version.json",
        combined=f"{LEADERBOARD_DIR}/combined.csv",
        site=directory(f"{LEADERBOARD_DIR}/site"),
    params:
        code=_leaderboard_code(),
    log:
        f"{LEADERBOARD_DIR}/logs/publish.log",
    shell:
        "{PYTHON} -m pipeline publish --params {input.params} --results results --out {LEADERBOARD_DIR} "
        "> {log} 2>&1"


rule leaderboard_all:
    input:
        rules.publish.output,


ALL_TARGETS.extend(rules.leaderboard_all.input)
