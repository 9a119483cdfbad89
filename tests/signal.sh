#!/bin/sh
# Starts a command, sends it a signal once it has printed the epoch table header, and
# checks the exit code. usage: signal.sh SIGNAL EXPECTED_CODE COMMAND [ARGS...]
# Exits 77 (skipped) when $DAWNRUN_DATA is not a directory.
sig=$1; code=$2; shift 2
[ -d "${DAWNRUN_DATA:-/nonexistent}" ] || { echo "DAWNRUN_DATA not set: skipped"; exit 77; }
log=$(mktemp)
"$@" >"$log" 2>&1 &
pid=$!
i=0
while ! grep -q "train loss" "$log" && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -s "$sig" $pid
wait $pid
rc=$?
cat "$log"
rm -f "$log"
if [ "$rc" -ne "$code" ]; then
    echo "signal.sh: exit code $rc after SIG$sig, expected $code" >&2
    exit 1
fi
exit 0
