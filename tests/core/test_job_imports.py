"""What a job process imports decides much of what it costs (every job is a process of its own):
the modules a rate job loads must not bring the plotting stack, pandera, torch or litellm, which
only a report, a failing table, the embedded model or an API call needs."""

from __future__ import annotations

import subprocess
import sys

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
