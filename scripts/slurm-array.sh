#!/bin/bash
# dawnrun as a Slurm job array: one array task per seed, the array index being the seed,
# each task writing its own results database (SQLite over a network file system is not
# safe for concurrent writers), merged into one at the end.
#
#   sbatch --array=0-4 scripts/slurm-array.sh CONFIG [dawnrun run flags...]
#       task mode: runs `dawnrun run CONFIG --seed-list $SLURM_ARRAY_TASK_ID
#       --db $OUT/seed-$SLURM_ARRAY_TASK_ID.db [flags...]`
#   scripts/slurm-array.sh merge DIR [OUT.db]
#       after the array (by hand, or as a job: sbatch --dependency=afterany:JOBID
#       scripts/slurm-array.sh merge results/slurm-JOBID): merges DIR/seed-*.db into
#       OUT.db (default DIR/merged.db) with `dawnrun merge` and prints the report.
#
# Time limits and requeues: Slurm sends SIGTERM before killing a task (at the time limit,
# on preemption or scancel), and --signal=B:TERM@120 below sends it 120 s early. The
# script execs dawnrun, so dawnrun itself receives it: it stops at the next training step,
# marks the run interrupted, keeps its checkpoint and exits 143, well within KillWait.
# Resubmitting the same array (or Slurm requeueing a task) reruns each task: a task whose
# seed is done finds nothing to do and exits 0; an interrupted one resumes from its last
# checkpoint.
#
# Environment:
#   DAWNRUN      the dawnrun executable (default: dawnrun on PATH, else
#                $SLURM_SUBMIT_DIR/build/dawnrun)
#   DAWNRUN_OUT  the directory of the per-task databases (default
#                results/slurm-$SLURM_ARRAY_JOB_ID); their checkpoints go beside them
#
# The #SBATCH lines are defaults; options given to sbatch override them.
#SBATCH --job-name=dawnrun
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
#SBATCH --signal=B:TERM@120
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=slurm-%A_%a.out
set -u

die() {
    printf 'slurm-array: %s\n' "$*" >&2
    exit 2
}

find_dawnrun() {
    if [ -n "${DAWNRUN:-}" ]; then
        printf '%s\n' "$DAWNRUN"
    elif command -v dawnrun >/dev/null 2>&1; then
        command -v dawnrun
    elif [ -x "${SLURM_SUBMIT_DIR:-.}/build/dawnrun" ]; then
        printf '%s\n' "${SLURM_SUBMIT_DIR:-.}/build/dawnrun"
    else
        die "dawnrun not found: put it on PATH or set DAWNRUN=/path/to/dawnrun"
    fi
}

merge() {
    if [ $# -lt 1 ] || [ $# -gt 2 ]; then
        die "usage: slurm-array.sh merge DIR [OUT.db]"
    fi
    dir=$1
    out=${2:-$dir/merged.db}
    dawnrun=$(find_dawnrun)
    set -- "$dir"/seed-*.db
    [ -e "$1" ] || die "no seed-*.db in $dir"
    "$dawnrun" merge "$out" "$@" || exit $?
    "$dawnrun" report --db "$out"
}

task() {
    [ $# -ge 1 ] || die "usage: sbatch --array=SEEDS slurm-array.sh CONFIG [dawnrun run flags...]"
    id=${SLURM_ARRAY_TASK_ID:-}
    case $id in
        '' | *[!0-9]*) die "SLURM_ARRAY_TASK_ID is '$id': submit with sbatch --array=0-4 (the indices are the seeds)" ;;
    esac
    for arg in "$@"; do
        case $arg in
            --seeds | --seeds=* | --seed-list | --seed-list=* | --db | --db=*)
                die "$arg: the array index is the seed and each task has its own database" ;;
        esac
    done
    out=${DAWNRUN_OUT:-results/slurm-${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-local}}}
    mkdir -p "$out" || die "cannot create $out"
    dawnrun=$(find_dawnrun)
    printf 'slurm-array: task %s (job %s) on %s: seed %s into %s/seed-%s.db\n' "$id" \
        "${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:--}}" "$(hostname)" "$id" "$out" "$id"
    # exec: Slurm's SIGTERM goes to dawnrun itself, and its exit code is the task's
    exec "$dawnrun" run "$@" --seed-list "$id" --db "$out/seed-$id.db"
}

if [ "${1:-}" = merge ]; then
    shift
    merge "$@"
else
    task "$@"
fi
