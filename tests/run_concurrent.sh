#!/bin/sh
# Three `dawnrun run` processes started at the same instant on one brand-new database
# with the same batch split its seeds: every seed is run exactly once (one header line in
# all the outputs together, attempt 1, one row per epoch), none is lost, and every
# process exits 0. Then `--workers 2` splits a batch between two forked workers.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/shared.db
gate=$TMP/gate
mkfifo "$gate" || fail "mkfifo"
pids=""
for w in 1 2 3; do
    # each waits at the gate (the fifo's writer end closing) so that all start at once
    sh -c 'read x <"$1"; shift; exec "$@"' sh "$gate" \
        "$DR" run "$TINY" $FAST --seeds 6 --db "$db" >"$TMP/w$w.out" 2>&1 &
    pids="$pids $!"
done
bg_pids="$bg_pids $pids"
sleep 0.2
: >"$gate"   # open and close the writer end: every reader gets EOF and starts
for p in $pids; do
    wait "$p" || fail "worker process $p exited with $?"
done
cat "$TMP"/w*.out | grep -E 'seed [0-9]+  attempt|^batch' || true

for s in 0 1 2 3 4 5; do
    n=$(cat "$TMP"/w*.out | grep -c "^e2e-tiny  seed $s  attempt")
    expect_eq "$n" 1 "seed $s runs once over all processes"
done
expect_eq "$(q "$db" "SELECT count(*), sum(status = 'done'), sum(attempt), count(DISTINCT seed)
                     FROM runs")" "6|6|6|6" "the runs"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments")" "1" "one experiment"
expect_eq "$(q "$db" "SELECT count(*), count(DISTINCT run_id) FROM epochs")" "6|6" "the epochs"
integrity "$db"

# forked workers on one batch
db=$TMP/workers.db
"$DR" run "$TINY" $FAST --seeds 4 --workers 2 --db "$db" >"$TMP/workers.out" 2>&1
rc=$?
cat "$TMP/workers.out"
expect_eq "$rc" 0 "exit code with --workers 2"
expect_grep '^\[w0\] e2e-tiny  seed' "$TMP/workers.out" "worker 0's lines are prefixed"
expect_grep '^\[w1\] e2e-tiny  seed' "$TMP/workers.out" "worker 1's lines are prefixed"
expect_grep 'runs done / total +4/4' "$TMP/workers.out" "the parent's report"
expect_eq "$(q "$db" "SELECT count(*), sum(status = 'done'), sum(attempt), count(DISTINCT pid)
                     FROM runs")" "4|4|4|2" "runs of the two workers"
expect_eq "$(q "$db" "SELECT device FROM experiments")" \
    "$(q "$db" "SELECT device FROM experiments WHERE device LIKE '%CPU%'")" "device recorded"
integrity "$db"
finish
