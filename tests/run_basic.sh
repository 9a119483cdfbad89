#!/bin/sh
# `dawnrun run` end to end: a two-seed batch registers one experiment with its provenance
# and two runs, prints each run's epoch table and the report, records every epoch; the
# same command again adds and reruns nothing; $DAWNRUN_DB is the default database; a
# --seed-list batch on a database with other pending seeds runs only its own; the hit rate
# and its interval in experiment_summary equal the report's.
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
# the hit rate and its interval: experiment_summary (binomial_ci, written as the runs
# finished) says what the report computes, in its CSV and in its sentence
hdb=$TMP/hits.db
"$DR" run "$TINY" $FAST --set target_accuracy=0.17 --seeds 3 --db "$hdb" >"$TMP/out6" 2>&1
expect_eq "$?" 0 "exit code of the batch with target 17 %"
expect_eq "$(q "$hdb" "SELECT count(*) FROM binomial_ci WHERE n = 3")" "4" \
    "binomial_ci rows of the finished count"
view=$(q "$hdb" "SELECT hits, finished, printf('%.15g %.15g %.15g', hit_rate, hit_ci_lo,
                        hit_ci_hi) FROM experiment_summary")
"$DR" report --db "$hdb" --format csv >"$TMP/hits.csv" 2>&1
expect_eq "$?" 0 "exit code of report --format csv"
csv=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
               { printf "%s|%s|%.15g %.15g %.15g\n", $col["hits"], $col["finished"],
                 $col["hit_rate"], $col["hit_ci95_lo"], $col["hit_ci95_hi"] }' "$TMP/hits.csv")
expect_eq "$csv" "$view" "the report's hit rate and interval against experiment_summary"
case $view in "|"*|*"|0|"*) fail "no finished runs in the summary: '$view'" ;; esac
sentence=$(q "$hdb" "SELECT printf('%d/%d runs reach 17 %% (%.0f %%, 95 %% CI %.0f–%.0f %%)',
                            hits, finished, 100 * hit_rate, 100 * hit_ci_lo, 100 * hit_ci_hi)
                     FROM experiment_summary")
expect_grep "^e2e-tiny: $(printf '%s' "$sentence" | sed 's/[().]/\\&/g')," "$TMP/out6" \
    "the batch's sentence, from the view's figures"

integrity "$db"
integrity "$TMP/env.db"
integrity "$hdb"
finish
