#!/bin/sh
# `dawnrun run` end to end: a two-seed batch registers one experiment with its provenance
# and two runs, prints each run's epoch table and the report, records every epoch; the
# same command again adds and reruns nothing; $DAWNRUN_DB is the default database; a
# --seed-list batch on a database with other pending seeds runs only its own.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/a.db
"$DR" run "$TINY" $FAST --seeds 2 --db "$db" >"$TMP/out1" 2>&1
rc=$?
cat "$TMP/out1"
expect_eq "$rc" 0 "exit code of the batch"
expect_grep '^e2e-tiny  seed 0  attempt 1' "$TMP/out1" "header line of seed 0"
expect_grep '^e2e-tiny  seed 1  attempt 1' "$TMP/out1" "header line of seed 1"
expect_grep '^epoch +lr +train time' "$TMP/out1" "epoch table header"
expect_grep '^ +1 +0\.[0-9]+ ' "$TMP/out1" "epoch table row"
expect_grep 'runs done / total +2/2' "$TMP/out1" "report of the batch"
expect_eq "$(q "$db" "SELECT count(*), min(engine), min(dawnrun_version) <> '', min(git_rev) <> '',
                            min(device) <> '', min(platform) <> '', min(host) <> '',
                            min(length(config_hash)), min(config_text LIKE '%e2e-tiny%')
                     FROM experiments")" "1|cpu|1|1|1|1|1|64|1" "the registered experiment"
expect_eq "$(q "$db" "SELECT group_concat(seed || ':' || status || ':' || attempt, ' ') FROM
                     (SELECT * FROM runs ORDER BY seed)")" "0:done:1 1:done:1" "the runs"
expect_eq "$(q "$db" "SELECT count(*) FROM runs WHERE final_test_acc > 0.1 AND train_time > 0
                     AND total_time >= train_time AND started_at <= ended_at")" "2" "run results"
expect_eq "$(q "$db" "SELECT count(*) FROM epochs WHERE test_acc > 0 AND train_time > 0")" "2" \
    "one epoch row per run"
expect_eq "$(ls "$db-checkpoints" | wc -l)" "0" "checkpoints of finished runs are deleted"

# the same command again: nothing to do, nothing added
"$DR" run "$TINY" $FAST --seeds 2 --db "$db" >"$TMP/out2" 2>&1
expect_eq "$?" 0 "exit code of the rerun"
expect_grep '2 runs in .*: 2 finished, 0 failed, 0 to run' "$TMP/out2" "rerun summary"
if grep -q 'attempt' "$TMP/out2"; then fail "the rerun ran something"; fi
expect_eq "$(q "$db" "SELECT count(*), sum(attempt) FROM runs")" "2|2" "runs after the rerun"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments")" "1" "experiments after the rerun"

# more seeds: only the new one runs
"$DR" run "$TINY" $FAST --seeds 3 --db "$db" >"$TMP/out3" 2>&1
expect_eq "$?" 0 "exit code with a third seed"
expect_grep '^e2e-tiny  seed 2  attempt 1' "$TMP/out3" "the third seed runs"
expect_eq "$(q "$db" "SELECT count(*) FROM runs WHERE status = 'done'")" "3" "three done runs"

# $DAWNRUN_DB; --seed-list claims only its own seeds even when others are pending
DAWNRUN_DB=$TMP/env.db "$DR" run "$TINY" $FAST --seed-list 3 >"$TMP/out4" 2>&1
expect_eq "$?" 0 "exit code with DAWNRUN_DB"
expect_eq "$(q "$TMP/env.db" "SELECT group_concat(seed) FROM runs")" "3" "runs in \$DAWNRUN_DB"
q "$TMP/env.db" "INSERT INTO runs(experiment_id, seed, status, attempt, max_attempts, created_at)
                 SELECT id, 9, 'pending', 0, 3, 0 FROM experiments" ||
    fail "could not add a pending run"
DAWNRUN_DB=$TMP/env.db "$DR" run "$TINY" $FAST --seed-list 4 >"$TMP/out5" 2>&1
expect_eq "$?" 0 "exit code of --seed-list 4"
expect_eq "$(q "$TMP/env.db" "SELECT group_concat(seed || ':' || status, ' ') FROM
                             (SELECT * FROM runs ORDER BY seed)")" "3:done 4:done 9:pending" \
    "a --seed-list batch leaves other seeds alone"
integrity "$db"
integrity "$TMP/env.db"
finish
