#!/bin/sh
# SIGINT and SIGTERM stop a batch at the next training step: the run in progress is
# marked interrupted (its error says so), its checkpoint is kept, the exit code is 130 /
# 143, and no other run is started. Running the batch again resumes the interrupted run
# and finishes the rest. With --workers 2 the parent passes SIGTERM on to its workers.
. "$(dirname "$0")/run_lib.sh"

ARGS="$TINY --engine cpu --threads 1 --set train.epochs=6 --set data.train_subset=1280
      --set data.test_subset=500 --seeds 2"

for sig in INT TERM; do
    if [ $sig = INT ]; then code=130; else code=143; fi
    db=$TMP/$sig.db
    "$DR" run $ARGS --db "$db" >"$TMP/$sig.out" 2>&1 &
    pid=$!
    bg_pids="$bg_pids $pid"
    wait_for "$db" "SELECT count(*) FROM epochs" 2 || fail "SIG$sig: two epochs never recorded"
    kill -s $sig $pid
    wait $pid
    rc=$?
    cat "$TMP/$sig.out"
    expect_eq "$rc" "$code" "SIG$sig: exit code"
    expect_eq "$(q "$db" "SELECT seed, status, error LIKE 'stopped by SIG$sig in epoch %' FROM runs
                         ORDER BY seed")" "0|interrupted|1
1|pending|" "SIG$sig: the runs after the signal"
    expect_eq "$(ls "$db-checkpoints" | wc -l)" "1" "SIG$sig: the checkpoint is kept"
    expect_grep 'interrupted: stopped by SIG'$sig "$TMP/$sig.out" "SIG$sig: message"
    integrity "$db"
done

# the interrupted batch, run again, resumes and completes
db=$TMP/TERM.db
"$DR" run $ARGS --db "$db" >"$TMP/again.out" 2>&1
expect_eq "$?" 0 "exit code of the resumed batch"
expect_grep '^resuming after epoch [2-6] from ' "$TMP/again.out" "the interrupted run resumes"
expect_eq "$(q "$db" "SELECT group_concat(status || ':' || attempt, ' ') FROM
                     (SELECT * FROM runs ORDER BY seed)")" "done:2 done:1" "the runs after the rerun"
expect_eq "$(q "$db" "SELECT count(*) FROM epochs")" "12" "every epoch recorded once"

# two worker processes; SIGTERM to the parent reaches both
db=$TMP/workers.db
"$DR" run $ARGS --workers 2 --db "$db" >"$TMP/workers.out" 2>&1 &
pid=$!
bg_pids="$bg_pids $pid"
wait_for "$db" "SELECT count(*) FROM runs WHERE status = 'running' AND
                (SELECT count(*) FROM epochs) > 0" 2 || fail "two workers never ran at once"
kill -s TERM $pid
wait $pid
rc=$?
cat "$TMP/workers.out"
expect_eq "$rc" 143 "exit code of the workers' batch"
expect_eq "$(q "$db" "SELECT count(*), count(DISTINCT pid) FROM runs WHERE status = 'interrupted'
                     AND pid <> $pid")" "2|2" "both workers' runs interrupted"
integrity "$db"
finish
