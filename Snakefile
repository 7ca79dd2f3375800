# The whole pipeline. Each room's rules come in from pipeline/<room>/rules.smk; each room adds its
# final outputs to ALL_TARGETS, which the default target `all` builds.
#   snakemake --cores 2 --rerun-triggers code input params software-env
import sys
from pathlib import Path

# rules call the package with the interpreter running Snakemake (the project's venv), whatever
# `python` on PATH is
PYTHON = sys.executable
ALL_TARGETS = []

# order: the roster check first, then the benchmarks, then what combines them
ROOMS = ["roster", "skate", "xent", "elimination", "whoisspy", "leaderboard"]
for room in ROOMS:
    if Path(f"pipeline/{room}/rules.smk").exists():

        include: f"pipeline/{room}/rules.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,


# The run plan (pipeline/plan): before the first job, what this run's jobs will call and cost;
# a plan over gateway.budget_usd stops the run here, before any model request. After a
# successful run, the plan is set against what was spent (results/plan/compare.json).
onstart:
    from pipeline.plan.run import before_run

    before_run(workflow)


onsuccess:
    from pipeline.plan.run import after_run

    after_run()
