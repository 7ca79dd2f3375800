"""Bad input stops the run (issue 24): an invalid params file, a name that is not in the roster, a
count out of range, an unknown key or a path with nothing to read makes `python -m pipeline plan`,
`run`, Snakemake's parse and `dvc repro` exit non-zero with the file, the field, the value and the fix
(and the closest name, for a typo), instead of the benchmark vanishing from the plan."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import annotated_types
import pytest
import yaml
from pydantic import BaseModel

from pipeline.core.artifacts.params import ParamsError
from pipeline.core.run.workflow import PARAMS_ENV, check_chosen_params_dir, copy_workflow
from tests.conftest import REPO

BIN = Path(sys.executable).parent


def env() -> dict[str, str]:
    """The test's environment without a params directory chosen, with the venv's tools on PATH."""
    found = {k: v for k, v in os.environ.items() if k != PARAMS_ENV}
    found["PATH"] = f"{BIN}{os.pathsep}{found.get('PATH', '')}"
    return found


def run(project: Path, *command: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=project, env={**env(), **(extra or {})}, capture_output=True, text=True, timeout=300
    )


def pipeline(project: Path, *args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run(project, sys.executable, "-m", "pipeline", *args, extra=extra)


def edit(project: Path, name: str, change: Callable[[Any], None]) -> None:
    path = project / "params" / name
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def broken(tmp_path: Path, name: str, change: Callable[[Any], None]) -> Path:
    project = copy_workflow(REPO, tmp_path / "project")
    edit(project, name, change)
    return project


def seats_eight(d: Any) -> None:
    d["seats"] = "eight"


def unknown_player(d: Any) -> None:
    d["schedule"]["players"] = ["smollm2-315m"]


def negative_rounds(d: Any) -> None:
    d["rounds"] = -2


def unknown_key(d: Any) -> None:
    d["schedule"]["roations"] = d["schedule"].pop("rotations")


def misspelt_sampling(d: Any) -> None:
    d["roster"][0]["sampling"]["temprature"] = d["roster"][0]["sampling"].pop("temperature")


# (file, change, what the message must say: the file, the field, the value and the fix)
CASES = {
    "seats-eight": (
        "elimination.yaml",
        seats_eight,
        [
            "params/elimination.yaml: invalid params",
            "- seats: Input should be a valid integer",
            "(got 'eight')",
            "fix: set seats to an integer from 3 to 26",
        ],
    ),
    "unknown-player": (
        "elimination.yaml",
        unknown_player,
        [
            "params/elimination.yaml: schedule.players[0]: 'smollm2-315m' is not in the roster of params/models.yaml",
            "did you mean 'smollm2-135m'?",
            "add an entry named 'smollm2-315m' to the roster in params/models.yaml",
        ],
    ),
    "negative-rounds": (
        "skate.yaml",
        negative_rounds,
        [
            "params/skate.yaml: invalid params",
            "- rounds: Input should be greater than or equal to 1 (got -2)",
            "fix: set rounds to an integer from 1 to 1000",
        ],
    ),
    "unknown-key": (
        "elimination.yaml",
        unknown_key,
        [
            "params/elimination.yaml: invalid params",
            "- schedule.roations: Extra inputs are not permitted (got 1)",
            "fix: did you mean 'rotations'? schedule takes lineups, players,",
        ],
    ),
    "models-typo": (
        "models.yaml",
        misspelt_sampling,
        [
            "params/models.yaml: invalid params",
            "- roster['smollm2-135m'].sampling.temprature: Extra inputs are not permitted",
            "did you mean 'temperature'?",
        ],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_plan_stops_on_a_bad_params_file_naming_file_field_value_and_fix(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.cli import main

    name, change, expected = CASES[case]
    project = broken(tmp_path, name, change)
    # `python -m pipeline plan` in this process (its __main__ is `SystemExit(main())`; the tests
    # below run the command itself): a new interpreter per case would cost 1.4 CPU-s each
    monkeypatch.chdir(project)
    monkeypatch.delenv(PARAMS_ENV, raising=False)
    code = main(["plan"])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    for text in expected:
        assert text in err, f"{text!r} not in:\n{err}"
    assert not (project / "results" / "plan" / "plan.json").exists()  # stopped before any dry run


def test_run_stops_before_snakemake_starts(tmp_path: Path) -> None:
    project = broken(tmp_path, "elimination.yaml", seats_eight)
    done = pipeline(project, "run", "roster_all")  # another benchmark's target: a bad file stops every run
    assert done.returncode == 2 and "(got 'eight')" in done.stderr, done.stderr
    assert not (project / ".snakemake").exists()  # no Snakemake, no lock


def test_snakemake_parse_fails_on_a_bad_params_file(tmp_path: Path) -> None:
    project = broken(tmp_path, "elimination.yaml", seats_eight)
    done = run(project, sys.executable, "-m", "snakemake", "-n", "--cores", "1", "roster_all")
    output = done.stdout + done.stderr  # Snakemake prints its errors on either
    assert done.returncode != 0
    assert "ParamsError" in output and "params/elimination.yaml" in output and "(got 'eight')" in output
    assert "fix: set seats to an integer from 3 to 26" in output


@pytest.mark.slow  # two of Snakemake's dry runs over the whole demo
def test_an_unknown_name_stops_the_targets_that_need_its_benchmark(tmp_path: Path) -> None:
    project = broken(tmp_path, "elimination.yaml", unknown_player)
    every = run(project, sys.executable, "-m", "snakemake", "-n", "--cores", "1")
    output = every.stdout + every.stderr
    assert every.returncode != 0, output
    assert "'smollm2-315m' is not in the roster" in output and "did you mean 'smollm2-135m'?" in output
    # the names are valid params: another benchmark's targets still run (its params resolve)
    other = run(project, sys.executable, "-m", "snakemake", "-n", "--cores", "1", "whoisspy_all")
    assert other.returncode == 0, other.stderr
    assert "whoisspy_rate" in other.stdout


@pytest.mark.slow  # dvc's own start-up takes seconds
def test_dvc_repro_fails_on_a_bad_params_file(tmp_path: Path) -> None:
    project = broken(tmp_path, "elimination.yaml", seats_eight)
    assert run(project, "git", "init", "-q").returncode == 0
    assert run(project, str(BIN / "dvc"), "init", "-q").returncode == 0
    done = run(project, str(BIN / "dvc"), "repro", "elimination")
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "params/elimination.yaml" in output and "(got 'eight')" in output and "fix: set seats" in output


PLAYERS = "players: [smollm2-135m, graded-90, graded-50, graded-10]"
# (how the line of params/whoisspy.yaml is broken, what the error must say: file, field and fix)
TRACKED_CASES = {
    "unknown-player": (
        PLAYERS.replace("smollm2-135m", "smollm2-315m"),
        ["params/whoisspy.yaml: players[0]: 'smollm2-315m'", "did you mean 'smollm2-135m'?", "add an entry named"],
    ),
    "unclosed-bracket": (
        PLAYERS.removesuffix("]"),
        ["params/whoisspy.yaml: not valid YAML", "a flow sequence that opened at line 6", "a bracket not closed?"],
    ),
}


@pytest.mark.slow  # dvc's own start-up takes seconds
@pytest.mark.parametrize("case", list(TRACKED_CASES))
def test_dvc_repro_on_bad_params_keeps_the_git_tracked_metrics(case: str, tmp_path: Path) -> None:
    """DVC removes a stage's outputs before its command runs: the metrics files (git-tracked, `cache:
    false`) are `persist` so that DVC keeps them, and the stage command removes them itself only once
    the params are good (issue 45)."""
    line, expected = TRACKED_CASES[case]
    project = copy_workflow(REPO, tmp_path / "project")
    metrics = project / "results" / "whoisspy" / "metrics.json"
    metrics.parent.mkdir(parents=True)
    shutil.copy2(REPO / "results" / "whoisspy" / "metrics.json", metrics)
    params = project / "params" / "whoisspy.yaml"
    assert PLAYERS in params.read_text()
    params.write_text(params.read_text().replace(PLAYERS, line))
    assert run(project, "git", "init", "-q").returncode == 0
    assert run(project, str(BIN / "dvc"), "init", "-q").returncode == 0
    done = run(project, str(BIN / "dvc"), "repro", "whoisspy")
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    for text in expected:
        assert text in output, f"{text!r} not in:\n{output}"
    assert metrics.read_bytes() == (REPO / "results" / "whoisspy" / "metrics.json").read_bytes()


def test_a_missing_params_directory_stops_plan_and_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.cli import main

    project = copy_workflow(REPO, tmp_path / "project")
    flag = pipeline(project, "plan", "--params", "params/nope")
    assert flag.returncode == 2 and "params directory params/nope does not exist" in flag.stderr, flag.stderr
    monkeypatch.chdir(project)
    monkeypatch.setenv(PARAMS_ENV, "params/nope")
    assert main(["run", "roster_all"]) == 2
    assert "params directory params/nope does not exist" in capsys.readouterr().err
    assert not (project / ".snakemake").exists()


def test_import_of_a_path_with_no_logs_stops_and_writes_nothing(tmp_path: Path) -> None:
    from pipeline.cli import main

    out = tmp_path / "out"
    done = pipeline(tmp_path, "elimination", "import", "/does-not-exist", "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert (
        "elimination import: /does-not-exist: no such file or directory; name directories of game logs" in done.stderr
    )
    (tmp_path / "empty").mkdir()
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "a.jsonl").write_text("not json\n")
    assert main(["elimination", "import", str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert main(["elimination", "import", "--out", str(out)]) == 2
    assert main(["elimination", "import", str(tmp_path / "junk"), "--out", str(out)]) == 2
    assert not out.exists()  # no empty leaderboard


def test_other_path_arguments_that_hold_nothing_stop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.cli import main

    assert (
        main(
            [
                "leaderboard",
                "--params",
                str(REPO / "params" / "leaderboard.yaml"),
                "--results",
                str(tmp_path / "nope"),
                "--out",
                str(tmp_path / "lb"),
            ]
        )
        == 2
    )
    assert main(["skate", "calibrate", "--pairs", str(tmp_path / "nope.yaml")]) == 2
    assert main(["sandbox", "run", str(tmp_path / "nope.py")]) == 2
    err = capsys.readouterr().err
    assert "--results" in err and f"{tmp_path / 'nope.yaml'}: no such file" in err and "nope.py: no such file" in err
    assert not (tmp_path / "lb").exists()


def params_copy(tmp_path: Path, name: str, change: Callable[[Any], None]) -> Path:
    folder = copy_workflow(REPO, tmp_path, ("params",)) / "params"
    edit(tmp_path, name, change)
    return folder


def set_in(keys: str, value: Any) -> Callable[[Any], None]:
    def change(data: Any) -> None:
        *path, last = [int(k) if k.isdigit() else k for k in keys.split(".")]
        for key in path:
            data = data[key]
        data[last] = value

    return change


# cross-references besides the players: judges, games, fill, the leaderboard's benchmarks, the roster's keys
REFERENCES = [
    (
        "xent.yaml",
        "judge",
        "gemma-3-207m",
        "judge: 'gemma-3-207m' is neither a registered judge nor a model directory; did you mean 'gemma-3-270m'?",
    ),
    ("xent.yaml", "games", ["condence"], "games[0]: 'condence' is not a library game; did you mean 'condense'?"),
    ("xent.yaml", "opponent", "heuristic-bott", "opponent: 'heuristic-bott' is not a roster name in"),
    ("whoisspy.yaml", "fill", ["heuristic-bot", "randm-bot"], "fill[1]: 'randm-bot' is not a roster name in"),
    ("skate.yaml", "answer_only", ["oracle-bot", "noisy-bt"], "answer_only[1]: 'noisy-bt' is not a roster name in"),
    ("elimination.yaml", "memory_players", ["gemma-270"], "memory_players[0]: 'gemma-270' is not in the roster"),
    ("leaderboard.yaml", "benchmarks", ["skate", "elimnation"], "'elimnation': did you mean 'elimination'?"),
    (
        "models.yaml",
        "roster.0.sampling.move_max_tokens",
        {"elimnation.vote": 10},
        "'elimnation.vote' names no benchmark 'elimnation'; did you mean 'elimination'?",
    ),
    (
        "models.yaml",
        "providers",
        {"locl": {"max_concurrency": 1}},
        "providers.locl: no roster entry's model starts with locl/; did you mean 'local'?",
    ),
]


@pytest.mark.parametrize(("name", "field", "value", "expected"), REFERENCES, ids=lambda v: str(v)[:24])
def test_every_cross_reference_is_checked_with_the_closest_name(
    tmp_path: Path, name: str, field: str, value: Any, expected: str
) -> None:
    params_copy(tmp_path, name, set_in(field, value))
    with pytest.raises(ParamsError) as info:
        check_chosen_params_dir("params", tmp_path, targets=[])  # the default target: every benchmark
    assert f"params/{name}" in str(info.value) and expected in str(info.value), str(info.value)


def test_a_typo_in_one_benchmark_stops_only_the_runs_that_need_it(tmp_path: Path) -> None:
    params_copy(tmp_path, "whoisspy.yaml", set_in("players", ["smollm2-315m"]))
    assert check_chosen_params_dir("params", tmp_path, targets=["elimination_all", "roster_all"]) != {}
    with pytest.raises(ParamsError, match="did you mean 'smollm2-135m'"):
        check_chosen_params_dir("params", tmp_path, targets=["results/whoisspy/metrics.json"])
    with pytest.raises(ParamsError, match="players\\[0\\]: 'smollm2-315m'"):
        check_chosen_params_dir("params", tmp_path, targets=["leaderboard_build"])


@pytest.mark.parametrize("directory", ["params", "params/paper"])
def test_the_shipped_params_directories_pass_every_check(directory: str) -> None:
    assert check_chosen_params_dir(directory, REPO, targets=[]) == {}


def params_models() -> list[type[BaseModel]]:
    from pipeline.core.models.roster import ModelsParams
    from pipeline.elimination.config import EliminationParams
    from pipeline.leaderboard.config import LeaderboardParams
    from pipeline.skate.config import SkateParams
    from pipeline.whoisspy.config import WhoIsSpyParams
    from pipeline.xent.config import XentParams

    return [ModelsParams, EliminationParams, SkateParams, WhoIsSpyParams, XentParams, LeaderboardParams]


def test_every_count_has_a_lower_bound() -> None:
    """An integer field (rounds, games, seats, repeats, passes...) accepts no value below its range."""
    unbounded, seen = [], set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, info in model.model_fields.items():
            parts = [info.annotation, *typing.get_args(info.annotation)]
            for part in parts:
                if isinstance(part, type) and issubclass(part, BaseModel):
                    walk(part, f"{prefix}{name}.")
            bounded = any(isinstance(m, (annotated_types.Ge, annotated_types.Gt)) for m in info.metadata)
            container = typing.get_origin(info.annotation) in (list, dict)  # checked by their own validators
            if int in parts and not container and not bounded and not name.endswith("seed"):
                unbounded.append(f"{prefix}{name}")

    for model in params_models():
        walk(model, f"{model.__name__}.")
    assert unbounded == []
