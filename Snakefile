# The whole pipeline: each benchmark's rules come in from pipeline/<room>/rules.smk.
# Run: snakemake --cores 2 --rerun-triggers code input params software-env
import sys

# rules call the package with the interpreter running Snakemake (the project's venv), whatever
# `python` on PATH is
PYTHON = sys.executable


include: "pipeline/roster/rules.smk"


rule all:
    default_target: True
    input:
        rules.roster_all.input,
