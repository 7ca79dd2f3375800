#!/usr/bin/env bash
# Status command of profiles/cluster-generic: success / failed / running for a job id printed by
# local-submit.sh (its exit status is written, atomically, when the job script ends).
set -euo pipefail
state="${PIPELINE_LOCAL_CLUSTER_DIR:-.snakemake/local-cluster}"
exit_file="$state/$1.exit"
if [ -f "$exit_file" ]; then
    if [ "$(cat "$exit_file")" = "0" ]; then echo success; else echo failed; fi
else
    echo running
fi
