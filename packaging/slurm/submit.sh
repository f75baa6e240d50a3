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
# decimal VALUE MIN MAX: VALUE is a whole number from MIN to MAX written in decimal (digits only,
# no sign, no leading zero, at most 7 digits). Every number is checked so before any arithmetic:
# bash arithmetic evaluates anything else as an expression (HOME[$(cmd)] runs cmd), reads 010 as
# octal, refuses 08 and wraps numbers past 2^63 (18446744073709551617 is 1).
decimal() {
  case "$1" in
    '' | *[!0123456789]* | 0?*) return 1 ;;
  esac
  [ "${#1}" -le 7 ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}
MAX_SHARDS=100000   # the most shards a job may have (as workstation/jobs/shards.py: MAX_SHARDS)
# shown VALUE: the first 40 characters of a refused value, each unprintable one as ?, for one line
shown() {
  local s="${1:0:40}"
  printf '%s' "${s//[^[:print:]]/?}"
}
if [ $# -lt 1 ]; then
  echo "error: usage: submit.sh NUMBER_OF_SHARDS [TASKS]" >&2
  exit 2
fi
N="$1"
if ! decimal "$N" 1 "$MAX_SHARDS"; then
  echo "error: the number of shards must be a whole number from 1 to $MAX_SHARDS, written in decimal (digits only, no sign or leading zero), got '$(shown "$N")'" >&2
  exit 2
fi
TASKS="${2:-0-$((N - 1))}"
if ! [[ "$TASKS" =~ ^[0123456789]+(-[0123456789]+(:[0123456789]+)?)?(,[0123456789]+(-[0123456789]+(:[0123456789]+)?)?)*(%[0123456789]+)?$ ]]; then
  echo "error: TASKS must be Slurm array indices such as 2, 1,3 or 0-7 (optionally :STEP and %LIMIT), got '$(shown "$TASKS")'" >&2
  exit 2
fi
last=$((N - 1))
if [[ "$TASKS" == *%* ]] && ! decimal "${TASKS##*%}" 1 "$N"; then
  echo "error: the %LIMIT of TASKS must be a whole number from 1 to $N (no leading zero), got '$(shown "${TASKS##*%}")'" >&2
  exit 2
fi
IFS=, read -ra parts <<< "${TASKS%%\%*}"
for part in "${parts[@]}"; do
  range="${part%%:*}"
  if [[ "$part" == *:* ]] && ! decimal "${part#*:}" 1 "$N"; then
    echo "error: the step of '$(shown "$part")' must be a whole number from 1 to $N (no leading zero)" >&2
    exit 2
  fi
  lo="${range%%-*}"
  hi="${range#*-}"
  for n in "$lo" "$hi"; do
    if ! decimal "$n" 0 "$MAX_SHARDS"; then
      echo "error: task '$(shown "$n")' of TASKS is not a task number written in decimal (digits only, no leading zero)" >&2
      exit 2
    fi
    if [ "$n" -gt "$last" ]; then
      echo "error: task $n is not one of the $N shards' tasks 0-$last" >&2
      exit 2
    fi
  done
  if [ "$lo" -gt "$hi" ]; then
    echo "error: the task range '$(shown "$range")' of TASKS runs backwards" >&2
    exit 2
  fi
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
