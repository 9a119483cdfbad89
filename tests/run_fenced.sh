#!/bin/sh
# Fencing: a worker paused (SIGSTOP) past its lease finds, once continued (SIGCONT), that
# its run was reclaimed by another worker, which resumed it from the checkpoint and
# finished it; the paused worker's late writes are refused, it says so, drops the run
# and exits 0, and the record is the new worker's alone.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/fence.db
ARGS="$TINY --engine cpu --threads 1 --set train.epochs=6 --set data.train_subset=1280
      --set data.test_subset=500 --seed-list 0 --lease 2 --db $db"

"$DR" run $ARGS >"$TMP/a.out" 2>&1 &
a=$!
bg_pids="$bg_pids $a"
wait_for "$db" "SELECT count(*) >= 1 FROM epochs" 1 || fail "worker A recorded no epoch"
i=0
while [ -z "$(ls "$db-checkpoints" 2>/dev/null)" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
kill -STOP $a
# A stopped inside one of its short write transactions (the epoch's row right after the
# checkpoint, a lease renewal) would hold the database's write lock while stopped, and B
# would rightly give up waiting for it: let A finish the transaction and stop it again.
i=0
while ! sqlite3 -cmd ".timeout 0" "$db" "BEGIN IMMEDIATE; ROLLBACK;" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 200 ]; then fail "worker A holds the write lock whenever it is stopped"; break; fi
    kill -CONT $a
    sleep 0.05
    kill -STOP $a
done
stopped_at=$(q "$db" "SELECT max(epoch) FROM epochs")
sleep 3   # A's lease (2 s) runs out while it is stopped

"$DR" run $ARGS >"$TMP/b.out" 2>&1
rc=$?
cat "$TMP/b.out"
expect_eq "$rc" 0 "exit code of worker B"
expect_grep '^e2e-tiny  seed 0  attempt 2' "$TMP/b.out" "B reclaims the run with attempt 2"
expect_grep '^resuming after epoch [1-6] from ' "$TMP/b.out" "B resumes from the checkpoint"
expect_eq "$(q "$db" "SELECT status, attempt FROM runs")" "done|2" "the run after B"

kill -CONT $a
wait $a
rc=$?
cat "$TMP/a.out"
expect_eq "$rc" 0 "exit code of worker A"
expect_grep 'taken over by another worker' "$TMP/a.out" "A notices the takeover"
expect_eq "$(q "$db" "SELECT status, attempt FROM runs")" "done|2" "the run after A woke up"
expect_eq "$(q "$db" "SELECT count(*), sum(attempt = 2) > 0, max(epoch) FROM epochs")" "6|1|6" \
    "one row per epoch, the later ones by attempt 2"
expect_eq "$(q "$db" "SELECT count(*) FROM epochs WHERE attempt = 1 AND epoch > $stopped_at")" "0" \
    "no row from A after it was stopped"
integrity "$db"
finish
