"""Snakemake's rerun reason names the setting that changed (issue 45): a rule's settings go to its
`params:` one field a value (`setting_items`), so "Params have changed" shows the field before and
now instead of the whole settings dict, twice; a changed field still reruns the job."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from pipeline.core.run.plan import parse_dry_run
from pipeline.testing.project import RERUN_TRIGGERS, run_workflow, snakemake_command
from tests.conftest import write_roster

BOTS = [{"name": "heuristic-bot", "bot": "heuristic"}, {"name": "random-bot", "bot": "random"}]


def test_setting_items_are_one_value_a_field() -> None:
    from pipeline.core.run.workflow import setting_items

    settings = {
        "seed": 0,
        "players": ["a", "b"],
        "ranking": {"method": "trueskill", "passes": 8, "empty": {}},
        "roster": [{"name": "gpt", "sampling": {"temperature": 0.7}}, {"name": "bot", "bot": "random"}],
    }
    items = setting_items(settings)
    assert [field for field, _ in items] == sorted(field for field, _ in items)
    assert ("ranking.passes", 8) in items and ("roster[gpt].sampling.temperature", 0.7) in items
    assert ("players", ("a", "b")) in items and ("ranking.empty", {}) in items
    changed = {**settings, "ranking": {**settings["ranking"], "passes": 9}}
    # Snakemake compares the params' reprs as sets: only the changed field differs
    assert {repr(i) for i in setting_items(changed)} ^ {repr(i) for i in items} == {
        "('ranking.passes', 8)",
        "('ranking.passes', 9)",
    }
    # a string never reaches Snakemake as a bare string (its `{...}` would be taken for a wildcard)
    assert all(isinstance(item, tuple) for item in setting_items({"prompt": "say {word}"}))


@pytest.mark.slow  # a real Who is Spy run of two bot games, then Snakemake's dry runs
def test_the_rerun_reason_names_the_changed_field_and_the_job_still_reruns(project: Path) -> None:
    write_roster(project, BOTS)
    params = {
        "players": ["heuristic-bot"],
        "fill": ["heuristic-bot", "random-bot"],
        "games_per_role": 1,
        "variants": ["baseline"],
        "rating": {"passes": 2, "bootstrap_resamples": 5},
    }
    path = project / "params/whoisspy.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    cwd = os.getcwd()
    try:
        run_workflow(project, {"whoisspy_all"})
    finally:
        os.chdir(cwd)

    def planned() -> dict[str, str]:
        done = subprocess.run(
            # the project's triggers (profiles/default, which a work directory does not hold): never mtime
            snakemake_command(project, "whoisspy_all", "-n", "--cores", "1", "--rerun-triggers", *RERUN_TRIGGERS),
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return {job.rule: job.reason for job in parse_dry_run(done.stdout + "\n" + done.stderr)}

    assert "whoisspy_rate" not in planned()  # the same settings: nothing to rerun
    params["rating"]["passes"] = 3
    written = path.stat()
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    # the file's time as before (a checkout can leave it so): Snakemake 9 would otherwise give the
    # newer input file as the reason and not look at the params (a rule without the file as input,
    # a strategy game of SKATE's, meets a roster change this way)
    os.utime(path, ns=(written.st_atime_ns, written.st_mtime_ns))
    reasons = planned()
    assert "whoisspy_play" not in reasons and "whoisspy_shard" not in reasons  # the games stand
    reason = reasons["whoisspy_rate"]
    assert "Params have changed" in reason, reason
    assert "('rating.passes', 2)" in reason and "('rating.passes', 3)" in reason, reason
    assert "bootstrap_resamples" not in reason and "rank_variant" not in reason, reason  # not the whole dict
