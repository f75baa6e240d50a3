#!/usr/bin/env bash
# Submit the generation array (one task per shard) and the merge step that runs once every
# submitted task has succeeded.
#
#   bash packaging/slurm/submit.sh N [TASKS]
#     N      the job's number of shards: array tasks 0 … N-1, task k makes shard k+1 of N
#     TASKS  the tasks to submit (default 0-(N-1), all of them): e.g. 2, or 1,3, to run failed or
#            cancelled tasks again; they resume, and the merge joins all N shard projects after them
#
#   MODEL=/models/sd15 SEEDS=4 bash packaging/slurm/submit.sh 8
#   bash packaging/slurm/submit.sh 8 5                         (task 5 again, then the merge)
#
# Settings of the tasks (MODEL, SEEDS, SHARDS_DIR, PROJECT, ...) come from the environment; see
# generate_array.sbatch. Extra sbatch options: ARRAY_SBATCH_ARGS for the array tasks,
# MERGE_SBATCH_ARGS for the merge (e.g. "--partition=gpu --account=mylab"); SBATCH_* variables
# (SBATCH_PARTITION, SBATCH_ACCOUNT, ...) reach both.
# When a task fails the merge does not run: Slurm cancels it (sacct: CANCELLED, reason Dependency).
set -euo pipefail
N="${1:?usage: submit.sh NUMBER_OF_SHARDS [TASKS]}"
if ! [[ "$N" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: the number of shards must be a whole number from 1, got '$N'" >&2
  exit 2
fi
TASKS="${2:-0-$((N - 1))}"
if ! [[ "$TASKS" =~ ^[0-9]+(-[0-9]+(:[1-9][0-9]*)?)?(,[0-9]+(-[0-9]+(:[1-9][0-9]*)?)?)*(%[1-9][0-9]*)?$ ]]; then
  echo "error: TASKS must be Slurm array indices such as 2, 1,3 or 0-7 (optionally %LIMIT), got '$TASKS'" >&2
  exit 2
fi
IFS=, read -ra parts <<< "${TASKS%%\%*}"
for part in "${parts[@]}"; do
  range="${part%%:*}"
  for n in ${range/-/ }; do
    if [ "$n" -ge "$N" ]; then
      echo "error: task $n is not one of the $N shards' tasks 0-$((N - 1))" >&2
      exit 2
    fi
  done
done
here="$(cd "$(dirname "$0")" && pwd)"
export WORKSTATION_ROOT="${WORKSTATION_ROOT:-$(cd "$here/../.." && pwd)}"
export SHARDS="$N"
# shellcheck disable=SC2086  # ARRAY_SBATCH_ARGS / MERGE_SBATCH_ARGS are word lists on purpose
array_id=$(sbatch --parsable --array="$TASKS" ${ARRAY_SBATCH_ARGS:-} "$here/generate_array.sbatch")
array_id="${array_id%%;*}"
# shellcheck disable=SC2086
merge_id=$(sbatch --parsable --dependency=afterok:"$array_id" --kill-on-invalid-dep=yes ${MERGE_SBATCH_ARGS:-} \
    "$here/merge.sbatch")
merge_id="${merge_id%%;*}"
echo "generation array job $array_id, task(s) $TASKS of 0-$((N - 1)) ($N shards); merge job $merge_id runs when they have all succeeded"
echo "follow them with: squeue -j $array_id,$merge_id    afterwards: sacct -j $array_id,$merge_id"
