#!/bin/sh
# Attempts, progress and retries at the command line, with the test-only crash hook
# DAWNRUN_TEST_CRASH making each invocation SIGKILL itself at the same point:
# - a run killed at a point past its progress each time (between a checkpoint's rename
#   and its record) is resumed however often that happens, and finishes;
# - a run that dies at the same point every time (inside the first checkpoint write, so
#   that it redoes epoch 1 and dies again) is failed after max_attempts (3) attempts in
#   a row without progress, its error saying where; that batch exits 1, and so does a
#   plain rerun, whose line counts the run as failed and nothing as to run;
# - --retry-failed reruns it with a fresh budget and trains it to the end (exit 0);
# - a run held by a live worker elsewhere is counted as "running elsewhere", not "to run",
#   and leaves the exit code 0.
. "$(dirname "$0")/run_lib.sh"

ARGS="$TINY --engine cpu --threads 1 --set data.train_subset=1280 --set data.test_subset=500"
ROWS="SELECT epoch, lr, train_loss, train_acc, test_loss, test_acc FROM epochs ORDER BY epoch"

# advancing: five epochs, killed after each checkpoint's rename (the last epoch writes none)
db=$TMP/advancing.db
for i in 1 2 3 4; do
    DAWNRUN_TEST_CRASH=checkpoint-renamed:1 "$DR" run $ARGS --set train.epochs=5 --seed-list 3 \
        --db "$db" >>"$TMP/advancing.out" 2>&1
    expect_eq "$?" 137 "advancing: invocation $i killed itself"
done
expect_eq "$(q "$db" "SELECT status, attempt, stalls FROM runs")" "running|4|0" \
    "advancing: four kills, no stall"
DAWNRUN_TEST_CRASH=checkpoint-renamed:1 "$DR" run $ARGS --set train.epochs=5 --seed-list 3 \
    --db "$db" >"$TMP/advancing5.out" 2>&1
expect_eq "$?" 0 "advancing: the fifth invocation finishes the run"
expect_grep '^resuming after epoch 4 from ' "$TMP/advancing5.out" "advancing: resumed at epoch 4"
expect_eq "$(q "$db" "SELECT r.status, r.attempt, count(e.epoch) FROM runs r JOIN epochs e ON
                      e.run_id = r.id")" "done|5|5" "advancing: done after five attempts"
"$DR" run $ARGS --set train.epochs=5 --seed-list 3 --db "$TMP/straight.db" >/dev/null 2>&1 ||
    fail "the straight run"
expect_eq "$(q "$db" "$ROWS")" "$(q "$TMP/straight.db" "$ROWS")" "advancing: epochs as a straight run"
integrity "$db"

# stalled: every invocation redoes epoch 1 and dies inside the checkpoint write after it
db=$TMP/stalled.db
ONE="$ARGS --set train.epochs=3 --seed-list 5 --db $db"
for i in 1 2 3 4; do
    DAWNRUN_TEST_CRASH=checkpoint-written:1 "$DR" run $ONE >>"$TMP/stalled.out" 2>&1
    expect_eq "$?" 137 "stalled: invocation $i killed itself"
done
expect_eq "$(q "$db" "SELECT status, attempt, stalls FROM runs")" "running|4|2" \
    "stalled: the first kill was progress, the next two were not"
DAWNRUN_TEST_CRASH=checkpoint-written:1 "$DR" run $ONE >"$TMP/stalled5.out" 2>&1
rc=$?
cat "$TMP/stalled5.out"
expect_eq "$rc" 1 "stalled: exit code once the run is failed"
expect_grep '1 run in .*: 0 finished, 1 failed \(rerun with --retry-failed\), 0 to run' \
    "$TMP/stalled5.out" "stalled: the batch line counts it failed, not to run"
expect_grep 'the batch ends with 1 of its 1 run unfinished \(1 failed, 0 not run\)' \
    "$TMP/stalled5.out" "stalled: the command says what is left"
expect_eq "$(q "$db" "SELECT status, attempt, stalls FROM runs")" "failed|4|3" \
    "stalled: failed after three attempts in a row without progress"
expect_eq "$(q "$db" "SELECT error FROM runs")" \
    "$(q "$db" "SELECT 'abandoned: 3 attempts in a row stopped at the same point without progress: last seen in epoch 1 at step 10, with 1 epoch recorded and no checkpoint (last: attempt 4, host ' || host || ', pid ' || pid || ')' FROM runs")" \
    "stalled: the error says where it kept dying"
"$DR" runs e2e-tiny --db "$db" >"$TMP/runs.out" 2>&1 || fail "runs of the stalled batch"
expect_grep '^[0-9]+ +5 +failed +4 +3/3 ' "$TMP/runs.out" "stalled: runs shows attempts and stalls"
run_id=$(q "$db" "SELECT id FROM runs")
"$DR" show "$run_id" --db "$db" >"$TMP/show.out" 2>&1 || fail "show of the stalled run"
expect_grep 'failed, attempt 4, 3 stalls in a row \(fails at 3\)' "$TMP/show.out" \
    "stalled: show says the attempts and stalls"
"$DR" run $ONE >"$TMP/plain.out" 2>&1
expect_eq "$?" 1 "stalled: a plain rerun leaves it failed and exits 1"
expect_grep '0 finished, 1 failed \(rerun with --retry-failed\), 0 to run' "$TMP/plain.out" \
    "stalled: the plain rerun's line"

# --retry-failed: requeued with a fresh budget and trained to the end
"$DR" run $ONE --retry-failed >"$TMP/retry.out" 2>&1
rc=$?
cat "$TMP/retry.out"
expect_eq "$rc" 0 "retry: exit code"
expect_grep '0 finished, 1 failed \(requeued by --retry-failed\), 1 to run' "$TMP/retry.out" \
    "retry: the batch line"
expect_grep '^e2e-tiny  seed 5  attempt 5' "$TMP/retry.out" "retry: the failed run is claimed"
expect_eq "$(q "$db" "SELECT status, stalls, count(e.epoch) FROM runs r JOIN epochs e ON
                      e.run_id = r.id")" "done|0|3" "retry: trained to the end"
expect_eq "$(ls -A "$db-checkpoints")" "" "retry: no checkpoint or temporary file left"
integrity "$db"

# a run a live worker holds elsewhere is neither to run nor unfinished
db=$TMP/elsewhere.db
"$DR" run $ARGS --set train.epochs=1 --seed-list 0 --db "$db" >/dev/null 2>&1 ||
    fail "elsewhere: the first seed"
q "$db" "INSERT INTO runs(experiment_id, seed, status, attempt, host, pid, lease_expires,
         created_at) SELECT 1, 1, 'running', 1, 'another-host', 1, now + 600, now
         FROM (SELECT (julianday('now') - 2440587.5) * 86400.0 AS now)" ||
    fail "elsewhere: could not give seed 1 to a worker on another host"
"$DR" run $ARGS --set train.epochs=1 --seed-list 0,1 --db "$db" >"$TMP/elsewhere.out" 2>&1
rc=$?
cat "$TMP/elsewhere.out"
expect_eq "$rc" 0 "elsewhere: exit code"
expect_grep '2 runs in .*: 1 finished, 0 failed, 1 running elsewhere, 0 to run' \
    "$TMP/elsewhere.out" "elsewhere: the batch line"
expect_eq "$(q "$db" "SELECT group_concat(status, ' ') FROM (SELECT * FROM runs ORDER BY seed)")" \
    "done running" "elsewhere: the held run is left to its owner"
finish
