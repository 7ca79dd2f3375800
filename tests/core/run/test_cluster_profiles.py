"""The SLURM profile is valid for the installed executor plugin (a dry run plans the demo's jobs);
the cluster-generic profile is exercised for real in test_reliability_demo.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.core.run.test_reliability_support import make_project, planned_jobs

pytestmark = pytest.mark.slow


def test_the_slurm_profile_plans_the_demo(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    planned = planned_jobs(project, "--profile", "profiles/slurm", "whoisspy_all")
    assert planned == {"whoisspy_play": 2, "whoisspy_rate": 1, "whoisspy_report": 1, "whoisspy_all": 1}
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert profile["executor"] == "slurm" and "--rerun-incomplete" not in profile
    # rules that need a GPU get one GPU (gres/gpu) on the GPU partition
    assert profile["set-resources"]["xent_rescore"]["gpu"] == 1
    assert profile["rerun-triggers"] == ["code", "input", "params", "software-env"]
