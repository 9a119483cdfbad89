#!/bin/sh
# A 4-seed batch whose `dawnrun run` is SIGKILLed twelve times, then run once more
# normally, ends as if it had never been killed: every seed done exactly once, every
# epoch's numbers identical to an unkilled reference batch (the CPU engine is
# deterministic), the database intact and no checkpoint or temporary file left. The kills
# are of two kinds, in a fixed order: at a random instant after the invocation made
# progress (or soon after its start), with delays drawn by awk from a fixed seed, and
# at an exact point through the test-only hook DAWNRUN_TEST_CRASH (inside an epoch's
# commit, after it, inside a checkpoint write, between a checkpoint's rename and its
# record, after a run's end is recorded). Some run is killed more often than
# max_attempts (3): the kills it survives are the ones after which it had progressed.
. "$(dirname "$0")/run_lib.sh"

ARGS="$TINY --engine cpu --threads 1 --set train.epochs=4 --set data.train_subset=1280
      --set data.test_subset=500 --seeds 4"
ROWS="SELECT r.seed, e.epoch, e.lr, e.train_loss, e.train_acc, e.test_loss, e.test_acc
      FROM epochs e JOIN runs r ON r.id = e.run_id ORDER BY r.seed, e.epoch"
FINAL="SELECT seed, status, final_test_acc, target_epoch FROM runs ORDER BY seed"
# the batch's progress as the store holds it: epochs recorded, checkpoints recorded, runs done
PROGRESS="SELECT (SELECT count(*) FROM epochs) + (SELECT coalesce(sum(checkpoint_epoch), 0)
          FROM runs) + (SELECT count(*) FROM runs WHERE status = 'done')"

t0=$(date +%s%N)
"$DR" run $ARGS --db "$TMP/ref.db" >"$TMP/ref.out" 2>&1 || fail "the reference batch"
t1=$(date +%s%N)
expect_eq "$(q "$TMP/ref.db" "SELECT count(*) FROM epochs")" "16" "epochs of the reference"

db=$TMP/killed.db
progress() {
    q "$db" "$PROGRESS" 2>/dev/null || echo 0
}

# random kill number k (delay from the list): after progress, or early when $2 = early
random_kill() {
    delay=$(sed -n "$1p" "$TMP/delays")
    before=$(progress)
    "$DR" run $ARGS --db "$db" >>"$TMP/killed.out" 2>&1 &
    pid=$!
    bg_pids="$bg_pids $pid"
    if [ "$2" != early ]; then
        i=0
        while [ "$(progress)" -le "$before" ] && kill -0 $pid 2>/dev/null && [ $i -lt 1200 ]; do
            sleep 0.05
            i=$((i + 1))
        done
    fi
    sleep "$delay"
    kill -9 $pid 2>/dev/null
    wait $pid
    rc=$?
}

# a kill by the process itself at crash point $1 (NAME:N)
point_kill() {
    DAWNRUN_TEST_CRASH=$1 "$DR" run $ARGS --db "$db" >>"$TMP/killed.out" 2>&1
    rc=$?
}

# delays up to one epoch's share of the reference batch's wall time, so that the kills
# spread over the batch on a fast machine as on a slow one
awk -v t0="$t0" -v t1="$t1" 'BEGIN { srand(20261201); epoch = (t1 - t0) / 1e9 / 16;
    for (i = 0; i < 12; i++) printf "%.2f\n", rand() * epoch }' >"$TMP/delays"
kills=0
k=0
for kind in random epoch-commit:2 random checkpoint-written:2 early epoch-committed:2 \
            random checkpoint-renamed:1 random run-finished:1 early random; do
    k=$((k + 1))
    case $kind in
        random) random_kill $k ;;
        early) random_kill $k early ;;
        *) point_kill $kind ;;
    esac
    echo "kill $k ($kind): exit $rc, progress $(progress)"
    [ "$rc" -eq 137 ] && kills=$((kills + 1))
done
[ "$kills" -ge 10 ] || fail "only $kills of 12 invocations were killed (the batch ended too soon)"
[ "$(q "$db" "SELECT count(*) FROM runs WHERE status = 'done'")" -lt 4 ] ||
    fail "nothing was left for the rerun"
[ "$(q "$db" "SELECT max(attempt) FROM runs")" -gt 3 ] ||
    fail "no run was killed more often than max_attempts (3)"

# one plain rerun finishes the rest
"$DR" run $ARGS --db "$db" >"$TMP/rerun.out" 2>&1
rc=$?
cat "$TMP/rerun.out"
expect_eq "$rc" 0 "exit code of the rerun"
expect_eq "$(q "$db" "SELECT count(*), sum(status = 'done') FROM runs")" "4|4" "every seed done"
expect_eq "$(q "$db" "$ROWS")" "$(q "$TMP/ref.db" "$ROWS")" "epoch rows against the reference"
expect_eq "$(q "$db" "$FINAL")" "$(q "$TMP/ref.db" "$FINAL")" "final numbers against the reference"
# done once: the attempt that finished each run wrote its last epoch, and nothing after
expect_eq "$(q "$db" "SELECT count(*) FROM runs r WHERE attempt =
                      (SELECT max(attempt) FROM epochs e WHERE e.run_id = r.id)")" "4" \
    "each run's last attempt is the one that finished it"
expect_eq "$(q "$db" "SELECT count(*) FROM runs WHERE error LIKE 'abandoned%'")" "0" \
    "no run was abandoned"
integrity "$db"
left=$(ls -A "$db-checkpoints" 2>/dev/null)
expect_eq "$left" "" "checkpoint files left"

# and once more: nothing to do
"$DR" run $ARGS --db "$db" >"$TMP/again.out" 2>&1
expect_eq "$?" 0 "exit code of a rerun of a finished batch"
expect_grep '4 runs in .*: 4 finished, 0 failed, 0 to run' "$TMP/again.out" "nothing left"
grep -q ' attempt [0-9]' "$TMP/again.out" && fail "a finished run was trained again"
expect_eq "$(q "$db" "$ROWS")" "$(q "$TMP/ref.db" "$ROWS")" "epoch rows after the last rerun"
if [ $status -ne 0 ]; then tail -n 60 "$TMP/killed.out"; fi
finish
