# Shared helpers of the `dawnrun run` tests (tests/run_*.sh), sourced by each of them.
# A test script is called as: sh tests/run_NAME.sh DAWNRUN SOURCE_DIR
# It exits 77 (skipped) when $DAWNRUN_DATA is not a directory or sqlite3 is missing.

DR=$1
SRC=$2
case $DR in /*) ;; *) DR=$(pwd)/$DR ;; esac
case $SRC in /*) ;; *) SRC=$(pwd)/$SRC ;; esac
status=0
bg_pids=""
[ -x "$DR" ] || { echo "no dawnrun executable at '$DR'" >&2; exit 1; }
[ -d "${DAWNRUN_DATA:-/nonexistent}" ] || { echo "DAWNRUN_DATA not set: skipped"; exit 77; }
command -v sqlite3 >/dev/null 2>&1 || { echo "sqlite3 (command-line shell) not found: skipped"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dawnrun-run-test.XXXXXX") || exit 1
TINY=$SRC/tests/e2e/tiny.cfg
# a tiny run: one epoch of 10 steps, one thread (so that every run is reproducible)
FAST="--engine cpu --threads 1 --set train.epochs=1 --set data.train_subset=1280 --set data.test_subset=500"
unset DAWNRUN_DB

cleanup() {
    for p in $bg_pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    status=1
}

# q DB SQL: one query, its output
q() {
    sqlite3 "$1" "$2"
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
    [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# expect_grep REGEX FILE WHAT
expect_grep() {
    grep -Eq -- "$1" "$2" || fail "$3: no line matching /$1/ in $2"
}

# wait_for DB SQL VALUE: polls until the query prints VALUE (at most 60 s)
wait_for() {
    i=0
    while [ "$(q "$1" "$2" 2>/dev/null)" != "$3" ]; do
        i=$((i + 1))
        [ $i -gt 1200 ] && return 1
        sleep 0.05
    done
    return 0
}

# integrity DB: PRAGMA integrity_check must say ok
integrity() {
    expect_eq "$(q "$1" 'PRAGMA integrity_check')" "ok" "integrity of $1"
}

# finish: exit with the test's status; on failure first print every captured output
# ($TMP/*.out) in full, so that a log shows what a process said
finish() {
    if [ $status -ne 0 ]; then
        for f in "$TMP"/*.out; do
            [ -f "$f" ] || continue
            echo "== full output of $(basename "$f")" >&2
            cat "$f" >&2
        done
    fi
    if [ $status -eq 0 ]; then echo "ok"; else echo "FAILED" >&2; fi
    exit $status
}
