#!/usr/bin/env bash
# One shard of a kiln tune, for a scheduler's job array (docs/distributed-tuning.md).
#   tools/tune-shard.sh OUT_DIR MODEL TUNE-ARGS...
# The shard comes from the scheduler: Slurm (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, with
# --array=1-N or 0-(N-1): SLURM_ARRAY_TASK_MIN says which), a Kubernetes Indexed Job
# (JOB_COMPLETION_INDEX from 0, SHARDS set in the job's env), or SHARD/SHARDS (1-based) directly.
# Writes OUT_DIR/shard-K.db (this shard's measurements) and OUT_DIR/shard-K.log.
set -euo pipefail
out=$1 model=$2
shift 2
kiln=${KILN:-kiln}
if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
  k=$(( SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-1} + 1 )) n=${SLURM_ARRAY_TASK_COUNT:?}
elif [ -n "${JOB_COMPLETION_INDEX:-}" ]; then
  k=$(( JOB_COMPLETION_INDEX + 1 )) n=${SHARDS:?set SHARDS to the number of completions of the Indexed Job}
else
  k=${SHARD:?set SHARD and SHARDS (or run under Slurm or a Kubernetes Indexed Job)} n=${SHARDS:?}
fi
mkdir -p "$out"
exec "$kiln" tune "$model" --shard "$k/$n" --cache "$out/shard-$k.db" "$@" > "$out/shard-$k.log" 2>&1
