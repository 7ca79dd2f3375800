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


#: what `pipeline.cpu.pin_cpu_kernels` sets (ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE where the CPU has AVX2)
CPU_VARIABLES = ("NPY_DISABLE_CPU_FEATURES", "ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE")


def _fresh(program: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in CPU_VARIABLES}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, env=env)
    return done.stdout.strip().splitlines()


def test_a_command_pins_the_cpu_kernels_before_numpy_loads_and_importing_the_package_does_not() -> None:
    """numpy's AVX-512 exp, log and power differ from the C library's in the last bit, OpenBLAS's and
    torch's kernels by CPU: the command line pins them before its parser loads numpy, so a table
    computed on an AVX-512 machine has the bytes an AVX2 machine gives. A program that only imports
    the package keeps its libraries' own choice."""
    program = (
        "import os, sys, math\n"
        f"names = {CPU_VARIABLES!r}\n"
        "import pipeline, pipeline.cli\n"
        "print([n for n in names if n in os.environ], 'numpy' in sys.modules or 'torch' in sys.modules)\n"
        "import contextlib, io\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    pipeline.cli.main(['--help'])\n"
        "import numpy as np\n"
        "print(sorted(n for n in names if n in os.environ))\n"
        "x = np.random.default_rng(0).normal(size=50_000) * 5\n"
        "s = np.abs(x) + 0.1\n"
        "print(sum([(np.exp(x) != [math.exp(v) for v in x]).sum(), (np.log(s) != [math.log(v) for v in s]).sum(),\n"
        "           (s ** -2.0 != [v ** -2.0 for v in s]).sum()]))\n"
    )
    before, pinned, differing = _fresh(program)
    assert before == "[] False"  # imported, nothing pinned, and nothing loaded that the pins come too late for
    from pipeline.cpu import cpu_flags

    avx2 = {"avx2", "fma"} <= cpu_flags()
    assert pinned == str(sorted(CPU_VARIABLES if avx2 else CPU_VARIABLES[:1]))
    assert differing == "0"
