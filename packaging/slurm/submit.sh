#!/usr/bin/env bash
# Submit the generation array (N tasks, one per shard) and the merge step that waits for all of it.
#   bash packaging/slurm/submit.sh N        e.g. MODEL=/models/sd15 SEEDS=4 bash packaging/slurm/submit.sh 8
set -euo pipefail
N="${1:?usage: submit.sh NUMBER_OF_SHARDS}"
here="$(cd "$(dirname "$0")" && pwd)"
export WORKSTATION_ROOT="${WORKSTATION_ROOT:-$(cd "$here/../.." && pwd)}"
array_id=$(sbatch --parsable --array=0-$((N - 1)) "$here/generate_array.sbatch")
merge_id=$(sbatch --parsable --dependency=afterok:"${array_id%%;*}" "$here/merge.sbatch")
echo "generation array job $array_id ($N shards); merge job $merge_id runs when every shard is done"
