#!/bin/sh
# Golden test of a config error message: runs `dawnrun validate [ARGS] NAME.cfg` inside
# DIR (so that the paths in the messages are relative and stable), and compares what it
# writes to stderr with NAME.expected. The command must also fail (non-zero exit).
# ARGS come from an optional first line of the config, "# args: --set k=v ...", split on
# blanks without globbing.
#
# usage: golden.sh DAWNRUN DIR NAME
# With DAWNRUN_GOLDEN_UPDATE=1 it rewrites NAME.expected from the current output.
set -f
if [ $# -ne 3 ]; then
    echo "usage: golden.sh DAWNRUN DIR NAME" >&2
    exit 2
fi
dawnrun=$1
dir=$2
name=$3
cd "$dir" || exit 1
if [ ! -f "$name.cfg" ]; then
    echo "golden: no $dir/$name.cfg" >&2
    exit 1
fi
args=$(sed -n '1s/^# args: //p' "$name.cfg")
actual=$(mktemp "${TMPDIR:-/tmp}/golden.XXXXXX") || exit 1
trap 'rm -f "$actual"' EXIT

"$dawnrun" validate $args "$name.cfg" >/dev/null 2>"$actual"
rc=$?

if [ "${DAWNRUN_GOLDEN_UPDATE:-0}" = 1 ]; then
    cp "$actual" "$name.expected"
    echo "golden: wrote $dir/$name.expected (exit $rc)"
    exit 0
fi
status=0
if [ $rc -eq 0 ]; then
    echo "golden $name: expected a non-zero exit, got 0" >&2
    status=1
fi
if ! diff -u "$name.expected" "$actual"; then
    echo "golden $name: stderr differs from $name.expected (exit $rc)" >&2
    status=1
fi
exit $status
