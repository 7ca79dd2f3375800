"""What a job process imports decides much of what it costs (every job is a process of its own):
the modules a rate job loads must not bring the plotting stack, pandera, torch or litellm, which
only a report, a failing table, the embedded model or an API call needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("altair", "pandas", "pandera", "torch", "transformers", "litellm")
RATE_PATHS = (
    "pipeline.whoisspy.report",
    "pipeline.skate.report",
    "pipeline.xent.report",
    "pipeline.elimination.ratings",
    "pipeline.cli",
)


def test_the_rate_jobs_modules_load_nothing_heavy() -> None:
    program = (
        "import importlib, sys\n"
        f"for name in {RATE_PATHS!r}: importlib.import_module(name)\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def _answers_in_a_fresh_process(cache: str) -> tuple[str, str]:
    program = (
        "import sys\n"
        "from pipeline.core.models import RosterEntry, supports_top_logprobs\n"
        "models = ('openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-20241022', 'nosuchprovider/x')\n"
        "print([supports_top_logprobs(RosterEntry(name=m.split('/')[1], model=m)) for m in models])\n"
        "print('litellm' in sys.modules)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, env=env)
    answers, imported = done.stdout.strip().rsplit("\n", 1)
    return answers, imported


@pytest.mark.slow  # imports litellm in a process of its own (about 4 CPU-s)
def test_the_job_graph_asks_litellm_once_per_version(tmp_path: Path) -> None:
    """Building the workflow's job graph asks litellm which providers return log-probabilities
    (SKATE's answer mode); the answer is kept per litellm version, so later Snakemake runs and
    jobs get the same answer without importing litellm (3.5 CPU-s each)."""
    first, first_imported = _answers_in_a_fresh_process(str(tmp_path))
    assert first == "[True, False, None]"
    assert first_imported == "True"
    again, again_imported = _answers_in_a_fresh_process(str(tmp_path))
    assert again == first
    assert again_imported == "False"


def test_numpy_gives_the_c_librarys_exp_log_and_power_on_any_cpu() -> None:
    """numpy's AVX-512 exp, log and power differ from the C library's in the last bit; the package
    turns them off, so a table computed on an AVX-512 machine has the bytes an AVX2 machine gives
    (and the numpy rating path the compiled kernel's)."""
    program = (
        "import pipeline, math, numpy as np\n"
        "x = np.random.default_rng(0).normal(size=50_000) * 5\n"
        "s = np.abs(x) + 0.1\n"
        "print(sum([(np.exp(x) != [math.exp(v) for v in x]).sum(), (np.log(s) != [math.log(v) for v in s]).sum(),\n"
        "           (s ** -2.0 != [v ** -2.0 for v in s]).sum()]))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"
