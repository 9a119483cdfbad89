#!/bin/sh
# Pins the experiment hash of every shipped config: a refactor of config reading,
# expansion or canonical form must not change an experiment's identity, or results
# recorded before it would no longer be found (or resumed) under the same experiment.
# Each line of tests/vectors/config-hashes.txt is "HASH PATH" (PATH relative to the
# source tree); every configs/**/*.cfg except the net libraries under configs/nets/
# must be listed, and so must the end-to-end test configs under tests/e2e/.
#
# usage: config_hashes.sh DAWNRUN SOURCE_DIR
# With DAWNRUN_HASHES_UPDATE=1 it rewrites the list (only after a deliberate change).
set -u
if [ $# -ne 2 ]; then
    echo "usage: config_hashes.sh DAWNRUN SOURCE_DIR" >&2
    exit 2
fi
dawnrun=$1
src=$2
list=$src/tests/vectors/config-hashes.txt
cd "$src" || exit 1
actual=$(mktemp "${TMPDIR:-/tmp}/hashes.XXXXXX") || exit 1
trap 'rm -f "$actual"' EXIT
status=0
for cfg in $(find configs tests/e2e -name '*.cfg' -not -path 'configs/nets/*' | LC_ALL=C sort); do
    hash=$("$dawnrun" validate "$cfg" | sed -n 's/^experiment hash  *//p')
    if [ -z "$hash" ]; then
        echo "config_hashes: 'dawnrun validate $cfg' printed no hash" >&2
        status=1
        continue
    fi
    echo "$hash $cfg" >>"$actual"
done
if [ "${DAWNRUN_HASHES_UPDATE:-0}" = 1 ]; then
    cp "$actual" "$list"
    echo "config_hashes: wrote $list"
    exit $status
fi
if ! diff -u "$list" "$actual"; then
    echo "config_hashes: an experiment's identity changed (see the diff above)" >&2
    status=1
fi
exit $status
