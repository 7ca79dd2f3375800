# The whole pipeline: the roster check, every registered benchmark (pipeline/core/registry.py finds
# each pipeline/<name>/benchmark.py and its rules.smk), then the leaderboard that combines them. Each
# part adds its final outputs to ALL_TARGETS, which the default target `all` builds.
#   snakemake --profile profiles/default   (shared flags: cores, rerun triggers, rerun-incomplete)
import os

from pipeline.core.registry import benchmarks as registered_benchmarks
from pipeline.core.workflow import interpreter_on_path

# rules call `python -m pipeline ...`: the interpreter running Snakemake (the project's venv),
# whatever `python` on PATH was; with --sdm conda, each job's conda environment instead
interpreter_on_path()
PIPELINE_ENV = os.path.join(workflow.basedir, "envs", "pipeline.yaml")  # every rule's `conda:`
ALL_TARGETS = []
BENCHMARKS = registered_benchmarks()


include: "pipeline/roster/rules.smk"


for _benchmark in BENCHMARKS:
    if _benchmark.rules.exists():  # a copy of the project may leave a benchmark's rules out

        include: str(_benchmark.rules)


include: "pipeline/leaderboard/rules.smk"


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
