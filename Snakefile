# The whole pipeline: the roster check, every registered benchmark (pipeline/core/run/registry.py finds
# each pipeline/<name>/benchmark.py: the standard rules built from its declaration, after the rules of
# its own stages where it has some), then the leaderboard that combines them. Each part adds its final
# outputs to ALL_TARGETS, which the default target `all` builds. Parsing writes nothing and prints nothing.
#   snakemake --profile profiles/default   (shared flags: cores, rerun triggers, rerun-incomplete)
#   snakemake --config params=params/paper (every params file from another directory: docs/paper-scale.md)
import os

from pipeline.core.artifacts.progress import announce_games
from pipeline.core.run.registry import STANDARD_RULES
from pipeline.core.run.registry import benchmarks as registered_benchmarks
from pipeline.core.run.standard import JOB_ID_PATTERN, standard_rules
from pipeline.core.run.workflow import (
    check_chosen_params_dir,
    freeze_sightings,
    interpreter_on_path,
    params_dir,
    params_guard,
)

# rules call `python -m pipeline ...`: the interpreter running Snakemake (the project's venv),
# whatever `python` on PATH was; with --sdm conda, each job's conda environment instead
interpreter_on_path()
PIPELINE_ENV = os.path.join(workflow.basedir, "envs", "pipeline.yaml")  # every rule's `conda:`
ALL_TARGETS = []
BENCHMARKS = registered_benchmarks()
# Every rule reads its params from one directory: params/ (the demo), or the one `--config params=DIR`
# names (`python -m pipeline run|plan --params DIR` passes it; else $PIPELINE_PARAMS), e.g. params/paper.
# Results still go under results/: another directory's run replaces them, as any params change does.
PARAMS_DIR = params_dir(config.get("params"))
# Every params file is loaded here: one that does not validate stops the parse, naming its file, field,
# value and fix. Names that resolve to nothing (a player not in the roster) stop the targets of their
# benchmark while building the DAG (the rate and rounds rules' params_guard); the other benchmarks still run.
PARAMS_PROBLEMS = check_chosen_params_dir(PARAMS_DIR, benchmarks=BENCHMARKS)
# models seen reasoning in their replies, as they stand now, for every job of this run (none changes mid-run)
freeze_sightings(PARAMS_DIR)
# every benchmark this copy runs, its schedule read once: its standard rules' jobs and settings, and
# the state its own rules file reads (BENCHMARK_RULES[name].state)
BENCHMARK_RULES = standard_rules(BENCHMARKS, PARAMS_DIR, PARAMS_PROBLEMS)


include: "pipeline/roster/rules.smk"


# the stages of a benchmark's own (SKATE's questions and answers, Xent's maps, play and rescore)
for _benchmark_rules in BENCHMARK_RULES.values():
    if _benchmark_rules.bench.extra_rules is not None:

        include: str(_benchmark_rules.bench.extra_rules)


# every benchmark's play, shard, rate, rounds, report and all rules, from its declaration
include: str(STANDARD_RULES)
include: "pipeline/leaderboard/rules.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,


# The run plan (pipeline/core/run): before the first job, the scheduled games for the progress line
# (pipeline.core.artifacts.progress), and what this run's jobs will call and cost;
# a plan over gateway.budget_usd stops the run here, before any model request. After a
# successful run, the plan is set against what was spent (results/plan/compare.json), and what the
# run's benchmarks ran with is recorded (results/plan/ran_with.json: the next plan's "new job: ...").
onstart:
    from pipeline.core.run.plan_guard import before_run

    before_run(workflow, params_dir=PARAMS_DIR)


onsuccess:
    from pipeline.core.run.plan_guard import after_run

    after_run(workflow=workflow, params_dir=PARAMS_DIR)
