#!/bin/sh
# Failures: an engine error during a run (out of memory, forced with a memory limit) marks
# that run failed with its error and the batch goes on; failed runs are rerun only with
# --retry-failed (once per command, with a fresh budget), and a batch left with failed runs
# exits 1; three failures in a row stop the worker; a diverging run is recorded as
# diverged; bad flags, a bad config and missing data fail the command before anything is
# registered (exit 2, 3, 4, no database file).
. "$(dirname "$0")/run_lib.sh"

# eval.batch_size=10000 allocates ~4 GB of activations: beyond a 2 GB address-space limit
# (in a sanitizer build, whose shadow memory needs a huge address space, the allocator's
# own limit does it instead: any single block over 512 MB fails as malloc returning NULL)
BIG="--set eval.batch_size=10000"
limit_memory() {
    if [ -n "${DAWNRUN_SANITIZE:-}" ]; then
        ASAN_OPTIONS="${ASAN_OPTIONS:-}:allocator_may_return_null=1:max_allocation_size_mb=512"
        export ASAN_OPTIONS
    else
        ulimit -v 2000000
    fi
}
db=$TMP/oom.db
(limit_memory && exec "$DR" run "$TINY" $FAST --seeds 1 --sweep eval.batch_size=0,10000 \
    --db "$db") >"$TMP/oom.out" 2>&1
rc=$?
cat "$TMP/oom.out"
expect_eq "$rc" 1 "exit code of a batch with a failed run"
expect_eq "$(q "$db" "SELECT group_concat(status || ':' || attempt || ':' || coalesce(error, ''), ' | ')
                     FROM (SELECT r.* FROM runs r ORDER BY experiment_id)")" \
    "done:1: | failed:1:out of memory while setting up the run" "the runs after an engine failure"
expect_grep 'runs done / total +1/1 +0/1' "$TMP/oom.out" "the report shows both experiments"

# again without --retry-failed: nothing runs, and the exit says the batch is unfinished;
# with it, the failed run is run once more (a fresh budget, not a loop)
(limit_memory && exec "$DR" run "$TINY" $FAST --seeds 1 --sweep eval.batch_size=0,10000 \
    --db "$db") >"$TMP/again.out" 2>&1
expect_eq "$?" 1 "exit code of the rerun without --retry-failed (a run is left failed)"
expect_grep 'the batch ends with 1 of its 2 runs unfinished \(1 failed, 0 not run\)' \
    "$TMP/again.out" "the rerun says what is left"
expect_grep '1 finished, 1 failed \(rerun with --retry-failed\), 0 to run' "$TMP/again.out" \
    "the rerun's summary"
(limit_memory && exec "$DR" run "$TINY" $FAST --seeds 1 --sweep eval.batch_size=0,10000 \
    --db "$db" --retry-failed) >"$TMP/retry.out" 2>&1
expect_eq "$?" 1 "exit code of the retry"
expect_grep '1 finished, 1 failed \(requeued by --retry-failed\), 1 to run' "$TMP/retry.out" \
    "the retry's summary"
expect_eq "$(q "$db" "SELECT status, attempt FROM runs WHERE experiment_id = 2")" "failed|2" \
    "the failed run was run once more"
expect_eq "$(q "$db" "SELECT status, attempt FROM runs WHERE experiment_id = 1")" "done|1" \
    "the done run was left alone"
integrity "$db"

# three failures in a row stop the worker
db=$TMP/three.db
(limit_memory && exec "$DR" run "$TINY" $FAST $BIG --seeds 4 --db "$db") >"$TMP/three.out" 2>&1
expect_eq "$?" 1 "exit code after three failures in a row"
expect_grep '3 runs in a row failed' "$TMP/three.out" "the worker says why it stops"
expect_eq "$(q "$db" "SELECT group_concat(status, ' ') FROM (SELECT * FROM runs ORDER BY seed)")" \
    "failed failed failed pending" "the fourth run is left for later"

# a diverging run is recorded as such and the batch goes on
db=$TMP/diverged.db
"$DR" run "$TINY" $FAST --seeds 2 --set "train.lr_schedule.values=(0.0, 1e9, 0.0)" \
    --db "$db" >"$TMP/diverged.out" 2>&1
expect_eq "$?" 0 "exit code of a batch with diverged runs"
expect_eq "$(q "$db" "SELECT group_concat(status || ':' || (error LIKE 'the loss diverged%'), ' ')
                     FROM (SELECT * FROM runs ORDER BY seed)")" "diverged:1 diverged:1" \
    "both runs diverged and the batch went on"
integrity "$db"

# bad input: nothing is registered, not even the database file
nodb=$TMP/none.db
"$DR" run "$TINY" --seeds 0 --db "$nodb" >/dev/null 2>&1
expect_eq "$?" 2 "--seeds 0"
"$DR" run "$TINY" --seeds 2 --seed-list 1 --db "$nodb" >/dev/null 2>&1
expect_eq "$?" 2 "--seeds with --seed-list"
"$DR" run "$TINY" --seed-list 1,x --db "$nodb" >/dev/null 2>&1
expect_eq "$?" 2 "a bad --seed-list"
"$DR" run "$TINY" --devices 0,1 --engine cpu --db "$nodb" >/dev/null 2>&1
expect_eq "$?" 2 "--devices with the cpu engine"
"$DR" run "$TINY" --lease 0 --db "$nodb" >/dev/null 2>&1
expect_eq "$?" 2 "--lease 0"
"$DR" run "$TINY" --frobnicate --db "$nodb" >/dev/null 2>&1
expect_eq "$?" 2 "an unknown flag"
"$DR" run --db "$nodb" >"$TMP/usage.out" 2>&1
expect_eq "$?" 2 "no config"
expect_grep '^usage: dawnrun run CONFIG' "$TMP/usage.out" "the usage line"
"$DR" run "$TINY" $FAST --set train.momentum=7 --db "$nodb" >"$TMP/cfg.out" 2>&1
expect_eq "$?" 3 "a bad config"
expect_grep 'momentum' "$TMP/cfg.out" "the config error is named"
"$DR" run "$TMP/missing.cfg" --db "$nodb" >/dev/null 2>&1
expect_eq "$?" 3 "a missing config"
"$DR" run "$TINY" $FAST "$TMP/missing.cfg" --db "$nodb" >/dev/null 2>&1
expect_eq "$?" 3 "a good config and a missing one"
"$DR" run "$TINY" $FAST --set train.batch_size=5000 --db "$nodb" >"$TMP/batch.out" 2>&1
expect_eq "$?" 3 "a batch larger than the training set"
mkdir "$TMP/empty"
DAWNRUN_DATA=$TMP/empty "$DR" run "$TINY" $FAST --db "$nodb" >"$TMP/data.out" 2>&1
expect_eq "$?" 4 "missing data"
expect_grep 'data_batch_1.bin' "$TMP/data.out" "the missing file is named"
[ -e "$nodb" ] && fail "bad input created the database"
finish
