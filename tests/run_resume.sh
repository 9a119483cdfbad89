#!/bin/sh
# A run killed with SIGKILL after its first epoch and resumed by the next `dawnrun run`
# (stale claim: its pid is gone) continues from its checkpoint, and its epochs and final
# numbers are bit-identical to an uninterrupted run (timing columns excepted); a damaged
# checkpoint is reported and the run starts from scratch, with the same numbers again.
. "$(dirname "$0")/run_lib.sh"

ARGS="$TINY --engine cpu --threads 1 --set train.epochs=3 --set data.train_subset=1280
      --set data.test_subset=500 --seed-list 7"
ROWS="SELECT epoch, lr, train_loss, train_acc, test_loss, test_acc FROM epochs ORDER BY epoch"
FINAL="SELECT status, final_test_acc, target_epoch FROM runs"

"$DR" run $ARGS --db "$TMP/straight.db" >"$TMP/straight.out" 2>&1 || fail "the straight run"
expect_eq "$(q "$TMP/straight.db" "SELECT count(*) FROM epochs")" "3" "epochs of the straight run"

# kill after epoch 1 is recorded; if the run got past epoch 2 by then, try again
resumed=0
for try in 1 2 3; do
    db=$TMP/killed$try.db
    "$DR" run $ARGS --db "$db" >"$TMP/killed$try.out" 2>&1 &
    pid=$!
    bg_pids="$bg_pids $pid"
    wait_for "$db" "SELECT count(*) FROM epochs" 1 || fail "epoch 1 never recorded"
    kill -9 $pid
    wait $pid 2>/dev/null
    n=$(q "$db" "SELECT count(*) FROM epochs")
    # a complete checkpoint, not only a temporary file the kill interrupted
    ck=$(ls "$db-checkpoints"/*.ckpt 2>/dev/null | wc -l)
    if [ "$n" -lt 3 ] && [ "$ck" -eq 1 ]; then
        resumed=1
        break
    fi
done
expect_eq "$resumed" 1 "a kill between epoch 1 and the end of the run"
expect_eq "$(q "$db" "SELECT status, attempt FROM runs")" "running|1" "the killed run's row"

"$DR" run $ARGS --db "$db" >"$TMP/resumed.out" 2>&1
rc=$?
cat "$TMP/resumed.out"
expect_eq "$rc" 0 "exit code of the resumed batch"
expect_grep '^e2e-tiny  seed 7  attempt 2' "$TMP/resumed.out" "the stale run is reclaimed"
expect_grep '^resuming after epoch [12] from ' "$TMP/resumed.out" "resumed from the checkpoint"
expect_eq "$(q "$db" "$ROWS")" "$(q "$TMP/straight.db" "$ROWS")" "epoch rows after the resume"
expect_eq "$(q "$db" "$FINAL")" "$(q "$TMP/straight.db" "$FINAL")" "final numbers after the resume"
expect_eq "$(q "$db" "SELECT status, attempt FROM runs")" "done|2" "the resumed run's row"
expect_eq "$(ls "$db-checkpoints" | wc -l)" "0" "the checkpoint (and any temporary leftover) is deleted when the run is done"
integrity "$db"

# --keep-checkpoints keeps it; a damaged one is refused and the run starts from scratch
db=$TMP/damaged.db
"$DR" run $ARGS --db "$db" --keep-checkpoints >"$TMP/keep.out" 2>&1 || fail "the kept run"
ckpt=$(ls "$db-checkpoints"/*.ckpt 2>/dev/null | head -n 1)
[ -n "$ckpt" ] || fail "--keep-checkpoints kept no checkpoint"
q "$db" "UPDATE runs SET status = 'interrupted'" || fail "could not mark the run interrupted"
if [ -n "$ckpt" ]; then
    printf 'garbage' | dd of="$ckpt" bs=1 seek=300 conv=notrunc 2>/dev/null
fi
"$DR" run $ARGS --db "$db" >"$TMP/damaged.out" 2>&1
rc=$?
cat "$TMP/damaged.out"
expect_eq "$rc" 0 "exit code with a damaged checkpoint"
expect_grep 'checkpoint .*seed7\.ckpt: damaged' "$TMP/damaged.out" "the damaged file is named"
expect_grep 'starts from scratch' "$TMP/damaged.out" "the run restarts"
expect_eq "$(q "$db" "$ROWS")" "$(q "$TMP/straight.db" "$ROWS")" "epoch rows after a restart"
expect_eq "$(q "$db" "SELECT status, attempt FROM runs")" "done|2" "the restarted run's row"
integrity "$db"
finish
