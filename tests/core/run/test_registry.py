"""The benchmark registry: dvc.yaml is what the declarations render, the Snakefile agrees with them,
and a benchmark that lives in its own folder (tests/example_benchmark/coinflip: a declaration and its
verbs, no command-line code, no rules) runs through the standard rules and reaches the leaderboard and
its site without a line changed elsewhere."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest
import yaml

from pipeline.core.run.dvc_yaml import difference, render
from pipeline.core.run.registry import Benchmark, RegistryError, benchmarks
from pipeline.core.run.verbs import VERBS, job_ids
from pipeline.core.run.workflow import copy_workflow

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "tests" / "example_benchmark"
SHARED_DEPS = {"Snakefile", "envs/pipeline.yaml", "pipeline/core", "params/models.yaml"}


def dvc_stages() -> dict[str, dict]:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]


def out_paths(entries: list) -> dict[str, dict]:
    return {
        next(iter(e)) if isinstance(e, dict) else e: (next(iter(e.values())) if isinstance(e, dict) else {})
        for e in entries
    }


def test_the_four_benchmarks_are_registered_in_run_order() -> None:
    assert [b.name for b in benchmarks()] == ["skate", "xent", "elimination", "whoisspy"]


@pytest.mark.parametrize("bench", benchmarks(), ids=lambda b: b.name)
def test_dvc_stage_matches_the_declaration(bench: Benchmark) -> None:
    stage = dvc_stages().get(bench.name)
    assert stage is not None, f"dvc.yaml has no stage {bench.name!r}"
    assert stage["cmd"] == f"python -m pipeline run {bench.final_rule}", "shared flags belong in profiles/default"
    deps = set(stage["deps"])
    assert SHARED_DEPS | {f"pipeline/{bench.name}", bench.params_file} <= deps
    outs = out_paths(stage["outs"])
    assert set(outs) == {f"{bench.results}/{o}" for o in bench.outputs}
    assert all(settings.get("persist") is True for settings in outs.values()), "Snakemake fills outs incrementally"
    # in git, and persist: the stage command removes them once the params check passed (dvc_yaml.py)
    assert out_paths(stage["metrics"]) == {bench.metrics: {"cache": False, "persist": True}}


def test_dvc_yaml_is_what_the_registry_renders() -> None:
    assert difference((REPO / "dvc.yaml").read_text(), render()) == ""


def test_dvc_yaml_check_names_the_difference(tmp_path: Path) -> None:
    edited = tmp_path / "dvc.yaml"
    edited.write_text(render().replace("      - results/xent/plots:\n", "      - results/xent/plot:\n"))
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "dvc-yaml", "--check", "--file", str(edited)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "-      - results/xent/plot:" in done.stderr, done.stderr
    assert "+      - results/xent/plots:" in done.stderr and "dvc-yaml --write" in done.stderr


def test_the_rules_write_what_the_declarations_say() -> None:
    """Every file a verb's rule writes lies in an output DVC keeps (the declaration refuses others)."""
    with pytest.raises(RegistryError, match="lies in none of the outputs"):
        Benchmark(name="loose", title="x", package="x", outputs=("games",), writes={"rate": ("table.parquet",)})
    for bench in benchmarks():
        assert bench.files("rate") and bench.files("report"), bench.name


def test_leaderboard_stage_depends_on_every_benchmark() -> None:
    deps = set(dvc_stages()["leaderboard"]["deps"])
    missing = [b.metrics for b in benchmarks() if b.metrics not in deps]
    assert not missing, f"dvc.yaml's leaderboard stage lacks {missing}"


def test_no_stage_repeats_the_profile_flags() -> None:
    for name, stage in dvc_stages().items():
        assert "--cores" not in stage["cmd"] and "--rerun" not in stage["cmd"], name


@functools.cache
def workflow_rules() -> frozenset[str]:
    """The rules of the repository's workflow, as `snakemake --list-rules` lists them (run once)."""
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--list-rules"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return frozenset(done.stdout.split())


def test_snakefile_defines_every_final_rule() -> None:
    rules = workflow_rules()
    assert {b.final_rule for b in benchmarks()} | {"roster_all", "leaderboard_all"} <= rules


def test_a_bad_declaration_is_refused_with_its_name() -> None:
    with pytest.raises(RegistryError, match="must match"):
        Benchmark(name="Bad Name", title="x", package="x", outputs=())
    with pytest.raises(RegistryError, match="inside results/escape"):
        Benchmark(name="escape", title="x", package="x", outputs=("../elsewhere",))


def test_the_standard_rules_refuse_a_declaration_they_cannot_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from coinflip.benchmark import BENCHMARK as COINFLIP
    from pipeline.core.run.rounds import AdaptiveSpec
    from pipeline.core.run.standard import rules_of

    def unread(*args: object) -> NoReturn:
        raise AssertionError("never read")

    unnamed = dataclasses.replace(COINFLIP, writes={**COINFLIP.writes, "play": ("games/{job_id}.json",)})
    with pytest.raises(
        RegistryError, match=r"writes\['play'\] 'games/\{job_id\}.json' must name the game by \{game_id\}"
    ):
        rules_of(unnamed, str(tmp_path), {})
    with pytest.raises(RegistryError, match="rounds target is coinflip_rounds"):
        dataclasses.replace(
            COINFLIP,
            outputs=(*COINFLIP.outputs, "rounds"),
            adaptive=AdaptiveSpec(unread, unread, unread, play_target="coinflip_play", play_rule="coinflip_play"),
        )


def example_project(root: Path) -> Path:
    """A copy of the workflow plus the example benchmark's params (`run` leaves the others' rules out)."""
    copy_workflow(REPO, root, ("Snakefile", "params", "pipeline", "profiles", "envs"))
    shutil.copy2(EXAMPLE / "coinflip.yaml", root / "params" / "coinflip.yaml")
    return root


def run(project: Path, *args: str, declared: str = "coinflip.benchmark", path: tuple[Path, ...] = ()) -> str:
    """Snakemake in `project` with only the benchmark `declared` (a module defining BENCHMARK) run:
    the four are left out (PIPELINE_LEAVE_OUT), registered still."""
    env = {
        **os.environ,
        "PIPELINE_BENCHMARKS": declared,
        "PIPELINE_LEAVE_OUT": ",".join(b.name for b in benchmarks()),
        "PYTHONPATH": os.pathsep.join([str(EXAMPLE), *map(str, path), str(project)]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.slow
def test_example_benchmark_runs_end_to_end_and_reaches_the_leaderboard(tmp_path: Path) -> None:
    project = example_project(tmp_path)
    run(project, "coinflip_all", "leaderboard_all")
    board = json.loads((project / "results/leaderboard/leaderboard.json").read_text())
    assert {"steady", "fair", "shaky"} <= set(board)
    assert board["steady"]["coinflip_trueskill_mu"] > board["shaky"]["coinflip_trueskill_mu"]
    assert board["steady"]["coinflip_wins"] > board["shaky"]["coinflip_wins"]
    site = project / "results/leaderboard/site/coinflip"
    pages = sorted((site / "games").glob("*.html"))
    assert len(pages) == 18  # 3 pairs x 6 games, one replay page each
    assert "wins.</p>" in pages[0].read_text()
    assert "Nothing to be done" in run(project, "coinflip_all", "leaderboard_all")

    # a new player adds its games only: the 18 played games stay done
    params = yaml.safe_load((project / "params/coinflip.yaml").read_text())
    params["players"]["lucky"] = 0.6
    (project / "params/coinflip.yaml").write_text(yaml.safe_dump(params))
    plan = run(project, "-n", "coinflip_all")
    assert ["coinflip_play", "18"] in [line.split() for line in plan.splitlines()], plan[-2000:]


SHARDS_AND_ROUNDS = """\
from dataclasses import replace

from coinflip.benchmark import BENCHMARK as PLAIN
from pipeline.core.run.rounds import AdaptiveSpec
from pipeline.core.run.standard import Rules


def unread(*args):
    raise AssertionError("no round is read while the rules are built")


BENCHMARK = replace(
    PLAIN,
    outputs=(*PLAIN.outputs, "rounds"),
    rules=Rules(shards=True),
    adaptive=AdaptiveSpec(unread, unread, unread, play_target="coinflip_rounds", play_rule="coinflip_play"),
)
"""


def job_counts(dry_run: str) -> dict[str, int]:
    """Snakemake's "Job stats" table of a dry run: rule -> jobs."""
    table = dry_run.split("Job stats:")[1].split("total")[0]
    return {row.split()[0]: int(row.split()[1]) for row in table.splitlines()[3:] if row.strip()}


def test_a_benchmark_declared_with_shards_and_rounds_gets_those_rules_from_the_core(tmp_path: Path) -> None:
    project = example_project(tmp_path / "project")
    (tmp_path / "declared" / "coinflip_rounds.py").parent.mkdir()
    (tmp_path / "declared" / "coinflip_rounds.py").write_text(SHARDS_AND_ROUNDS)

    def run_declared(*args: str) -> str:
        return run(project, *args, declared="coinflip_rounds", path=(tmp_path / "declared",))

    plain = set(run(project, "--list-rules").split())
    assert {"coinflip_play", "coinflip_rate", "coinflip_report", "coinflip_all"} <= plain
    assert not {"coinflip_shard", "coinflip_rounds"} & plain  # not declared: not made
    rules = set(run_declared("--list-rules").split())
    assert {"coinflip_play", "coinflip_shard", "coinflip_rate", "coinflip_rounds", "coinflip_report"} <= rules

    # the rounds target plays every scheduled game, rates nothing; coins seat no model: bot shards
    # of parallel.games_per_job games each, whose commands name every game once
    models = yaml.safe_load((project / "params/models.yaml").read_text())
    models["parallel"]["games_per_job"] = 4
    (project / "params/models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
    plan = run_declared("-n", "-p", "coinflip_rounds")
    assert job_counts(plan) == {"coinflip_rounds": 1, "coinflip_shard": 5}, plan[-2000:]  # 18 games, 4 a job
    command = "python -m pipeline coinflip play "
    played = [
        game
        for line in plan.splitlines()
        if command in line and "--marker results/coinflip/shards/" in line
        for game in line.split(command)[1].split()[0].split(",")
    ]
    assert len(played) == len(set(played)) == 18, plan[-2000:]
    assert "coinflip_rate" in job_counts(run_declared("-n", "coinflip_all"))


def benchmark_verbs(name: str) -> dict[str, argparse.ArgumentParser]:
    from pipeline.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = commands.choices[name]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("bench", benchmarks(), ids=lambda b: b.name)
def test_every_benchmark_answers_the_shared_verbs_with_the_shared_arguments(bench: Benchmark) -> None:
    verbs = benchmark_verbs(bench.name)
    assert set(VERBS) <= set(verbs), f"{bench.name} lacks {set(VERBS) - set(verbs)}"
    for verb in VERBS:
        args = verbs[verb].parse_args(["0123456789abcdef"] if verb == "play" else [])
        assert args.params == bench.params_file and args.models == "params/models.yaml", verb
        assert args.out.startswith(bench.results), (verb, args.out)
    play = verbs["play"].parse_args(["a,b", "c", "a", "--marker", "m.json"])
    assert job_ids(play) == ["a", "b", "c"] and play.marker == "m.json"
    assert verbs["schedule"].parse_args(["--json"]).json is True


def test_rules_are_named_after_the_verbs() -> None:
    rules = workflow_rules()
    for bench in benchmarks():
        assert {f"{bench.name}_rate", f"{bench.name}_report", bench.final_rule} <= rules, bench.name
        assert all(
            r.startswith(("roster_", "publish", "leaderboard_", "all"))
            or any(r.startswith(f"{b.name}_") for b in benchmarks())
            for r in rules
        )


def test_play_names_the_schedule_command_for_an_unknown_job(capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.cli import main

    for bench in benchmarks():
        assert main([bench.name, "play", "0123456789abcdef"]) == 2, bench.name
        err = capsys.readouterr().err
        assert "0123456789abcdef" in err and f"python -m pipeline {bench.name} schedule" in err, (bench.name, err)


def test_each_benchmark_estimates_its_own_rules_for_the_run_plan() -> None:
    rules = workflow_rules()
    for bench in benchmarks():
        table = bench.load_estimators()
        # a key ending in `*` names the rules it begins (made per game): at least one must exist
        exact = {k for k in table if not k.endswith("*")}
        assert table and exact <= rules, (bench.name, exact - rules)
        for prefix in (k[:-1] for k in table if k.endswith("*")):
            assert any(rule.startswith(prefix) for rule in rules), (bench.name, prefix)
        assert f"{bench.name}_play" in table or bench.name == "skate", bench.name  # SKATE: generate, answer
    wrong = Benchmark(
        name="other", title="x", package="pipeline.whoisspy", outputs=(), estimators="pipeline.xent.estimators"
    )
    with pytest.raises(RegistryError, match="another benchmark"):
        wrong.load_estimators()


def test_declared_plots_are_the_plots_the_report_draws() -> None:
    # benchmark.py lists Who is Spy's plots by name so that loading the registry never imports altair
    from pipeline.whoisspy import benchmark as declared
    from pipeline.whoisspy import plots

    assert declared.PLOTS == plots.PLOTS
