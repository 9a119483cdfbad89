#!/bin/sh
# Messages to the user name the user's files and flags, never dawnrun's source files:
# "file.c:123:" appears only with DAWNRUN_DEBUG=1. On a terminal, a message printed while
# the progress line is drawn starts on a line of its own.
#
# usage: messages.sh errors|signal DAWNRUN SOURCE_DIR
#   errors  a damaged database, an unwritable output file and a bad flag (no data needed)
#   signal  SIGINT during `train` and `run`, stdout a terminal (util-linux `script`);
#           exits 77 (skipped) when $DAWNRUN_DATA is not a directory
mode=$1; dr=$2; src=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dawnrun-messages.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# check NAME FILE REGEX: FILE must match the extended regex REGEX.
check() {
    if ! grep -Eq -- "$3" "$2"; then
        echo "messages.sh: $1: output does not match /$3/:" >&2
        cat "$2" >&2
        fail=1
    fi
}
# no_location NAME FILE: FILE holds no source location "something.c:LINE" (nor .cu).
no_location() {
    if grep -Eq '[A-Za-z0-9_]\.(c|cu|h):[0-9]+' "$2"; then
        echo "messages.sh: $1: a source location without DAWNRUN_DEBUG:" >&2
        cat "$2" >&2
        fail=1
    fi
}
# expect_rc NAME GOT WANTED
expect_rc() {
    if [ "$2" -ne "$3" ]; then
        echo "messages.sh: $1: exit code $2, expected $3" >&2
        fail=1
    fi
}

case $mode in
errors)
    head -c 4096 /dev/zero | tr '\0' 'x' >"$tmp/damaged.db"
    sqlite3 "$tmp/ok.db" <"$src/schemas/results.sql" || exit 1
    for debug in 0 1; do
        out=$tmp/db-$debug.txt
        DAWNRUN_DEBUG=$debug "$dr" report --db "$tmp/damaged.db" >"$out" 2>&1
        expect_rc "damaged db (DAWNRUN_DEBUG=$debug)" $? 1
        check "damaged db" "$out" "^dawnrun: .*damaged\.db: file is not a database"
        out=$tmp/export-$debug.txt
        DAWNRUN_DEBUG=$debug "$dr" export --db "$tmp/ok.db" --format json \
            -o "$tmp/no-such-dir/runs.json" >"$out" 2>&1
        expect_rc "unwritable output (DAWNRUN_DEBUG=$debug)" $? 1
        check "unwritable output" "$out" "no-such-dir/runs\.json: cannot write"
        out=$tmp/flag-$debug.txt
        DAWNRUN_DEBUG=$debug "$dr" report --db "$tmp/ok.db" --bogus >"$out" 2>&1
        expect_rc "bad flag (DAWNRUN_DEBUG=$debug)" $? 2
        check "bad flag" "$out" "unknown flag '--bogus'"
        no_location "bad flag" "$out"
    done
    no_location "damaged db" "$tmp/db-0.txt"
    no_location "unwritable output" "$tmp/export-0.txt"
    check "damaged db, DAWNRUN_DEBUG=1" "$tmp/db-1.txt" \
        "^dawnrun: [^ ]*results/results_[a-z]+\.c:[0-9]+: sqlite: "
    check "unwritable output, DAWNRUN_DEBUG=1" "$tmp/export-1.txt" \
        "^dawnrun: [^ ]*runner/cli/output\.c:[0-9]+: .*cannot write"
    ;;
signal)
    [ -d "${DAWNRUN_DATA:-/nonexistent}" ] || { echo "DAWNRUN_DATA not set: skipped"; exit 77; }
    command -v script >/dev/null || { echo "no util-linux script: skipped"; exit 77; }
    cfg=$src/tests/e2e/tiny.cfg
    # interrupt NAME DEBUG COMMAND...: runs COMMAND with stdout and stderr on a terminal,
    # sends SIGINT while its progress line is drawn, leaves the output in $tmp/NAME.txt
    # with carriage returns as line ends (what the terminal shows, line by line).
    interrupt() {
        name=$1; debug=$2; shift 2
        log=$tmp/$name.log
        rm -f "$tmp/pid"
        DAWNRUN_DEBUG=$debug script -qfec "echo \$\$ >'$tmp/pid'; exec $*" "$log" \
            >/dev/null 2>&1 </dev/null &
        spid=$!
        i=0
        while ! grep -Eq '\] [0-9]+/[0-9]+' "$log" 2>/dev/null && [ $i -lt 600 ]; do
            sleep 0.1; i=$((i + 1))
        done
        if [ -s "$tmp/pid" ]; then
            kill -s INT "$(cat "$tmp/pid")"
        else
            echo "messages.sh: $name: the command did not start" >&2
            kill $spid
        fi
        wait $spid
        rc=$?
        tr '\r' '\n' <"$log" >"$tmp/$name.txt"
        cat "$tmp/$name.txt"
        expect_rc "$name" $rc 130
    }
    interrupt train 0 "$dr" train "$cfg" --engine cpu --set train.epochs=50
    check "train" "$tmp/train.txt" "^dawnrun: stopped by a signal at epoch 1 step [0-9]+$"
    no_location "train" "$tmp/train.txt"
    interrupt run 0 "$dr" run "$cfg" --engine cpu --set train.epochs=50 --db "$tmp/r.db" \
        --seeds 1
    check "run" "$tmp/run.txt" "^dawnrun: stopped by a signal at epoch 1 step [0-9]+$"
    no_location "run" "$tmp/run.txt"
    interrupt train-debug 1 "$dr" train "$cfg" --engine cpu --set train.epochs=50
    check "train, DAWNRUN_DEBUG=1" "$tmp/train-debug.txt" \
        "^dawnrun: [^ ]*engine/core/train\.c:[0-9]+: stopped by a signal at epoch 1"
    ;;
*)
    echo "usage: messages.sh errors|signal DAWNRUN SOURCE_DIR" >&2
    exit 2
    ;;
esac
exit $fail
