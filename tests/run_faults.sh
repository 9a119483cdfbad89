#!/bin/sh
# Faults of the results database at the command line: a read-only database file and a
# database in a read-only directory, a full disk (in the middle of a batch), a damaged
# database, files that are not dawnrun databases, a database locked beyond the busy
# timeout, and SIGKILL in the middle of a batch. Each case checks the exit code, that the
# message names the file, that PRAGMA integrity_check is still ok (or, for a damaged
# file, that it was not touched) and that no row committed before the fault is lost;
# where the fault goes away, running the batch again finishes it with exact counts.
# Read-only and full-disk cases need a private mount namespace (root: unshare -m and a
# read-only bind mount / a small tmpfs); without one, read-only uses chmod (which does
# not stop root, so that sub-case is then skipped, saying why) and the full disk
# `ulimit -f`.
. "$(dirname "$0")/run_lib.sh"

trap 'chmod -R u+w "$TMP" 2>/dev/null; cleanup' EXIT

# Helpers, in a file of their own so that a shell in a private mount namespace (the
# full-disk case) can use them too.
cat >"$TMP/faults_fns.sh" <<'EOF'
q() {
    sqlite3 "$1" "$2"
}

# committed DB: the rows a fault must never take away (finished runs and their epochs),
# one sorted line each
committed() {
    q "$1" "SELECT 'run', id, experiment_id, seed, status, attempt, final_test_acc, ended_at
            FROM runs WHERE status IN ('done', 'diverged', 'failed')
            UNION ALL
            SELECT 'epoch', e.run_id, e.epoch, e.attempt, e.test_acc, e.recorded_at, NULL, NULL
            FROM epochs e JOIN runs r ON r.id = e.run_id
            WHERE r.status IN ('done', 'diverged', 'failed')" | sort
}

# counts DB: runs, done runs, epochs
counts() {
    q "$1" "SELECT (SELECT count(*) FROM runs) || ' runs, ' ||
                   (SELECT count(*) FROM runs WHERE status = 'done') || ' done, ' ||
                   (SELECT count(*) FROM epochs) || ' epochs'"
}

full_try() {   # full_try DIR FREE_KB|LIMIT: one attempt, the exit code in $TMP/full.rc
    db=$1/full.db
    rm -rf "$1"/full.db* "$1/fill"
    cp "$base" "$db"
    if [ $MOUNTS = 1 ]; then
        avail=$(df -Pk "$1" | awk 'NR == 2 { print $4 }')
        [ "$avail" -gt "$2" ] &&
            dd if=/dev/zero of="$1/fill" bs=1024 count=$((avail - $2)) 2>/dev/null
        "$DR" run "$TINY" $FAST --seeds 4 --db "$db" >"$TMP/full.out" 2>&1
    else
        (trap '' XFSZ; ulimit -f "$2"; exec "$DR" run "$TINY" $FAST --seeds 4 --db "$db") \
            >"$TMP/full.out" 2>&1
    fi
    echo $? >"$TMP/full.rc"
}
full_case() {   # full_case DIR SIZES...: tries the sizes until the batch fails, then frees
    d=$1
    shift
    for size in "$@"; do
        full_try "$d" "$size"
        [ "$(cat "$TMP/full.rc")" != 0 ] && break
    done
    committed "$d/full.db" >"$TMP/full.mid"      # what the batch committed before the fault
    counts "$d/full.db" >"$TMP/full.midcounts"
    rm -f "$d/fill"
    "$DR" run "$TINY" $FAST --seeds 4 --db "$d/full.db" >"$TMP/full.again" 2>&1
    echo $? >"$TMP/full.again.rc"
    q "$d/full.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
    cp "$d/full.db" "$TMP/full-after.db"
}
EOF
. "$TMP/faults_fns.sh"

# kept BEFORE_FILE DB WHAT: every committed line of BEFORE_FILE is still in DB, unchanged
kept() {
    committed "$2" >"$TMP/kept.now"
    n=$(comm -23 "$1" "$TMP/kept.now" | wc -l)
    expect_eq "$n" 0 "$3: committed rows still there"
    [ -s "$1" ] || fail "$3: nothing committed to compare (bad setup)"
}

# names FILE OUT WHAT: the message in OUT names FILE
names() {
    grep -qF -- "$1" "$2" || fail "$3: the message does not name $1"
}

# the base database: one finished run (seed 0, one epoch), its WAL folded in
base=$TMP/base.db
"$DR" run "$TINY" $FAST --seeds 1 --db "$base" >"$TMP/base.out" 2>&1 || fail "the base run"
q "$base" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
rm -f "$base-wal" "$base-shm"
committed "$base" >"$TMP/base.rows"
expect_eq "$(counts "$base")" "1 runs, 1 done, 1 epochs" "the base database"

# can this process mount privately? (root with unshare: read-only binds and tmpfs)
mkdir "$TMP/probe"
MOUNTS=0
if [ "${DAWNRUN_TEST_NO_MOUNT:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
   unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs "$1"' sh "$TMP/probe" 2>/dev/null; then
    MOUNTS=1
fi
export TMP DR TINY FAST base MOUNTS   # for the helpers in a private namespace

# ro_exec TARGET CMD...: runs CMD with TARGET (a file or a directory) read-only
ro_exec() {
    target=$1
    shift
    if [ $MOUNTS = 1 ]; then
        unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99
                          shift; exec "$@"' sh "$target" "$@"
    else
        chmod a-w "$target" && "$@"
        rc_=$?
        chmod u+w "$target"
        return $rc_
    fi
}

# ---- a read-only database file, then a database in a read-only directory -----------------
for kind in file dir; do
    mkdir -p "$TMP/ro-$kind"
    db=$TMP/ro-$kind/r.db
    cp "$base" "$db"
    if [ $kind = file ]; then target=$db; else target=$TMP/ro-$kind; fi
    if [ $MOUNTS = 0 ] && [ "$(id -u)" = 0 ]; then
        echo "read-only $kind: skipped (root ignores file permissions, and no private" \
             "mount namespace is available for a read-only mount)"
        continue
    fi
    ro_exec "$target" "$DR" run "$TINY" $FAST --seeds 3 --db "$db" >"$TMP/ro-$kind.out" 2>&1
    rc=$?
    cat "$TMP/ro-$kind.out"
    expect_eq "$rc" 1 "read-only $kind: exit code"
    names "$db" "$TMP/ro-$kind.out" "read-only $kind"
    expect_grep 'readonly|unable to open|permission|Read-only' "$TMP/ro-$kind.out" \
        "read-only $kind: the message says why"
    # reading needs no write access, even in a read-only directory
    ro_exec "$target" "$DR" report --db "$db" >"$TMP/ro-$kind.report" 2>&1
    expect_eq "$?" 0 "read-only $kind: report"
    expect_grep 'runs done / total +1/1' "$TMP/ro-$kind.report" "read-only $kind: the report"
    integrity "$db"
    kept "$TMP/base.rows" "$db" "read-only $kind"
    expect_eq "$(counts "$db")" "1 runs, 1 done, 1 epochs" "read-only $kind: nothing added"
done

# ---- a full disk in the middle of a batch --------------------------------------------------
# The batch (3 more seeds) runs on a copy of the base database with less and less free
# space until the disk fills before it ends: exit 1, the file named, the runs committed
# before intact; with space again, the same command finishes the batch.
mkdir "$TMP/mnt"
if [ $MOUNTS = 1 ]; then
    # everything inside one private namespace: the tmpfs disappears with it
    unshare -m sh -c '
        dir=$1; shift
        mount -t tmpfs -o size=2m tmpfs "$dir" || exit 99
        . "$TMP/faults_fns.sh"
        full_case "$dir" "$@"' sh "$TMP/mnt" 160 120 80 40 0
    full_db=$TMP/mnt/full.db
else
    full_case "$TMP/mnt" 400 200 100 0
    full_db=$TMP/mnt/full.db
fi
cat "$TMP/full.out"
expect_eq "$(cat "$TMP/full.rc")" 1 "full disk: exit code"
names "$full_db" "$TMP/full.out" "full disk"
expect_grep 'disk is full|No space left|File too large|disk I/O error' "$TMP/full.out" \
    "full disk: the message says why"
kept "$TMP/base.rows" "$TMP/full-after.db" "full disk"
kept "$TMP/full.mid" "$TMP/full-after.db" "full disk, rows of the interrupted batch"
echo "full disk: at the fault: $(cat "$TMP/full.midcounts")"
cat "$TMP/full.again"
expect_eq "$(cat "$TMP/full.again.rc")" 0 "full disk: the batch again, with space"
expect_eq "$(counts "$TMP/full-after.db")" "4 runs, 4 done, 4 epochs" \
    "full disk: the batch finished"
integrity "$TMP/full-after.db"

# ---- a damaged database: refused, never touched ---------------------------------------------
db=$TMP/damaged.db
cp "$base" "$db"
page=$(q "$db" "PRAGMA page_size")
root=$(q "$db" "SELECT rootpage FROM sqlite_schema WHERE name = 'runs'")
# overwrite the runs table's page with garbage (the header and schema page stay valid)
awk 'BEGIN { for (i = 0; i < 4096; i++) printf "%c", 65 + (i * 7) % 26 }' |
    dd of="$db" bs="$page" seek=$((root - 1)) count=1 conv=notrunc 2>/dev/null
cp "$db" "$TMP/damaged.orig"
"$DR" run "$TINY" $FAST --seeds 3 --db "$db" >"$TMP/damaged.out" 2>&1
rc=$?
cat "$TMP/damaged.out"
expect_eq "$rc" 1 "damaged: exit code of run"
names "$db" "$TMP/damaged.out" "damaged"
expect_grep 'malformed|damaged' "$TMP/damaged.out" "damaged: the message says why"
"$DR" report --db "$db" >"$TMP/damaged.report" 2>&1
expect_eq "$?" 1 "damaged: exit code of report"
names "$db" "$TMP/damaged.report" "damaged (report)"
cmp -s "$db" "$TMP/damaged.orig" || fail "damaged: the file was changed"

# ---- files that are not dawnrun databases: refused, never touched ----------------------------
printf 'name,acc\nrun1,0.94\n' >"$TMP/text.db"
q "$TMP/other.db" "CREATE TABLE t(x); INSERT INTO t VALUES (42);"
for f in text other; do
    db=$TMP/$f.db
    cp "$db" "$TMP/$f.orig"
    "$DR" run "$TINY" $FAST --seeds 1 --db "$db" >"$TMP/$f.out" 2>&1
    rc=$?
    cat "$TMP/$f.out"
    expect_eq "$rc" 1 "$f file: exit code of run"
    names "$db" "$TMP/$f.out" "$f file"
    expect_grep 'not a database|not a dawnrun results database' "$TMP/$f.out" "$f file: why"
    "$DR" report --db "$db" >"$TMP/$f.report" 2>&1
    expect_eq "$?" 1 "$f file: exit code of report"
    cmp -s "$db" "$TMP/$f.orig" || fail "$f file: the file was changed"
done
expect_eq "$(q "$TMP/other.db" "SELECT x FROM t")" 42 "the other program's data"

# ---- locked beyond the busy timeout (15 s) ---------------------------------------------------
db=$TMP/locked.db
cp "$base" "$db"
mkfifo "$TMP/lock.fifo"
sqlite3 "$db" <"$TMP/lock.fifo" >"$TMP/lock.out" 2>&1 &
holder=$!
bg_pids="$bg_pids $holder"
exec 3>"$TMP/lock.fifo"
echo "BEGIN IMMEDIATE; SELECT 'holding';" >&3
i=0
while ! grep -q holding "$TMP/lock.out" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
grep -q holding "$TMP/lock.out" || fail "locked: the sqlite3 shell never took the lock"
"$DR" report --db "$db" >"$TMP/locked.report" 2>&1   # readers are not blocked (WAL)
expect_eq "$?" 0 "locked: report while the lock is held"
"$DR" run "$TINY" $FAST --seeds 3 --db "$db" >"$TMP/locked.out" 2>&1
rc=$?
echo "ROLLBACK;" >&3
exec 3>&-
wait $holder
cat "$TMP/locked.out"
expect_eq "$rc" 1 "locked: exit code"
names "$db" "$TMP/locked.out" "locked"
expect_grep 'database is locked' "$TMP/locked.out" "locked: the message says why"
integrity "$db"
kept "$TMP/base.rows" "$db" "locked"
expect_eq "$(counts "$db")" "1 runs, 1 done, 1 epochs" "locked: nothing added"
"$DR" run "$TINY" $FAST --seeds 3 --db "$db" >"$TMP/locked.again" 2>&1
expect_eq "$?" 0 "locked: the batch once the lock is gone"
expect_eq "$(counts "$db")" "3 runs, 3 done, 3 epochs" "locked: the batch finished"

# ---- SIGKILL in the middle of a batch -----------------------------------------------------------
# Three seeds of three epochs; the process is killed while seed 1 runs, after seed 0 is
# done. Running the batch again leaves seed 0's rows exactly as they were, redoes seed 1
# (attempt 2) and runs seed 2; every run done, one row per epoch.
ARGS="$TINY --engine cpu --threads 1 --set train.epochs=3 --set data.train_subset=1280
      --set data.test_subset=500 --seeds 3"
killed=0
for try in 1 2 3; do
    db=$TMP/killed$try.db
    "$DR" run $ARGS --db "$db" >"$TMP/killed$try.out" 2>&1 &
    pid=$!
    bg_pids="$bg_pids $pid"
    wait_for "$db" "SELECT count(*) FROM runs r JOIN epochs e ON e.run_id = r.id
                    WHERE r.seed = 1" 1 || fail "seed 1 never recorded an epoch"
    kill -9 $pid
    wait $pid 2>/dev/null
    state=$(q "$db" "SELECT group_concat(seed || ':' || status, ' ') FROM
                     (SELECT * FROM runs ORDER BY seed)")
    if [ "$state" = "0:done 1:running 2:pending" ]; then
        killed=1
        break
    fi
    echo "try $try: killed at '$state'; again"
done
expect_eq "$killed" 1 "a kill while seed 1 runs"
integrity "$db"
committed "$db" >"$TMP/killed.rows"
expect_eq "$(q "$db" "SELECT count(*) FROM epochs e JOIN runs r ON r.id = e.run_id
                     WHERE r.seed = 0")" 3 "seed 0's epochs before the rerun"
"$DR" run $ARGS --db "$db" >"$TMP/killed.again" 2>&1
rc=$?
cat "$TMP/killed.again"
expect_eq "$rc" 0 "SIGKILL: exit code of the rerun"
expect_grep '^e2e-tiny  seed 1  attempt 2' "$TMP/killed.again" "SIGKILL: the killed seed is redone"
if grep -q '^e2e-tiny  seed 0 ' "$TMP/killed.again"; then fail "SIGKILL: seed 0 ran again"; fi
kept "$TMP/killed.rows" "$db" "SIGKILL"
expect_eq "$(q "$db" "SELECT group_concat(seed || ':' || status || ':' || attempt, ' ') FROM
                     (SELECT * FROM runs ORDER BY seed)")" "0:done:1 1:done:2 2:done:1" \
    "SIGKILL: the runs after the rerun"
expect_eq "$(counts "$db")" "3 runs, 3 done, 9 epochs" "SIGKILL: exact counts"
expect_eq "$(q "$db" "SELECT count(*) FROM (SELECT run_id FROM epochs GROUP BY run_id
                     HAVING count(*) = 3 AND min(epoch) = 1 AND max(epoch) = 3)")" 3 \
    "SIGKILL: epochs 1-3 of every run, once each"
integrity "$db"
finish
