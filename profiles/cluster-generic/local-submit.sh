#!/usr/bin/env bash
# Submit command of profiles/cluster-generic: start the job script as its own background process
# (a stand-in for qsub/sbatch on one machine) and print a job id for local-status.sh.
# Snakemake passes the job script as the last argument.
set -euo pipefail
jobscript="${!#}"
state="${PIPELINE_LOCAL_CLUSTER_DIR:-.snakemake/local-cluster}"
mkdir -p "$state"
id="job-$(date +%s%N)-$$"
# setsid: the job outlives neither more nor less than a real cluster job would (no shared group)
setsid bash -c 'bash "$1" > "$2.out" 2>&1; echo $? > "$2.exit.tmp" && mv "$2.exit.tmp" "$2.exit"' \
    _ "$jobscript" "$state/$id" < /dev/null > /dev/null 2>&1 &
echo "$id"
