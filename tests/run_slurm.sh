#!/bin/sh
# scripts/slurm-array.sh without Slurm (SLURM_ARRAY_TASK_ID set by hand): each array task
# runs its seed into its own database; a task run again after its seed is done (a
# requeue) exits 0 without running anything; SIGTERM (Slurm's warning before the time
# limit) leaves the run interrupted with its checkpoint and exits 143, and the requeued
# task resumes it; `merge` combines the task databases, idempotently.
. "$(dirname "$0")/run_lib.sh"

SCRIPT=$SRC/scripts/slurm-array.sh
ARGS="$TINY --engine cpu --threads 1 --set train.epochs=3 --set data.train_subset=1280
      --set data.test_subset=500"
out=$TMP/out
export DAWNRUN="$DR" SLURM_ARRAY_JOB_ID=77

# task 0, with the default output directory (results/slurm-JOB under the current one)
(cd "$TMP" && SLURM_ARRAY_TASK_ID=0 bash "$SCRIPT" $ARGS) >"$TMP/t0.out" 2>&1
expect_eq "$?" 0 "exit code of task 0"
expect_eq "$(q "$TMP/results/slurm-77/seed-0.db" "SELECT seed, status FROM runs")" "0|done" \
    "task 0's database holds seed 0"

# task 1, twice: the second time its seed is done
SLURM_ARRAY_TASK_ID=1 DAWNRUN_OUT=$out bash "$SCRIPT" $ARGS >"$TMP/t1.out" 2>&1
expect_eq "$?" 0 "exit code of task 1"
SLURM_ARRAY_TASK_ID=1 DAWNRUN_OUT=$out bash "$SCRIPT" $ARGS >"$TMP/t1b.out" 2>&1
expect_eq "$?" 0 "exit code of task 1 requeued after its seed is done"
expect_grep '1 run in .*seed-1\.db: 1 finished, 0 failed, 0 to run' "$TMP/t1b.out" \
    "the requeued task finds its seed done"
expect_eq "$(q "$out/seed-1.db" "SELECT seed, status, attempt FROM runs")" "1|done|1" \
    "task 1's run, run once"

# task 2 gets SIGTERM, then is requeued
SLURM_ARRAY_TASK_ID=2 DAWNRUN_OUT=$out bash "$SCRIPT" $ARGS >"$TMP/t2.out" 2>&1 &
pid=$!
bg_pids="$bg_pids $pid"
wait_for "$out/seed-2.db" "SELECT count(*) FROM epochs" 1 || fail "task 2 recorded no epoch"
kill -TERM $pid
wait $pid
rc=$?
cat "$TMP/t2.out"
expect_eq "$rc" 143 "exit code of task 2 after SIGTERM"
expect_eq "$(q "$out/seed-2.db" "SELECT status FROM runs")" "interrupted" "task 2's run"
expect_eq "$(ls "$out/seed-2.db-checkpoints" | wc -l)" "1" "task 2's checkpoint is kept"
SLURM_ARRAY_TASK_ID=2 DAWNRUN_OUT=$out bash "$SCRIPT" $ARGS >"$TMP/t2b.out" 2>&1
expect_eq "$?" 0 "exit code of task 2 requeued"
expect_grep '^resuming after epoch [12] from ' "$TMP/t2b.out" "task 2 resumes"
expect_eq "$(q "$out/seed-2.db" "SELECT status, attempt FROM runs")" "done|2" "task 2's run at the end"

# what the script refuses
SLURM_ARRAY_TASK_ID=3 DAWNRUN_OUT=$out bash "$SCRIPT" $ARGS --seeds 4 >/dev/null 2>&1
expect_eq "$?" 2 "--seeds in an array task"
env -u SLURM_ARRAY_TASK_ID DAWNRUN_OUT=$out bash "$SCRIPT" $ARGS >"$TMP/noid.out" 2>&1
expect_eq "$?" 2 "no SLURM_ARRAY_TASK_ID"
expect_grep 'sbatch --array' "$TMP/noid.out" "how to submit"

# merge the task databases, twice
bash "$SCRIPT" merge "$out" >"$TMP/merge.out" 2>&1
rc=$?
cat "$TMP/merge.out"
expect_eq "$rc" 0 "exit code of merge"
expect_eq "$(q "$out/merged.db" "SELECT count(*) FROM experiments")" "1" "one experiment merged"
expect_eq "$(q "$out/merged.db" "SELECT group_concat(seed || ':' || status, ' ') FROM
                                (SELECT * FROM runs ORDER BY seed)")" "1:done 2:done" "merged runs"
rows=$(q "$out/merged.db" "SELECT count(*) FROM epochs")
bash "$SCRIPT" merge "$out" >"$TMP/merge2.out" 2>&1
expect_eq "$?" 0 "exit code of the second merge"
expect_eq "$(q "$out/merged.db" "SELECT count(*) FROM runs")|$(q "$out/merged.db" "SELECT count(*) FROM epochs")" \
    "2|$rows" "merging again changes nothing"
integrity "$out/merged.db"
finish
