#!/bin/sh
# Runs a command and checks its exit code and that its combined output matches a regex.
# usage: expect.sh EXIT_CODE REGEX COMMAND [ARGS...]
# With EXPECT_NEEDS_DATA=1 it exits 77 (skipped) when $DAWNRUN_DATA is not a directory.
code=$1; regex=$2; shift 2
if [ "${EXPECT_NEEDS_DATA:-0}" = 1 ] && [ ! -d "${DAWNRUN_DATA:-/nonexistent}" ]; then
    echo "expect.sh: DAWNRUN_DATA not set: skipped"
    exit 77
fi
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out" | tail -n 40
if [ "$rc" -ne "$code" ]; then
    echo "expect.sh: exit code $rc, expected $code: $*" >&2
    exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
    echo "expect.sh: output does not match /$regex/: $*" >&2
    exit 1
fi
exit 0
